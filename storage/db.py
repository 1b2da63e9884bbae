"""Engines and sessions for the exchange log, and the start-up check that the schema is the expected one.

The composition root builds one engine and one session factory at start-up and passes them down; nothing
here is created at import time. Two databases are supported, both for real:

- SQLite (the embedded default): WAL so the review page can read while the bot writes, foreign keys on
  (SQLite leaves them off), and a busy timeout so a second writer waits instead of failing at once.
  sqlite3's default ("legacy") transaction handling is kept on purpose: a transaction begins at the first
  write, which takes the write lock under the busy timeout and avoids SQLite's read-then-upgrade deadlock.
  One connection per engine: SQLite has one writer at a time anyway, and writers queued on its lock wait by
  sleeping in growing steps (up to 100 ms each), so a burst of 100 mentions spent 2.7 s on its claims; queued
  for the connection instead, each goes the moment the previous is done (0.8 s). A process's sessions are short
  and never nested (no remote call inside one), so nothing waits long behind another.
- PostgreSQL (production): pool_pre_ping so a connection dropped by a restart is replaced, not reported
  as a failed write, and a connect timeout so a dead server is noticed in seconds.

Error messages show the URL through `mask_url`: never the password. `ping` is the readiness check
(`/readyz`): one trivial query, bounded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from alembic.migration import MigrationContext
from sqlalchemy import Connection, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from storage.errors import (
    DatabaseUnavailable,
    InvalidDatabaseURL,
    SchemaMissing,
    SchemaOutdated,
    mask_url,
    one_line,
)
from storage.journal import DATABASE_DOWN
from storage.migrate import head_revision, known_revisions
from storage.models import Base

# The async driver each database is used through; a URL without a driver ("postgres://…") gets this one.
ASYNC_DRIVERS = {"postgresql": "asyncpg", "sqlite": "aiosqlite"}
BACKEND_ALIASES = {"postgres": "postgresql"}

UPGRADE_HINT = "run `verbatim db upgrade`"


def parse_url(url: str | URL) -> URL:
    """The URL with its async driver filled in; InvalidDatabaseURL for anything else (without echoing it)."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        raise InvalidDatabaseURL(
            "the database URL does not parse: expected postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB "
            "or sqlite+aiosqlite:///PATH"
        ) from None
    backend = BACKEND_ALIASES.get(parsed.get_backend_name(), parsed.get_backend_name())
    driver = ASYNC_DRIVERS.get(backend)
    if driver is None:
        raise InvalidDatabaseURL(
            f"unsupported database {mask_url(parsed)}: use PostgreSQL (postgresql+asyncpg://…) or SQLite "
            "(sqlite+aiosqlite:///…)"
        )
    given = parsed.drivername.partition("+")[2]
    if given and given != driver:
        raise InvalidDatabaseURL(
            f"{mask_url(parsed)}: Verbatim uses {backend} through {driver}: write {backend}+{driver}://…"
        )
    return parsed.set(drivername=f"{backend}+{driver}")


def create_engine(url: str | URL, *, connect_timeout_s: float = 10.0, busy_timeout_s: float = 15.0,
                  **engine_options: Any) -> AsyncEngine:
    """An async engine for the exchange log at `url`, set up for its database (see the module docstring).

    `engine_options` go to SQLAlchemy unchanged (Alembic's env.py passes a NullPool, for example).
    """
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        if "poolclass" not in engine_options:  # one connection, waited for as long as SQLite would wait its lock
            engine_options = {"pool_size": 1, "max_overflow": 0, "pool_timeout": busy_timeout_s, **engine_options}
        engine = create_async_engine(parsed, connect_args={"timeout": busy_timeout_s}, **engine_options)
        event.listen(engine.sync_engine, "connect", _set_sqlite_pragmas)
        return engine
    return create_async_engine(
        parsed,
        pool_pre_ping=True,
        connect_args={"timeout": connect_timeout_s, "server_settings": {"application_name": "verbatim"}},
        **engine_options,
    )


def _set_sqlite_pragmas(dbapi_connection: Any, _connection_record: object) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """The one session factory of the process. Objects stay readable after commit (no lazy reloads in async)."""
    return async_sessionmaker(engine, expire_on_commit=False)


async def ping(sessions: async_sessionmaker[AsyncSession], timeout_s: float) -> bool:
    """Whether the database answers a trivial query within ``timeout_s`` (readiness). False when it is down
    or too slow (``DATABASE_DOWN``, the failures its log-and-carry-on callers expect); anything else is a bug."""
    async def select_one() -> None:
        async with sessions() as session:
            await session.execute(text("SELECT 1"))

    try:
        await asyncio.wait_for(select_one(), timeout_s)
    except DATABASE_DOWN:
        return False
    return True


def sqlite_path(url: str | URL) -> Path | None:
    """The file of a SQLite URL (None for PostgreSQL or an in-memory database)."""
    parsed = parse_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def ensure_sqlite_directory(url: str | URL) -> None:
    """Create the folder of a SQLite file (VERBATIM_HOME on a fresh machine); nothing for PostgreSQL."""
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def unavailable(url: URL, error: BaseException) -> DatabaseUnavailable:
    """DatabaseUnavailable for a failed connection: the masked URL and the driver's reason on one line."""
    reason = error.orig if isinstance(error, DBAPIError) and error.orig is not None else error
    said = one_line(str(reason) or type(reason).__name__, secret=url.password if url.password else None)
    return DatabaseUnavailable(f"cannot connect to the database {mask_url(url)}: {said}")


async def check_schema(engine: AsyncEngine) -> None:
    """Make sure the database answers and is at this code's Alembic revision; raise a one-line error if not.

    Run at start-up, so a stale or empty database is reported before the first question, not as a failed
    write after it.
    """
    try:
        async with engine.connect() as connection:
            current, tables = await connection.run_sync(_revision_and_tables)
    except (DBAPIError, OSError, TimeoutError) as error:
        raise unavailable(engine.url, error) from error
    head = head_revision()
    where = mask_url(engine.url)
    if current is None and not tables & set(Base.metadata.tables):
        raise SchemaMissing(f"the database {where} has no Verbatim tables: {UPGRADE_HINT}")
    if current != head:
        shown = current or "(none)"
        unknown = "" if current is None or current in known_revisions() else (
            f" (revision {shown} is not one this version knows: a newer Verbatim may have written it)"
        )
        raise SchemaOutdated(
            f"the database {where} is at revision {shown} but this version needs {head}: {UPGRADE_HINT}{unknown}"
        )


def _revision_and_tables(connection: Connection) -> tuple[str | None, set[str]]:
    current = MigrationContext.configure(connection).get_current_revision()
    return current, set(inspect(connection).get_table_names())
