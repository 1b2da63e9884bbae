"""Ranking metrics over document ids (binary relevance), as BEIR and the baselines compute them."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np


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


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Area under the ROC curve (Mann-Whitney U), ties counted as half."""
    values = np.asarray(scores, dtype=float)
    positive = np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):  # average rank over each run of equal scores
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start : stop + 1]] = (start + stop) / 2 + 1
        start = stop + 1
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def purity(predicted: Sequence[int], gold: Sequence[str]) -> float:
    """Share of items whose group's most common gold topic is their own (1.0 for all singletons: read with ARI)."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold labels")
    if not gold:
        return float("nan")
    groups: dict[int, Counter[str]] = {}
    for group, topic in zip(predicted, gold, strict=True):
        groups.setdefault(group, Counter())[topic] += 1
    return sum(counts.most_common(1)[0][1] for counts in groups.values()) / len(gold)


def adjusted_rand_index(predicted: Sequence[int], gold: Sequence[str]) -> float:
    """Hubert and Arabie's adjusted Rand index: 1 for the same partition, about 0 for a random one."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold labels")
    n = len(gold)
    if n < 2:
        return 1.0
    pairs = Counter(zip(predicted, gold, strict=True))
    rows, columns = Counter(predicted), Counter(gold)

    def choose2(k: int) -> float:
        return k * (k - 1) / 2

    index = sum(choose2(k) for k in pairs.values())
    row_sum, column_sum = sum(choose2(k) for k in rows.values()), sum(choose2(k) for k in columns.values())
    expected = row_sum * column_sum / choose2(n)
    maximum = (row_sum + column_sum) / 2
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)
