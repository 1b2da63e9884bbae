"""The answer path's suppressions: read from SQL, kept for a while, reread at once after a resolve in this process."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.answer.suppression_source import SuppressionSource
from storage.db import create_engine, create_session_factory
from storage.exchanges import record_exchange
from storage.flags import add_flag
from storage.migrate import upgrade
from storage.records import SuppressionRecord
from storage.suppressions import remember
from tests.storage.builders import at, exchange

Sessions = async_sessionmaker[AsyncSession]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def sessions(tmp_path: Path) -> AsyncIterator[Sessions]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'log.sqlite3'}"
    await upgrade(url)
    engine = create_engine(url)
    try:
        yield create_session_factory(engine)
    finally:
        await engine.dispose()


async def confirm_bad(sessions: Sessions, chunk_id: str) -> None:
    record = exchange()
    async with sessions() as session:
        await record_exchange(session, record)
    async with sessions() as session:
        flag = await add_flag(session, record.id, label="S1", user_id="U", reaction="x", is_lead=True, at=at())
    async with sessions() as session:
        await remember(session, [SuppressionRecord(
            id=str(uuid.uuid4()), flag_id=flag.id, exchange_id=record.id, chunk_id=chunk_id, document_id="d",
            version="1", content_hash="h", question="q", query="q", embedder="e5-small-q4", query_vector=(1.0, 0.0),
            created_by="lead", created_at=at())])


async def test_suppressions_are_read_once_then_served_from_the_copy(sessions: Sessions) -> None:
    await confirm_bad(sessions, "c1")
    clock = Clock()
    source = SuppressionSource(sessions, max_age_s=60, clock=clock)

    first, second = await source.current(), await source.current()
    assert [s.chunk_id for s in first] == ["c1"] and second == first and source.loads == 1


async def test_a_resolve_in_this_process_is_seen_by_the_next_answer(sessions: Sessions) -> None:
    clock = Clock()
    source = SuppressionSource(sessions, max_age_s=60, clock=clock)
    assert await source.current() == ()
    await confirm_bad(sessions, "c1")
    assert await source.current() == (), "within max_age the copy is kept"

    source.invalidate()
    assert [s.chunk_id for s in await source.current()] == ["c1"]


async def test_a_resolve_elsewhere_is_seen_once_the_copy_is_older_than_max_age(sessions: Sessions) -> None:
    clock = Clock()
    source = SuppressionSource(sessions, max_age_s=60, clock=clock)
    await source.current()
    await confirm_bad(sessions, "c2")
    clock.now = 59.9
    assert await source.current() == ()
    clock.now = 60.0
    assert [s.chunk_id for s in await source.current()] == ["c2"]


async def test_a_database_that_cannot_be_read_keeps_the_last_copy(sessions: Sessions) -> None:
    await confirm_bad(sessions, "c1")
    clock = Clock()
    source = SuppressionSource(sessions, max_age_s=60, clock=clock)
    assert len(await source.current()) == 1
    async with sessions() as session:  # the table is gone: every read now fails
        await session.execute(text("DROP TABLE suppressions"))
        await session.commit()

    clock.now = 120
    assert [s.chunk_id for s in await source.current()] == ["c1"]
