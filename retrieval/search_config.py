"""How hybrid search is weighted and limited; built from settings, passed to the store."""

from __future__ import annotations

from dataclasses import dataclass, field

# Measured on the shared data (bench/retrieval.py, docs/benchmarks.md): the best hybrid alpha per query language.
DEFAULT_ALPHA = {"en": 0.5, "ja": 0.4, "ru": 0.6}
# ... and the local reranker's weight on each chunk's best-matching sentence (retrieval.rerank.LocalReranker).
DEFAULT_SENTENCE_WEIGHT = {"en": 0.35, "ja": 0.5, "ru": 0.35}


@dataclass(frozen=True, slots=True)
class SearchConfig:
    limit: int = 40
    # alpha per query language: 0 is pure BM25, 1 pure vector. Unknown languages use "en".
    alpha: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_ALPHA))

    def alpha_for(self, language: str) -> float:
        return self.alpha.get(language, self.alpha.get("en", DEFAULT_ALPHA["en"]))
