"""Coverage gaps: the no-support questions grouped into topics, for the people who write the documents. Pure.

Rules:

- The questions are ordered by (asked at, exchange id) before anything else, so the same log gives the same
  topics, labels and examples every time (`clustering.cluster` numbers groups by that order).
- A topic's people are the distinct Slack users who asked; a question with no user (CLI, API) counts as one
  person of its own. Topics are sorted by people, then questions, then the most recent question, then label.
- Examples: up to `examples` distinct question texts, most recent first.
- Nearest fragments: the chunks the bot retrieved for the topic's questions, the chunk found for the most
  questions first (then its best rank, then its id); each with how many questions found it.
- Trend: first and last asked, and the questions in the 7 days before `now` against the 7 days before those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.review.topic_terms import (
    LABEL_TERMS,
    Term,
    question_terms,
    telling_terms,
    topic_label,
)
from storage.records import ExchangeRecord

EXAMPLES = 3
FRAGMENTS = 3
WEEK = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class GapQuestion:
    """One no-support question as the gaps report needs it."""

    exchange_id: str
    asked_at: datetime
    text: str
    user_id: str | None
    channel_id: str | None
    language: str | None
    retrieved: tuple[tuple[str, str, str | None, int], ...] = ()  # (chunk id, document id, title, rank)


@dataclass(frozen=True, slots=True)
class Fragment:
    """A chunk the bot found nearest for a topic's questions, though it did not support an answer."""

    chunk_id: str
    document_id: str
    title: str | None
    questions: int  # how many of the topic's questions retrieved it
    best_rank: int


@dataclass(frozen=True, slots=True)
class Trend:
    first_asked: datetime
    last_asked: datetime
    last_7_days: int
    previous_7_days: int


@dataclass(frozen=True, slots=True)
class Topic:
    label: str
    terms: tuple[str, ...]
    questions: int
    people: int
    examples: tuple[str, ...]
    exchange_ids: tuple[str, ...]  # newest first
    fragments: tuple[Fragment, ...]
    trend: Trend


def gap_question(record: ExchangeRecord) -> GapQuestion:
    """The part of a logged exchange the gaps report reads."""
    return GapQuestion(
        exchange_id=record.id, asked_at=record.created_at, text=record.question, user_id=record.user_id,
        channel_id=record.channel_id, language=record.language,
        retrieved=tuple((chunk.chunk_id, chunk.document_id, chunk.title, chunk.rank) for chunk in record.retrieved),
    )


def in_order(questions: Sequence[GapQuestion]) -> list[GapQuestion]:
    """The order clustering sees: oldest first, ties by exchange id."""
    return sorted(questions, key=lambda question: (question.asked_at, question.exchange_id))


def build_topics(questions: Sequence[GapQuestion], groups: Sequence[int], *, now: datetime,
                 examples: int = EXAMPLES, fragments: int = FRAGMENTS) -> list[Topic]:
    """Topics from questions (in `in_order`) and their group numbers (`clustering.cluster`), most people first."""
    if len(questions) != len(groups):
        raise ValueError(f"{len(questions)} questions but {len(groups)} group numbers")
    terms = [question_terms(question.text, question.language) for question in questions]
    members: dict[int, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    topics = [
        _topic([questions[i] for i in rows], [terms[i] for i in rows], terms, now=now, examples=examples,
               fragments=fragments)
        for rows in members.values()
    ]
    return sorted(topics, key=lambda topic: (-topic.people, -topic.questions, -topic.trend.last_asked.timestamp(),
                                             topic.label))


def _topic(questions: list[GapQuestion], terms: list[list[Term]], everywhere: list[list[Term]], *, now: datetime,
           examples: int, fragments: int) -> Topic:
    newest = sorted(questions, key=lambda question: (question.asked_at, question.exchange_id), reverse=True)
    shown: list[str] = []
    for question in newest:
        text = " ".join(question.text.split())
        if text and text not in shown and len(shown) < examples:
            shown.append(text)
    people = {question.user_id or f"exchange:{question.exchange_id}" for question in questions}
    label = topic_label(terms, everywhere, fallback=shown[0] if shown else "(empty question)")
    telling = tuple(telling_terms(terms, everywhere)[:LABEL_TERMS])
    return Topic(
        label=label, terms=telling, questions=len(questions), people=len(people), examples=tuple(shown),
        exchange_ids=tuple(question.exchange_id for question in newest),
        fragments=nearest_fragments(questions, fragments), trend=trend(questions, now=now),
    )


def nearest_fragments(questions: Sequence[GapQuestion], limit: int = FRAGMENTS) -> tuple[Fragment, ...]:
    """The chunks retrieved for the most of these questions (then best rank, then chunk id)."""
    found: Counter[str] = Counter()
    best: dict[str, tuple[int, str, str | None]] = {}
    for question in questions:
        for chunk_id in {chunk[0] for chunk in question.retrieved}:
            found[chunk_id] += 1
        for chunk_id, document_id, title, rank in question.retrieved:
            if chunk_id not in best or rank < best[chunk_id][0]:
                best[chunk_id] = (rank, document_id, title)
    ordered = sorted(found, key=lambda chunk_id: (-found[chunk_id], best[chunk_id][0], chunk_id))[:limit]
    return tuple(Fragment(chunk_id=chunk_id, document_id=best[chunk_id][1], title=best[chunk_id][2],
                          questions=found[chunk_id], best_rank=best[chunk_id][0]) for chunk_id in ordered)


def trend(questions: Sequence[GapQuestion], *, now: datetime) -> Trend:
    """First and last asked; questions in [now - 7 days, now] against [now - 14 days, now - 7 days)."""
    times = sorted(question.asked_at for question in questions)
    return Trend(
        first_asked=times[0], last_asked=times[-1],
        last_7_days=sum(1 for t in times if now - WEEK <= t <= now),
        previous_7_days=sum(1 for t in times if now - 2 * WEEK <= t < now - WEEK),
    )


def topic_to_json(topic: Topic) -> dict[str, Any]:
    """One topic as `review gaps --json` prints it (the shape is documented in the README)."""
    return {
        "label": topic.label, "terms": list(topic.terms), "questions": topic.questions, "people": topic.people,
        "examples": list(topic.examples), "exchange_ids": list(topic.exchange_ids),
        "nearest": [{"chunk_id": f.chunk_id, "document_id": f.document_id, "title": f.title,
                     "questions": f.questions, "best_rank": f.best_rank} for f in topic.fragments],
        "trend": {"first_asked": topic.trend.first_asked.isoformat(), "last_asked": topic.trend.last_asked.isoformat(),
                  "last_7_days": topic.trend.last_7_days, "previous_7_days": topic.trend.previous_7_days},
    }


@dataclass(frozen=True, slots=True)
class GapsReport:
    """What `review gaps` and the /gaps page show: the window, how many no-support questions, their topics."""

    since: datetime | None
    channel_id: str | None
    now: datetime
    questions: int
    threshold: float
    topics: tuple[Topic, ...]


def report_to_json(report: GapsReport) -> dict[str, Any]:
    """The whole `review gaps --json` object."""
    return {
        "since": report.since.isoformat() if report.since else None, "channel": report.channel_id,
        "now": report.now.isoformat(), "questions": report.questions, "threshold": report.threshold,
        "topics": [topic_to_json(topic) for topic in report.topics],
    }
