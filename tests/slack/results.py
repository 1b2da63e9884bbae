"""Answer results built by hand, for rendering tests: no store, no model, fixed ids."""

from __future__ import annotations

from bot.answer.service import AnswerResult, Question, Route
from bot.answer.types import (
    Answered,
    Claim,
    NoSupport,
    NoSupportReason,
    Outcome,
    Source,
    VerifiedQuote,
)
from retrieval.chunks import Chunk


def chunk(text: str, *, n: int = 1, title: str = "Refund policy", section: str | None = "Eligibility",
          page: int | None = None, version: str | None = "2026-09",
          url: str | None = "https://docs.example.com/billing/refunds", language: str = "en") -> Chunk:
    return Chunk(chunk_id=f"00000000-0000-4000-8000-{n:012d}", document_id=f"doc-{n}", version=version,
                 content_hash="hash", ordinal=0, title=title, section=section, page=page, url=url, updated_at=None,
                 visibility=None, language=language, text=text)


def source(n: int, text: str, **kwargs: object) -> Source:
    return Source(label=f"S{n}", chunk=chunk(text, n=n, **kwargs), search_rank=n, search_score=1.0 / n)  # type: ignore[arg-type]


def quote(src: Source, text: str) -> VerifiedQuote:
    start = src.chunk.text.index(text)
    return VerifiedQuote(src, start, start + len(text))


def result(outcome: Outcome, *, language: str = "en", question: str = "Question?",
           sources: tuple[Source, ...] = ()) -> AnswerResult:
    return AnswerResult(question=Question(question), query=question, language=language, outcome=outcome,
                        retrieved=(), sources=sources, best_sentences=(), evidence=None, evidence_probability=None,
                        route=Route("e5-small-q4", "local", "extractive"), timings_ms={"total": 12.0})


def answered(claims: list[tuple[str, list[VerifiedQuote]]], **kwargs: object) -> AnswerResult:
    return result(Answered(tuple(Claim(text, tuple(quotes)) for text, quotes in claims)), **kwargs)  # type: ignore[arg-type]


def no_support(nearest: tuple[Source, ...], reason: NoSupportReason = NoSupportReason.LOW_EVIDENCE,
               **kwargs: object) -> AnswerResult:
    return result(NoSupport(reason, nearest), sources=nearest, **kwargs)  # type: ignore[arg-type]
