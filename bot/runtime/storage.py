"""The exchange log's engine, sessions and journal, from settings (the package's docstring maps the root)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.exchange_log import ExchangeLog
from bot.settings import Settings
from storage import migrate
from storage.db import (
    UPGRADE_HINT,
    check_schema,
    create_engine,
    create_session_factory,
    ensure_sqlite_directory,
    sqlite_path,
    unavailable,
)
from storage.errors import DatabaseUnavailable, SchemaMissing, StorageError
from storage.journal import Journal

log = logging.getLogger(__name__)


@dataclass
class Storage:
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    journal: Journal

    @property
    def log(self) -> ExchangeLog:
        """The log as the front ends are handed it (its sessions and journal)."""
        return ExchangeLog(self.sessions, self.journal)


async def replay_journal(journal: Journal, sessions: async_sessionmaker[AsyncSession]) -> None:
    """Write journaled exchanges to the database if it is back; keep them otherwise."""
    try:
        result = await journal.replay(sessions)
    except StorageError as error:
        log.warning("journal replay failed, will retry: %s", error)
        return
    if result.written:
        log.info("wrote %d journaled exchanges to the database (%d still pending)", result.written, result.remaining)
    if result.dead_lettered:  # each one was logged with its traceback by the replay
        log.error("%d journaled exchanges refused by the database, set aside in %s", result.dead_lettered,
                  journal.dead_path)


@asynccontextmanager
async def open_storage(settings: Settings) -> AsyncIterator[Storage]:
    """The exchange log: an engine, its session factory and the journal; pending journal entries are replayed.

    A fresh embedded SQLite file is created by running the migrations; any other database must be
    migrated by its release step (`alembic upgrade head`), and an empty or stale one is refused with
    that instruction.
    """
    url = settings.database_url_value()
    if sqlite_path(url) is not None:
        ensure_sqlite_directory(url)
    engine = create_engine(url)
    try:
        try:
            await check_schema(engine)
        except SchemaMissing:
            if sqlite_path(url) is None:
                raise
            await migrate.upgrade(url)
        except DatabaseUnavailable as error:
            # Keep answering: exchanges go to the journal until the database is back.
            log.warning("the exchange log is unavailable, journaling exchanges: %s", error)
        sessions = create_session_factory(engine)
        settings.verbatim_home.mkdir(parents=True, exist_ok=True)
        journal = Journal.in_home(settings.verbatim_home)
        await replay_journal(journal, sessions)
        yield Storage(engine=engine, sessions=sessions, journal=journal)
    finally:
        await engine.dispose()


@asynccontextmanager
async def open_log(settings: Settings) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on the exchange log, after checking it is at this code's revision (the review desk, ``db check``).

    Raises storage's errors (InvalidDatabaseURL, DatabaseUnavailable, SchemaMissing, SchemaOutdated); a
    database that fails later, mid-command, is reported as DatabaseUnavailable too.
    """
    url = settings.database_url_value()
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise SchemaMissing(f"there is no exchange log at {path} yet: {UPGRADE_HINT} (or set DATABASE_URL)")
    engine = create_engine(url)
    try:
        await check_schema(engine)
        try:
            yield create_session_factory(engine)
        except DBAPIError as error:
            raise unavailable(engine.url, error) from error
    finally:
        await engine.dispose()
