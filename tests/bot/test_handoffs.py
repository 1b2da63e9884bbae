"""The hand-off service while the exchange log is out, as the journal's tests take it out (a lock held past the
bound, PostgreSQL stopped): the click is refused at once as ``LogUnavailable`` (the edge then tells the clicker
nobody could be reached), nothing half-done is left, and once the log is back the next click hands off, once. A
hand-off claimed before the outage is never taken, so never posted, a second time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from sqlalchemy import func, select

from bot.exchange_log import LogUnavailable
from bot.handoffs import Handoffs
from storage.db import create_engine, create_session_factory
from storage.exchanges import record_exchange
from storage.handoffs import handoff_for
from storage.migrate import upgrade
from storage.models import Handoff
from tests.storage.builders import at, exchange
from tests.storage.conftest import db, empty_database_url, kind, own_postgres, postgres  # noqa: F401 - shared fixtures
from tests.storage.database import Database

CHANNEL, REPLY = "C-support", "1700000001.000200"  # where the builder's exchange was answered
BOUND_S = 1.0


@asynccontextmanager
async def log_locked(db: Database) -> AsyncIterator[None]:
    """Another writer holds the hand-offs past the bound (SQLite's write lock / a PostgreSQL table lock)."""
    async with db.engine.connect() as holder:
        if db.kind == "sqlite":
            await holder.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            await holder.begin()
            await holder.exec_driver_sql("LOCK TABLE handoffs IN ACCESS EXCLUSIVE MODE")
        yield
        await holder.rollback()


async def answered(db: Database) -> str:
    record = exchange()
    async with db.sessions() as session:
        await record_exchange(session, record)
    return record.id


async def handoffs_in(db: Database) -> int:
    async with db.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(Handoff)) or 0)


async def test_a_click_while_the_log_is_locked_is_refused_in_time_and_the_next_one_hands_off_once(
        db: Database) -> None:
    exchange_id = await answered(db)
    handoffs = Handoffs(db.sessions, timeout_s=BOUND_S)

    async with log_locked(db):
        with pytest.raises(LogUnavailable, match=r"unavailable for the hand-off \(") as refused:
            await handoffs.take(CHANNEL, REPLY, user="U0ANNA", at=at(1), claim=True)
    assert refused.value.cause in ("OperationalError", "TimeoutError")
    assert await handoffs_in(db) == 0  # nothing claimed that nobody was told of

    taken = await handoffs.take(CHANNEL, REPLY, user="U0ANNA", at=at(2), claim=True)
    assert taken is not None and (taken.answer.exchange_id, taken.first) == (exchange_id, True)
    again = await handoffs.take(CHANNEL, REPLY, user="U0BORIS", at=at(3), claim=True)
    assert again is not None and (again.first, again.by) == (False, "U0ANNA")
    assert await handoffs_in(db) == 1


async def test_the_log_going_out_after_the_claim_never_lets_the_hand_off_be_posted_twice(db: Database) -> None:
    """The post went out (or Slack refused it) and then the log did not take the note (or the give-back): the
    hand-off stays claimed, so a later or redelivered click is told it was asked for, and posts nothing."""
    exchange_id = await answered(db)
    handoffs = Handoffs(db.sessions, timeout_s=BOUND_S)
    first = await handoffs.take(CHANNEL, REPLY, user="U0ANNA", at=at(1), claim=True)
    assert first is not None and first.first is True

    async with log_locked(db):
        with pytest.raises(LogUnavailable, match="hand-off post"):
            await handoffs.posted(exchange_id, "1700000002.000300")
        with pytest.raises(LogUnavailable, match="hand-off release"):
            await handoffs.release(exchange_id)

    later = await handoffs.take(CHANNEL, REPLY, user="U0ANNA", at=at(2), claim=True)
    assert later is not None and (later.first, later.by) == (False, "U0ANNA")
    async with db.sessions() as session:
        kept = await handoff_for(session, exchange_id)
    assert kept is not None and kept.user_id == "U0ANNA" and kept.message_ts is None  # only the post's ts is missing
    await handoffs.posted(exchange_id, "1700000002.000300")  # once the log is back, the note lands
    async with db.sessions() as session:
        noted = await handoff_for(session, exchange_id)
    assert noted is not None and noted.message_ts == "1700000002.000300"


async def test_clicks_while_postgres_is_stopped_are_refused_at_once_and_one_hands_off_when_it_is_back(
        own_postgres: tuple[str, dict[str, str]]) -> None:
    url, env = own_postgres
    await upgrade(url)
    engine = create_engine(url, connect_timeout_s=2)
    db = Database(kind="postgresql", url=url, engine=engine, sessions=create_session_factory(engine))
    try:
        exchange_id = await answered(db)  # a pooled connection, alive when the server goes
        handoffs = Handoffs(db.sessions)
        postgres("pause", env)
        for user in ("U0ANNA", "U0BORIS"):
            with pytest.raises(LogUnavailable, match=r"unavailable for the hand-off \("):
                await handoffs.take(CHANNEL, REPLY, user=user, at=at(1), claim=True)
        postgres("start", env)
        taken = await handoffs.take(CHANNEL, REPLY, user="U0BORIS", at=at(2), claim=True)
        assert taken is not None and (taken.answer.exchange_id, taken.first) == (exchange_id, True)
        again = await handoffs.take(CHANNEL, REPLY, user="U0ANNA", at=at(3), claim=True)
        assert again is not None and (again.first, again.by) == (False, "U0BORIS")
        assert await handoffs_in(db) == 1
    finally:
        await engine.dispose()
