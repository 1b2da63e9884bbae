"""What the desk and `review show` say of the judge: each sentence it read, most probable first, with whether
it was quoted — read from the exchange's route, whatever older or damaged routes hold."""

from __future__ import annotations

import pytest

from bot.review.judged import JudgedLine, judge_heading, judged_lines
from storage.records import CitationRecord


def citation(quote: str, chunk_id: str = "c1", kept: bool = True) -> CitationRecord:
    return CitationRecord(position=1, label="S1", claim=quote, exact_quote=quote, document_id="d", chunk_id=chunk_id,
                          kept=kept)


ROUTE = {"judge": "judge-1", "judged": [
    {"chunk_id": "c1", "label": "S1", "start": 0, "end": 20, "text": "Links last 60 minutes.", "probability": 0.42},
    {"chunk_id": "c2", "label": "S2", "start": 5, "end": 30, "text": "Reset from the sign-in page.", "probability": 0.91},
]}


@pytest.mark.parametrize(("route", "citations", "expected"), [
    pytest.param(ROUTE, [citation("Reset from the sign-in page. Then sign in.", "c2")],
                 [JudgedLine(0.91, "S2", "Reset from the sign-in page.", True),
                  JudgedLine(0.42, "S1", "Links last 60 minutes.", False)], id="most-probable-first-quoted-marked"),
    pytest.param(ROUTE, [citation("Reset from the sign-in page.", "c2", kept=False)],
                 [JudgedLine(0.91, "S2", "Reset from the sign-in page.", False),
                  JudgedLine(0.42, "S1", "Links last 60 minutes.", False)], id="a-rejected-quote-is-not-quoted"),
    pytest.param({"embedder": "e5-small-q4"}, [], [], id="no-judge"),
    pytest.param({"judged": "not a list"}, [], [], id="damaged"),
    pytest.param({"judged": [7, {"text": "x", "probability": 0.5}]}, [], [JudgedLine(0.5, "", "x", False)],
                 id="odd-items-skipped"),
])
def test_the_judge_s_candidates_as_the_desk_lists_them(route, citations, expected) -> None:
    assert judged_lines(route, citations) == expected


@pytest.mark.parametrize(("route", "heading"), [(ROUTE, "Judge (judge-1)"), ({}, "Judge")])
def test_the_heading_names_the_judge_s_version(route, heading) -> None:
    assert judge_heading(route) == heading
