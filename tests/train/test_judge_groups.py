"""NoMIRACL as groups: a query's label says that one of its passages answers it (or none does), not which. Each
query gives the closest sentence of each of its closest passages, all under the query's label, and the loss reads
the group's highest logit; groups are batched whole."""

from __future__ import annotations

import argparse
import math
import random

import jax.numpy as jnp
import numpy as np
import pytest

from train.judge import data
from train.judge.__main__ import sizes_for
from train.judge.batches import batches, unit_batch
from train.judge.model import unit_loss

ROW = {"query_id": "7#0", "lang": "ko", "should_answer": True, "query": "Who founded the Osaka shipping company?",
       "passages": [
           {"docid": "1", "title": "Rail", "text": "Trains run hourly. The line opened in 1901."},
           {"docid": "2", "title": "Osaka Shipping", "text": "It carries freight. The Osaka shipping company was "
                                                              "founded by Tanaka. It grew fast."},
           {"docid": "3", "title": "Empty", "text": "   "},
           {"docid": "4", "title": "Ports", "text": "Osaka is a port. Shipping from Osaka is busy."},
       ]}


def _group(size: int, **row: object) -> list[data.Example]:
    return data.nomiracl_group({**ROW, **row}, size)


@pytest.mark.parametrize(("size", "candidates"), [
    (1, ["The Osaka shipping company was founded by Tanaka."]),
    (2, ["The Osaka shipping company was founded by Tanaka.", "Shipping from Osaka is busy."]),
    # one sentence a passage, never more; a passage without text gives none
    (9, ["The Osaka shipping company was founded by Tanaka.", "Shipping from Osaka is busy.", "The line opened in 1901."]),
])
def test_a_group_holds_the_closest_sentence_of_each_of_the_closest_passages(size: int, candidates: list[str]) -> None:
    group = _group(size)
    assert [e.pair.candidate for e in group] == candidates
    assert {e.pair.question for e in group} == {ROW["query"]}


def test_a_candidate_carries_its_passage_s_title_and_previous_sentence() -> None:
    (best,) = _group(1)
    assert (best.pair.title, best.pair.previous) == ("Osaka Shipping", "It carries freight.")


@pytest.mark.parametrize(("should_answer", "label", "kind"), [(True, 1.0, "relevant"), (False, 0.0, "non-relevant")])
def test_every_pair_of_a_group_has_the_query_s_label_and_one_group_key(should_answer: bool, label: float,
                                                                      kind: str) -> None:
    group = _group(3, should_answer=should_answer)
    assert {e.label for e in group} == {label}
    assert {e.group for e in group} == {f"ko/{kind}/7#0"}
    assert {e.origin for e in group} == {f"nomiracl-more/group-{kind}"}


def _bce(logit: float, label: float) -> float:
    """Binary cross-entropy of a logit, written out in plain Python: a reference that shares no code with the loss."""
    probability = 1 / (1 + math.exp(-logit))
    return -(label * math.log(probability) + (1 - label) * math.log(1 - probability))


@pytest.mark.parametrize(("z", "segment", "labels", "real", "expected"), [
    # two pairs alone: the mean of their own losses
    ([2.0, -1.0], [0, 1], [1.0, 0.0], [True, True], (_bce(2.0, 1.0) + _bce(-1.0, 0.0)) / 2),
    # a group of three answers by its best candidate: the others do not count
    ([-4.0, 3.0, -2.0], [0, 0, 0], [1.0], [True], _bce(3.0, 1.0)),
    # an abstaining group is as wrong as its most confident candidate
    ([-4.0, 3.0, -2.0], [0, 0, 0], [0.0], [True], _bce(3.0, 0.0)),
    # a padding row (its own unit, not real) changes nothing, however large its logit
    ([1.0, 50.0], [0, 1], [1.0, 0.0], [True, False], _bce(1.0, 1.0)),
])
def test_the_loss_reads_each_unit_at_its_highest_logit(z: list[float], segment: list[int], labels: list[float],
                                                      real: list[bool], expected: float) -> None:
    loss = unit_loss(jnp.asarray(z), jnp.asarray(segment), jnp.asarray(labels), jnp.asarray(real))
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_batches_hold_whole_groups_within_their_size_and_every_unit_once() -> None:
    rng = np.random.default_rng(3)
    units = [np.array([i]) for i in range(40)] + [np.arange(40 + 6 * g, 46 + 6 * g) for g in range(10)]
    lengths = rng.integers(10, 120, 100)
    batched = batches(lengths, units, 8, rng)
    assert sorted(u for b in batched for u in b) == list(range(len(units)))
    labels = np.arange(100, dtype=np.float32)
    for chosen in batched:
        rows, segment, unit_labels, real = unit_batch(units, chosen, labels, 8)
        assert len(rows) <= 8 and real.sum() == len(chosen)
        # each row's unit is the one it came from; padding rows go to the unit that is never read
        for row, unit in zip(rows, segment):
            assert row in units[chosen[unit]] and unit_labels[unit] == labels[units[chosen[unit]][0]]
        assert set(segment[len(rows):]) <= {8} and not real[8]


def _shape(pairs: list[data.Example]) -> tuple[int, int, int]:
    """Per language (the same in each): non-relevant queries given as negatives, relevant and non-relevant groups."""
    by_language: dict[str, list[set[str]]] = {}
    for e in pairs:
        kinds = by_language.setdefault(e.language, [set(), set(), set()])
        if e.group:
            kinds[1 if e.label else 2].add(e.group)
        else:
            assert e.origin == "nomiracl-more/non-relevant" and e.label == 0.0
            kinds[0].add(e.pair.question)
    shapes = {tuple(len(k) for k in kinds) for kinds in by_language.values()}
    assert len(by_language) == 9 and len(shapes) == 1  # the nine languages, each alike
    return shapes.pop()


@pytest.mark.parametrize(("groups", "beside", "shape"), [
    (0, None, (3, 0, 0)),  # negatives only (the recipe of the judges before judge-b03d3076: --nomiracl all)
    (4, None, (0, 3, 3)),  # groups in place of the negatives, as many queries of each subset
    (4, 1, (3, 1, 1)),  # the negatives kept, and groups of one query of each subset beside them
])
def test_nomiracl_gives_negatives_groups_or_both(groups: int, beside: int | None,
                                                 shape: tuple[int, int, int]) -> None:
    assert _shape(data.nomiracl_pairs(random.Random(5), 3, groups, beside)) == shape


def test_no_nomiracl_queries_give_the_judge_no_pairs_in_its_languages() -> None:
    # --nomiracl 0, the shipped recipe: the nine languages are met only through e5's transfer (docs/benchmarks.md
    # says why: negatives alone taught the judge that they never answer)
    assert data.nomiracl_pairs(random.Random(5), 0) == []
    assert data.nomiracl_pairs(random.Random(5), 0, groups=4, beside=0) == []


# (the flags given, NoMIRACL-more queries a language and subset: None is every one)
@pytest.mark.parametrize(("flags", "queries"), [
    ({}, 0),  # the shipped recipe
    ({"nomiracl": 3}, 3),
    ({"nomiracl": None}, None),  # --nomiracl all: the recipe before judge-b03d3076
    ({"nomiracl_groups": 6}, None),  # the group recipes, as they were measured: their cards' commands still hold
    ({"nomiracl_groups": 6, "nomiracl": 80}, 80),
])
def test_nomiracl_more_is_left_out_unless_asked_for_or_read_as_groups(flags: dict[str, object],
                                                                      queries: int | None) -> None:
    # as argparse leaves them: --nomiracl is absent from the namespace unless given
    args = argparse.Namespace(**{"tiny": False, "squad": 9000, "jaquad": 9000, "nomiracl_groups": 0, **flags})
    assert sizes_for(args).nomiracl == queries
