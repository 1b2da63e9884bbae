"""Grouping question vectors into topics: average-linkage agglomerative clustering on cosine similarity. Pure.

Rules:

- Vectors are compared by cosine similarity (each row is normalised here; a zero row stays alone).
- The two groups with the highest average pairwise similarity are merged, again and again, while that
  similarity is at least `threshold`. Average linkage: one odd question does not chain two topics together
  (single linkage would), and a topic is not split because its two ends differ (complete linkage would).
- Ties go to the lowest (row, column) pair, so the same rows in the same order always give the same groups.
  Callers fix the order (the desk sorts questions by time, then id).
- Group numbers follow first appearance: group 0 holds row 0, the next new group is 1, and so on.

O(n²) memory and about n merges of O(n²) work each in numpy: a few thousand questions at most, which is more
than a month of no-support questions. The threshold is measured by `bench/gaps.py` (docs/benchmarks.md).
"""

from __future__ import annotations

import numpy as np

# Chosen by bench/gaps.py on the tuning half of the articles, paragraphs as true topics (e5 query vectors);
# see docs/benchmarks.md.
DEFAULT_THRESHOLD = 0.85


def cluster(vectors: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """The group number of each row of `vectors` (shape n × d), numbered by first appearance."""
    count = len(vectors)
    if count == 0:
        return []
    rows = np.asarray(vectors, dtype=np.float64).reshape(count, -1)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    similarity = rows @ rows.T
    np.fill_diagonal(similarity, -np.inf)
    similarity[np.all(rows == 0, axis=1), :] = -np.inf
    similarity[:, np.all(rows == 0, axis=1)] = -np.inf
    sizes = np.ones(count)
    owner = list(range(count))  # the surviving row that stands for each row's group
    alive = np.ones(count, dtype=bool)
    while True:
        best = int(np.argmax(similarity))  # first maximum in row-major order: the lowest pair wins a tie
        keep, gone = divmod(best, count)
        if not similarity[keep, gone] >= threshold:
            break
        keep, gone = min(keep, gone), max(keep, gone)
        merged = (sizes[keep] * similarity[keep] + sizes[gone] * similarity[gone]) / (sizes[keep] + sizes[gone])
        merged[~alive] = -np.inf
        merged[keep] = -np.inf
        similarity[keep, :] = merged
        similarity[:, keep] = merged
        similarity[gone, :] = -np.inf
        similarity[:, gone] = -np.inf
        sizes[keep] += sizes[gone]
        alive[gone] = False
        owner = [keep if group == gone else group for group in owner]
    numbers: dict[int, int] = {}
    return [numbers.setdefault(group, len(numbers)) for group in owner]
