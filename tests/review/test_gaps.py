"""Topics from grouped no-support questions: who asked, examples, nearest fragments, trend, order. Pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.review.gaps import (
    GapQuestion,
    build_topics,
    in_order,
    nearest_fragments,
    topic_to_json,
    trend,
)

NOW = datetime(2026, 3, 30, 12, 0, tzinfo=UTC)


def q(n: int, text: str, *, user: str | None = "U1", days_ago: float = 1, chunks: tuple[str, ...] = ()) -> GapQuestion:
    return GapQuestion(
        exchange_id=f"00000000-0000-4000-8000-{n:012d}", asked_at=NOW - timedelta(days=days_ago), text=text,
        user_id=user, channel_id="C1", language="en",
        retrieved=tuple((chunk, f"doc-{chunk}", f"Title {chunk}", rank) for rank, chunk in enumerate(chunks, 1)),
    )


def test_topics_are_sorted_by_people_then_questions() -> None:
    questions = [
        q(1, "How do I set up SSO?", user="U1"), q(2, "SSO login fails", user="U1"), q(3, "SSO for guests?", user="U1"),
        q(4, "Refund for annual plans?", user="U2"), q(5, "Refund after 30 days?", user="U3"),
        q(6, "Where is the SLA?", user=None), q(7, "SLA uptime?", user=None),
    ]
    topics = build_topics(questions, [0, 0, 0, 1, 1, 2, 2], now=NOW)
    # Refunds: 2 people; the SLA: 2 questions without a user, each its own person; SSO: 3 questions, 1 person.
    assert [(t.people, t.questions) for t in topics] == [(2, 2), (2, 2), (1, 3)]
    assert topics[0].label.startswith("refund") and topics[-1].label.startswith("sso")


@pytest.mark.parametrize(
    ("texts", "limit", "expected"),
    [
        pytest.param(["a one", "b two", "c three", "d four"], 3, ("d four", "c three", "b two"), id="newest first"),
        pytest.param(["same  question", "same question", "other"], 3, ("other", "same question"),
                     id="one example per distinct text (whitespace runs folded)"),
        pytest.param(["only"], 3, ("only",), id="fewer questions than examples"),
    ],
)
def test_examples(texts: list[str], limit: int, expected: tuple[str, ...]) -> None:
    questions = [q(n, text, days_ago=10 - n) for n, text in enumerate(texts)]
    (topic,) = build_topics(questions, [0] * len(questions), now=NOW, examples=limit)
    assert topic.examples == expected
    assert topic.exchange_ids[0] == questions[-1].exchange_id  # newest first too


def test_nearest_fragments_are_the_chunks_found_for_most_questions() -> None:
    questions = [q(1, "x", chunks=("c2", "c1")), q(2, "y", chunks=("c1", "c3")), q(3, "z", chunks=("c4", "c3"))]
    fragments = nearest_fragments(questions, 3)
    assert [(f.chunk_id, f.questions, f.best_rank) for f in fragments] == [("c1", 2, 1), ("c3", 2, 2), ("c2", 1, 1)]
    assert fragments[0].title == "Title c1" and fragments[0].document_id == "doc-c1"
    assert nearest_fragments([q(1, "x")], 3) == ()


@pytest.mark.parametrize(
    ("days_ago", "last", "previous"),
    [
        pytest.param([0, 1, 6.9], 3, 0, id="all in the last 7 days"),
        pytest.param([7.5, 13, 20], 0, 2, id="the 7 days before those; older ones in neither"),
        pytest.param([6.99, 7.01], 1, 1, id="the boundary at 7 days"),
    ],
)
def test_trend_compares_the_last_7_days_with_the_7_before(days_ago: list[float], last: int, previous: int) -> None:
    result = trend([q(n, "x", days_ago=d) for n, d in enumerate(days_ago)], now=NOW)
    assert (result.last_7_days, result.previous_7_days) == (last, previous)
    assert result.first_asked == NOW - timedelta(days=max(days_ago))
    assert result.last_asked == NOW - timedelta(days=min(days_ago))


def test_questions_are_clustered_oldest_first_ties_by_id() -> None:
    a, b, c = q(2, "b", days_ago=1), q(1, "a", days_ago=1), q(3, "c", days_ago=2)
    assert in_order([a, b, c]) == [c, b, a]


def test_a_group_number_per_question_is_required() -> None:
    with pytest.raises(ValueError, match="2 questions but 1 group numbers"):
        build_topics([q(1, "a"), q(2, "b")], [0], now=NOW)


def test_json_shape() -> None:
    (topic,) = build_topics([q(1, "Refund for annual plans?", chunks=("c1",))], [0], now=NOW)
    data = topic_to_json(topic)
    assert set(data) == {"label", "terms", "questions", "people", "examples", "exchange_ids", "nearest", "trend"}
    assert data["nearest"] == [{"chunk_id": "c1", "document_id": "doc-c1", "title": "Title c1", "questions": 1,
                                "best_rank": 1}]
    assert data["trend"]["last_7_days"] == 1 and data["trend"]["first_asked"] == "2026-03-29T12:00:00+00:00"
    # One question: every term is as telling as the next, so they are in the order of their stems.
    assert data["terms"] == ["annual", "plans", "refund"] and data["label"] == "annual · plans · refund"
