"""The figures bench.answers reports for a group of questions at a threshold, the issue's goals among them: the
answer span is counted two ways, as a share of the answerable questions (bounded by the share answered right) and
as a share of those answered (the goal's "the quote holds the gold answer span of answered questions")."""

from __future__ import annotations

import math

import pytest

from bench.answers import Point, point, spans
from tests.bench.builders import row


# (should answer, right, holds the span, probability): three answerable questions and two that are not.
GROUP = [(True, True, True, 0.9), (True, True, False, 0.8), (True, True, True, 0.1), (False, False, False, 0.9),
         (False, False, False, 0.1)]
NAN = float("nan")


@pytest.mark.parametrize(("threshold", "expected"), [
    # answered right, abstained, precision, span of answerable, span of answered
    (0.5, (2 / 3, 1 / 2, 2 / 3, 1 / 3, 1 / 2)),
    (0.85, (1 / 3, 1 / 2, 1 / 2, 1 / 3, 1.0)),
    (0.95, (0.0, 1.0, NAN, 0.0, NAN)),  # nothing answered: no precision, no span of the answered
])
def test_a_groups_figures_at_a_threshold(threshold: float, expected: tuple[float, ...]) -> None:
    rows = [row(*r[:3]) for r in GROUP]
    p = point(rows, [r[3] for r in GROUP], threshold)
    got = (p.answered_right, p.abstained, p.precision, p.span_right, p.span_of_answered)
    for g, e in zip(got, expected, strict=True):
        assert (math.isnan(g) and math.isnan(e)) or g == pytest.approx(e)


@pytest.mark.parametrize(("span_right", "span_of_answered", "cell"), [
    (0.714, 0.927, "0.714 / 0.927"),
    (0.0, NAN, "0.000 / -"),  # answerable questions, none answered
    (NAN, NAN, "-"),  # a set without answer spans (NoMIRACL, threads)
])
def test_the_span_cell_shows_both_shares(span_right: float, span_of_answered: float, cell: str) -> None:
    assert spans(Point(0.5, 0.5, 0.5, span_right, span_of_answered, 0.5)) == cell
