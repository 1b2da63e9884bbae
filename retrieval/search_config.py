"""How hybrid search is weighted and limited; built from settings, passed to the store."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SearchConfig:
    limit: int = 40
    # alpha per query language: 0 is pure BM25, 1 pure vector. Unknown languages use "en".
    alpha: dict[str, float] = field(default_factory=lambda: {"en": 0.5, "ja": 0.5, "ru": 0.5})

    def alpha_for(self, language: str) -> float:
        return self.alpha.get(language, self.alpha.get("en", 0.5))
