"""Ranking metrics over document ids (binary relevance), as BEIR and the baselines compute them."""

from __future__ import annotations

import math
from collections.abc import Sequence


def ndcg_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


def hit_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    return 1.0 if set(ranked[:k]) & gold else 0.0


def mrr_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    for i, doc in enumerate(ranked[:k]):
        if doc in gold:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def dedupe_documents(chunk_document_ids: Sequence[str]) -> list[str]:
    """Chunks ranked -> documents ranked by their best chunk."""
    return list(dict.fromkeys(chunk_document_ids))
