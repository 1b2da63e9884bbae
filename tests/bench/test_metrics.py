"""The clustering scores bench/gaps.py reports: purity and the adjusted Rand index, by hand-checked cases."""

from __future__ import annotations

import pytest

from bench.metrics import adjusted_rand_index, purity


@pytest.mark.parametrize(
    ("predicted", "gold", "expected_purity", "expected_ari"),
    [
        pytest.param([0, 0, 1, 1], ["a", "a", "b", "b"], 1.0, 1.0, id="the topics exactly"),
        pytest.param([5, 5, 2, 2], ["a", "a", "b", "b"], 1.0, 1.0, id="group numbers do not matter"),
        pytest.param([0, 1, 2, 3], ["a", "a", "b", "b"], 1.0, 0.0, id="all singletons: purity 1, ARI 0"),
        pytest.param([0, 0, 0, 0], ["a", "a", "b", "b"], 0.5, 0.0, id="one group: ARI 0"),
        # Contingency [[2,1],[0,3]] (n=6): index C(2,2)+C(3,2) = 4; rows 3+3 = 6; columns C(2,2)+C(4,2) = 7;
        # expected 6*7/15 = 2.8; max (6+7)/2 = 6.5: ARI (4-2.8)/(6.5-2.8) = 12/37.
        pytest.param([0, 0, 0, 1, 1, 1], ["a", "a", "b", "b", "b", "b"], 5 / 6, 12 / 37, id="worked example"),
    ],
)
def test_purity_and_ari(predicted: list[int], gold: list[str], expected_purity: float, expected_ari: float) -> None:
    assert purity(predicted, gold) == pytest.approx(expected_purity)
    assert adjusted_rand_index(predicted, gold) == pytest.approx(expected_ari)


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="2 predictions for 1 gold labels"):
        purity([0, 1], ["a"])
