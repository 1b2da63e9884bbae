"""How hybrid search is weighted and limited; built from settings, passed to the store."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Tuning:
    """Measured defaults for one embedder, per query language: hybrid alpha and the local reranker's weight on
    each chunk's best-matching sentence (retrieval.rerank.LocalReranker)."""

    alpha: Mapping[str, float]
    sentence_weight: Mapping[str, float]


# Measured on the shared data (bench/retrieval.py, docs/benchmarks.md "Retrieval"): each embedder's best hybrid
# alpha per language, and the sentence weight that beat plain hybrid search at that alpha. Cohere Embed could
# not be measured here (no network) and takes e5's.
TUNING: Mapping[str, Tuning] = {
    "e5": Tuning(alpha={"en": 0.5, "ja": 0.4, "ru": 0.6}, sentence_weight={"en": 0.35, "ja": 0.5, "ru": 0.35}),
    "use": Tuning(alpha={"en": 0.3, "ja": 0.2, "ru": 0.4}, sentence_weight={"en": 0.2, "ja": 0.35, "ru": 0.2}),
}


def tuning_for(embedder: str) -> Tuning:
    """By the embedder setting ("e5", "use", "cohere") or an embedder's recorded name ("use-multilingual-v3")."""
    return TUNING.get(embedder.split("-")[0], TUNING["e5"])


@dataclass(frozen=True, slots=True)
class SearchConfig:
    limit: int = 40
    # alpha per query language: 0 is pure BM25, 1 pure vector. Unknown languages use "en".
    alpha: Mapping[str, float] = field(default_factory=lambda: dict(TUNING["e5"].alpha))

    def alpha_for(self, language: str) -> float:
        return self.alpha.get(language, self.alpha["en"])
