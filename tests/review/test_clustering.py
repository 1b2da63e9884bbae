"""Grouping question vectors into topics: average linkage on cosine similarity, the same groups every run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bot.review.clustering import cluster


def unit(degrees: float) -> list[float]:
    """A 2-d unit vector at this angle: cosine similarity between two of them is cos(the angle between)."""
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


@pytest.mark.parametrize(
    ("angles", "threshold", "expected"),
    [
        pytest.param([], 0.9, [], id="no questions, no groups"),
        pytest.param([0], 0.9, [0], id="one question is one group"),
        pytest.param([0, 5, 90, 93], 0.9, [0, 0, 1, 1], id="two tight pairs far apart"),
        pytest.param([90, 0, 93, 5], 0.9, [0, 1, 0, 1], id="groups are numbered by first appearance"),
        pytest.param([0, 5, 90, 93], 0.0, [0, 0, 0, 0], id="a threshold of 0 joins all that are at most 90° apart"),
        pytest.param([0, 5, 90, 93], 0.9999, [0, 1, 2, 3], id="a threshold near 1 leaves every question alone"),
        # Single linkage would chain 0-20-40-60 into one group (neighbours are 20° apart, cos 0.94); average
        # linkage stops when the groups' mean similarity falls under the threshold.
        pytest.param([0, 20, 40, 60], 0.9, [0, 0, 1, 1], id="average linkage does not chain"),
        pytest.param([0, 0, 0], 0.99, [0, 0, 0], id="identical questions are one group"),
    ],
)
def test_cluster_groups_questions_by_average_similarity(angles: list[float], threshold: float,
                                                       expected: list[int]) -> None:
    vectors = np.array([unit(a) for a in angles], dtype=np.float32).reshape(len(angles), 2)
    assert cluster(vectors, threshold) == expected


def test_a_question_without_a_vector_stays_alone() -> None:
    """A zero vector (an empty question) is similar to nothing, instead of dividing by zero."""
    vectors = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.01]])
    assert cluster(vectors, 0.5) == [0, 1, 0]


def test_lengths_do_not_matter_only_directions() -> None:
    vectors = np.array([[1.0, 0.0], [30.0, 1.0], [0.0, 0.2]])
    assert cluster(vectors, 0.9) == [0, 0, 1]


def test_the_same_vectors_give_the_same_groups_every_time() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(60, 16))
    first = cluster(vectors, 0.2)
    assert all(cluster(vectors.copy(), 0.2) == first for _ in range(3))
    assert 1 < len(set(first)) < 60
