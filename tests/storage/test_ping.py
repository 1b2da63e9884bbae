"""`ping`, the database side of /readyz: True while the database answers, False (never an exception) when it
is down, so readiness can report it and the bot keeps answering into the journal."""

from __future__ import annotations

from pathlib import Path

from storage.db import create_engine, create_session_factory, ping
from tests.storage.database import Database


async def test_a_database_that_answers_is_up(db: Database) -> None:
    assert await ping(db.sessions, timeout_s=5.0) is True


async def test_a_database_that_cannot_be_opened_is_down_not_an_error(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'no-such-folder' / 'verbatim.sqlite3'}")
    try:
        assert await ping(create_session_factory(engine), timeout_s=5.0) is False
    finally:
        await engine.dispose()
