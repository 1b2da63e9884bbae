"""Askers' feedback: one current vote per user and answer, counted in the stats, a 👎 in the review queue."""

from __future__ import annotations

import pytest

from bot.review.queries import review_queue
from storage.errors import UnknownExchange
from storage.exchanges import list_exchanges, record_exchange
from storage.feedback import feedback_for, record_feedback
from storage.stats import window_stats
from tests.storage.builders import at, exchange
from tests.storage.database import Database


async def recorded(db: Database) -> str:
    record = exchange()
    async with db.sessions() as session:
        await record_exchange(session, record)
    return record.id


async def vote(db: Database, exchange_id: str, user: str, positive: bool, minute: float = 1) -> None:
    async with db.sessions() as session:
        await record_feedback(session, exchange_id, user_id=user, positive=positive, at=at(minute))


async def test_a_later_click_replaces_the_users_vote_and_a_repeated_one_changes_nothing(db: Database) -> None:
    exchange_id = await recorded(db)
    await vote(db, exchange_id, "U-anna", True)
    await vote(db, exchange_id, "U-anna", True, minute=2)  # delivered twice
    await vote(db, exchange_id, "U-anna", False, minute=3)  # changed her mind
    await vote(db, exchange_id, "U-boris", True, minute=4)
    async with db.sessions() as session:
        votes = await feedback_for(session, exchange_id)
    assert [(v.user_id, v.positive, v.updated_at) for v in votes] == [("U-anna", False, at(3)), ("U-boris", True, at(4))]


async def test_feedback_on_an_unknown_exchange_is_refused(db: Database) -> None:
    with pytest.raises(UnknownExchange):
        await vote(db, "00000000-0000-4000-8000-000000000000", "U-anna", True)


async def test_votes_are_counted_in_the_stats_and_a_thumbs_down_puts_the_exchange_in_the_queue(db: Database) -> None:
    liked, disliked = await recorded(db), await recorded(db)
    await vote(db, liked, "U-anna", True)
    await vote(db, disliked, "U-anna", False)
    await vote(db, disliked, "U-boris", False)
    async with db.sessions() as session:
        metrics = await window_stats(session, since=at(-60))
        unhappy = await list_exchanges(session, unhappy=True)
        queue = await review_queue(session, unhappy=True)
        default_queue = await review_queue(session, now=at(5))

    assert (metrics.helpful, metrics.unhelpful, metrics.unhappy_rate) == (1, 2, 2 / 3)
    assert [(s.id, s.unhappy) for s in unhappy] == [(disliked, 2)]
    assert [s.id for s in queue] == [disliked]
    assert disliked in {s.id for s in default_queue} and liked not in {s.id for s in default_queue}
