"""Rows of ``bench.answers`` for tests: one harvested question each, with what the decision reads."""

from __future__ import annotations

from bench import data
from bench.answering import Judged
from bench.answers import Row
from bot.answer.service import AnswerResult, Route
from bot.answer.types import NoSupport, NoSupportReason, Question
from tests.answer.builders import source


def row(should_answer: bool, right: bool, has_span: bool, *, language: str = "en", split: str = "report",
        thread: bool = False, features: list[float] | None = None) -> Row:
    """A question that should not be answered is asked with its paragraph removed; its quote holds no answer."""
    src = source("S1", "The reset link is valid for 60 minutes.", title="Help", section="FAQ")
    result = AnswerResult(Question("q"), "q", language, NoSupport(NoSupportReason.LOW_EVIDENCE, (src,)), (), (src,),
                          (), None, None, Route("e5", "local", "extractive"), {"total": 1.0})
    query = data.Query("q", "q", frozenset({src.chunk.document_id}), ("60 minutes",), should_answer)
    return Row("xquad-en", "xquad-en", split, language, thread, features or [], True, should_answer, right, has_span,
               Judged(query, result, not should_answer))
