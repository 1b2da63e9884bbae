"""Storage fixtures: every test gets a fresh, real database, once on SQLite and once on PostgreSQL.

The schema is made by running the Alembic migrations against the database's URL (the same path as
`alembic upgrade head`), never by `metadata.create_all`, so the migrations are what these tests exercise.

PostgreSQL comes from VERBATIM_TEST_POSTGRES_URL (`eval "$(scripts/postgres.sh start)"` sets it). Each test
creates its own database on that server and drops it afterwards. Without the variable the PostgreSQL cases
skip with the reason, except when CI is set: there a skipped database is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from storage.db import create_engine, create_session_factory
from storage.migrate import upgrade
from tests.storage.database import Database

POSTGRES_ENV = "VERBATIM_TEST_POSTGRES_URL"
KINDS = ("sqlite", "postgresql")
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def postgres_server_url() -> str:
    """The test server's URL; skips the case (fails it under CI) when none is configured."""
    url = os.environ.get(POSTGRES_ENV)
    if url:
        return url
    reason = f'the PostgreSQL cases need {POSTGRES_ENV}: run `eval "$(scripts/postgres.sh start)"` first'
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so they may not be skipped)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    """'sqlite' or 'postgresql': which database this case runs on."""
    return str(request.param)


@asynccontextmanager
async def throwaway_database(kind: str, folder: Path) -> AsyncIterator[str]:
    """The URL of a new, empty database: a SQLite file in ``folder``, or a PostgreSQL database dropped after."""
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{folder / 'verbatim.sqlite3'}"
        return
    server_url = postgres_server_url()
    admin = create_async_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    name = f"verbatim_t_{uuid.uuid4().hex[:16]}"
    # CREATE/DROP DATABASE take no bind parameters; the name is ours and quoted by the dialect.
    quoted = admin.dialect.identifier_preparer.quote(name)
    try:
        async with admin.connect() as connection:
            await connection.exec_driver_sql("CREATE DATABASE " + quoted)
        try:
            yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
        finally:
            async with admin.connect() as connection:
                await connection.exec_driver_sql("DROP DATABASE IF EXISTS " + quoted + " WITH (FORCE)")
    finally:
        await admin.dispose()


@pytest.fixture
async def empty_database_url(kind: str, tmp_path: Path) -> AsyncIterator[str]:
    async with throwaway_database(kind, tmp_path) as url:
        yield url


@pytest.fixture
async def db(kind: str, empty_database_url: str) -> AsyncIterator[Database]:
    """A fresh database migrated to head by Alembic, with its engine and session factory."""
    await upgrade(empty_database_url)
    engine = create_engine(empty_database_url)
    try:
        yield Database(kind=kind, url=empty_database_url, engine=engine, sessions=create_session_factory(engine))
    finally:
        await engine.dispose()


@pytest.fixture
def down_url(kind: str, tmp_path: Path) -> str:
    """A database URL of the same kind that does not connect: nothing listens on the port / the folder is missing."""
    if kind == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'no-such-folder' / 'verbatim.sqlite3'}"
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql+asyncpg://postgres:not-the-password@127.0.0.1:{port}/verbatim_down"


def postgres(command: str, env: dict[str, str]) -> str:
    """Run scripts/postgres.sh COMMAND (start, stop, pause) for the server ``env`` names; its output."""
    result = subprocess.run([str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def own_postgres() -> Iterator[tuple[str, dict[str, str]]]:
    """A PostgreSQL of this test's own, so stopping it disturbs no other test.

    Its folder is directly under the temp dir: pytest's own temp folders are private to this user, and the
    server runs as the postgres user when the tests run as root.
    """
    folder = Path(tempfile.mkdtemp(prefix="verbatim-pg-"))
    folder.chmod(0o755)
    env = os.environ | {"VERBATIM_PG_DIR": str(folder / "cluster")}
    try:
        line = postgres("start", env)
    except AssertionError as error:
        if in_ci():
            raise
        pytest.skip(f"PostgreSQL cannot be started here: {error}")
    url = line.strip().split("=", 1)[1]
    try:
        yield url, env
    finally:
        postgres("stop", env)
        shutil.rmtree(folder, ignore_errors=True)
