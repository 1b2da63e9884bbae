"""Nothing is lost: what the database cannot take goes to the journal and is written later, exactly once."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from storage.db import create_engine, create_session_factory
from storage.errors import JournalError
from storage.exchanges import get_exchange, record_exchange
from storage.journal import Journal, ReplayResult, write_or_journal
from storage.migrate import upgrade
from storage.models import Citation, Exchange
from tests.storage.builders import at, citation, exchange
from tests.storage.conftest import postgres
from tests.storage.database import Database


@pytest.fixture
async def down_sessions(down_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on a database that is down (nothing listening / a folder that does not exist)."""
    engine = create_engine(down_url, connect_timeout_s=2)
    try:
        yield create_session_factory(engine)
    finally:
        await engine.dispose()


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "home" / "journal.jsonl")


async def exchanges_in(db: Database) -> int:
    async with db.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(Exchange)) or 0)


async def test_an_exchange_the_database_cannot_take_is_journaled_and_later_written_exactly_once(
    db: Database, down_sessions: async_sessionmaker[AsyncSession], journal: Journal
) -> None:
    record = exchange(citations=(citation(1), citation(2, kept=False)))
    assert await write_or_journal(down_sessions, journal, record) is False
    assert journal.pending() == 1

    assert await journal.replay(db.sessions) == ReplayResult(written=1, remaining=0)
    assert await journal.replay(db.sessions) == ReplayResult(written=0, remaining=0)
    async with db.sessions() as session:
        assert await get_exchange(session, record.id) == record
    assert await exchanges_in(db) == 1


async def test_a_healthy_database_is_written_directly_and_the_journal_stays_empty(db: Database, journal: Journal) -> None:
    assert await write_or_journal(db.sessions, journal, exchange()) is True
    assert journal.pending() == 0 and not journal.path.exists()
    assert await exchanges_in(db) == 1


async def test_replay_against_a_database_still_down_keeps_every_record(
    db: Database, down_sessions: async_sessionmaker[AsyncSession], journal: Journal
) -> None:
    records = [exchange(created_at=at(n)) for n in range(3)]
    for record in records:
        journal.append(record)
    before = journal.path.read_bytes()
    assert await journal.replay(down_sessions) == ReplayResult(written=0, remaining=3)
    assert journal.path.read_bytes() == before
    assert await journal.replay(db.sessions) == ReplayResult(written=3, remaining=0)
    assert await exchanges_in(db) == 3


async def test_a_crash_between_writing_and_compacting_does_not_duplicate(db: Database, journal: Journal) -> None:
    """The record reached the database but the process died before the journal shrank: replay writes it again."""
    record = exchange()
    journal.append(record)
    async with db.sessions() as session:
        await record_exchange(session, record)
    assert await journal.replay(db.sessions) == ReplayResult(written=1, remaining=0)
    async with db.sessions() as session:
        count = await session.scalar(select(func.count()).select_from(Citation))
    assert (await exchanges_in(db), count) == (1, 2)


async def test_a_locked_database_counts_as_down_and_the_exchange_waits_in_the_journal(
    db: Database, journal: Journal
) -> None:
    """Another writer holds the lock past our timeout (SQLite's busy timeout / a PostgreSQL table lock)."""
    engine = create_engine(db.url, busy_timeout_s=0.2)
    impatient = create_session_factory(engine)
    record = exchange()
    try:
        async with db.engine.connect() as holder:
            if db.kind == "sqlite":
                await holder.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                await holder.begin()
                await holder.execute(text("LOCK TABLE exchanges IN ACCESS EXCLUSIVE MODE"))
            assert await write_or_journal(impatient, journal, record, timeout_s=1.0) is False
            await holder.rollback()
    finally:
        await engine.dispose()
    assert journal.pending() == 1
    assert await journal.replay(db.sessions) == ReplayResult(written=1, remaining=0)
    assert await exchanges_in(db) == 1


async def test_replays_started_together_write_each_record_once(db: Database, journal: Journal) -> None:
    """Several processes replay at start-up: one does the work, the others see it is taken."""
    for n in range(5):
        journal.append(exchange(created_at=at(n)))
    results = await asyncio.gather(*(journal.replay(db.sessions) for _ in range(3)))
    assert sum(result.written for result in results) == 5
    assert sum(result.busy for result in results) == 2
    assert journal.pending() == 0
    assert await exchanges_in(db) == 5


async def test_records_appended_during_a_replay_are_kept_for_the_next_one(db: Database, journal: Journal) -> None:
    journal.append(exchange(created_at=at(0)))
    late = exchange(created_at=at(1))

    class AppendingFactory:
        """Sessions from the real factory; the first one also appends a record, as another process would."""

        def __init__(self) -> None:
            self.appended = False

        def __call__(self) -> AsyncSession:
            if not self.appended:
                journal.append(late)
                self.appended = True
            return db.sessions()

    assert await journal.replay(AppendingFactory()) == ReplayResult(written=1, remaining=1)  # type: ignore[arg-type]
    assert await journal.replay(db.sessions) == ReplayResult(written=1, remaining=0)
    assert await exchanges_in(db) == 2


async def test_an_unreadable_line_is_set_aside_and_does_not_block_the_others(db: Database, journal: Journal) -> None:
    """A torn write (power cut mid-line) is moved to .bad; the records before and after it are written."""
    journal.append(exchange(created_at=at(0)))
    with open(journal.path, "ab") as file:
        file.write(b'{"v": 1, "exchange": {"id": "torn')
    journal.append(exchange(created_at=at(1)))
    assert await journal.replay(db.sessions) == ReplayResult(written=2, remaining=0, set_aside=1)
    assert journal.bad_path.read_bytes() == b'{"v": 1, "exchange": {"id": "torn\n'
    assert await exchanges_in(db) == 2


async def test_text_postgresql_cannot_store_is_kept_readable_instead_of_blocking_the_journal(db: Database) -> None:
    """A NUL character (PDF extraction produces them) is stored as U+FFFD on both databases."""
    record = exchange(question="refund\x00policy", citations=(citation(1, exact_quote="within\x0010 days"),))
    async with db.sessions() as session:
        await record_exchange(session, record)
        stored = await get_exchange(session, record.id)
    assert stored is not None
    assert (stored.question, stored.citations[0].exact_quote) == ("refund\ufffdpolicy", "within\ufffd10 days")


REFUSED_QUESTION = "Which poisoned question does the database refuse?"


async def refuse_poisoned_questions(db: Database) -> None:
    """A rule the database holds that our record type knows nothing of (as a constraint a newer migration adds):
    a question containing 'poisoned' is refused with an IntegrityError, on SQLite and on PostgreSQL."""
    async with db.engine.begin() as connection:
        if db.kind == "sqlite":
            await connection.exec_driver_sql(
                "CREATE TRIGGER refuse_poisoned BEFORE INSERT ON exchanges WHEN NEW.question LIKE '%poisoned%' "
                "BEGIN SELECT RAISE(ABORT, 'a poisoned question'); END")
        else:
            await connection.exec_driver_sql(
                "ALTER TABLE exchanges ADD CONSTRAINT refuse_poisoned CHECK (question NOT LIKE '%poisoned%')")


async def test_a_record_the_database_refuses_does_not_block_the_ten_behind_it(db: Database, journal: Journal) -> None:
    """It is tried a few times, then set aside in the dead-letter file; the ten after it land."""
    await refuse_poisoned_questions(db)
    bad = exchange(question=REFUSED_QUESTION)
    good = [exchange(created_at=at(n)) for n in range(10)]
    for record in (bad, *good):
        journal.append(record)

    assert await journal.replay(db.sessions) == ReplayResult(written=10, remaining=0, dead_lettered=1)
    assert await exchanges_in(db) == 10
    async with db.sessions() as session:
        for record in good:
            assert await get_exchange(session, record.id) == record
        assert await get_exchange(session, bad.id) is None
    [letter] = journal.dead_letters()
    assert (letter.record, letter.error, letter.attempts) == (bad, "IntegrityError", 3)
    assert journal.dead_lettered() == 1
    assert journal.pending() == 0
    assert await journal.replay(db.sessions) == ReplayResult(written=0, remaining=0)  # set aside once, not again


async def test_a_refused_write_is_logged_with_its_traceback_and_set_aside_not_journaled(
    db: Database, journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    """The journal holds only what waits for the database; the log says why, without the question or a password."""
    await refuse_poisoned_questions(db)
    bad = exchange(question=REFUSED_QUESTION)
    with caplog.at_level(logging.WARNING, logger="storage.journal"):
        assert await write_or_journal(db.sessions, journal, bad, attempts=2) is False
    assert journal.pending() == 0
    assert [letter.record for letter in journal.dead_letters()] == [bad]
    [error] = [entry for entry in caplog.records if entry.levelno == logging.ERROR]
    assert error.exc_info is not None and str(journal.dead_path) in error.getMessage()
    assert bad.question not in caplog.text
    password = make_url(db.url).password
    assert not password or password not in caplog.text
    assert await write_or_journal(db.sessions, journal, exchange()) is True  # the database was never down


async def test_a_replay_waiting_for_another_process_on_the_journal_does_not_stall_the_bot(
    db: Database, journal: Journal
) -> None:
    """While another process holds the journal's lock, the event loop keeps answering; the replay then finishes."""
    journal.append(exchange())
    holder = os.open(journal.lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        replay = asyncio.create_task(journal.replay(db.sessions))
        ticks = 0
        for _ in range(10):
            await asyncio.sleep(0.02)
            ticks += 1
        assert ticks == 10 and not replay.done()
    finally:
        os.close(holder)
    assert await asyncio.wait_for(replay, 10) == ReplayResult(written=1, remaining=0)


async def test_exchanges_made_while_postgres_is_stopped_wait_and_none_is_set_aside(
    own_postgres: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """A real outage is not the records' fault: every one waits in the journal and lands once the server is back."""
    url, env = own_postgres
    await upgrade(url)
    engine = create_engine(url, connect_timeout_s=2)
    sessions = create_session_factory(engine)
    journal = Journal(tmp_path / "journal.jsonl")
    records = [exchange(created_at=at(n)) for n in range(4)]
    try:
        assert await write_or_journal(sessions, journal, records[0]) is True  # a pooled connection, alive
        postgres("pause", env)
        assert [await write_or_journal(sessions, journal, r, timeout_s=5) for r in records[1:]] == [False] * 3
        assert await journal.replay(sessions, timeout_s=5) == ReplayResult(written=0, remaining=3)
        postgres("start", env)
        assert await journal.replay(sessions) == ReplayResult(written=3, remaining=0)
        async with sessions() as session:
            stored = [await get_exchange(session, record.id) for record in records]
    finally:
        await engine.dispose()
    assert stored == records
    assert journal.dead_lettered() == 0 and not journal.dead_path.exists()


def test_a_journal_on_an_unwritable_path_fails_with_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the journal's folder should be")
    journal = Journal(blocker / "journal.jsonl")
    with pytest.raises(JournalError) as caught:
        journal.append(exchange())
    message = str(caught.value)
    assert message.startswith(f"cannot write the journal {blocker / 'journal.jsonl'}: ")
    assert "\n" not in message


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full to simulate a full disk")
def test_a_journal_on_a_full_disk_fails_with_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.symlink_to("/dev/full")
    with pytest.raises(JournalError, match=r"^cannot write the journal .*journal\.jsonl: No space left on device$"):
        Journal(path).append(exchange())
