"""Review desk fixtures: migrated logs (SQLite and PostgreSQL, as storage's tests get them), seeded exchanges,
the environment for running the review commands as a subprocess, and Debian's chromium for the browser test.

The database fixtures are storage's own (tests/storage/conftest.py), imported so the same rules hold: the
schema comes from the Alembic migrations, PostgreSQL from `scripts/postgres.sh` (skipped locally without it,
a failure under CI).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.db import create_engine, create_session_factory
from storage.migrate import upgrade
from tests.conftest import REPO, free_port
from tests.storage.conftest import db, empty_database_url, in_ci, kind  # noqa: F401 - fixtures shared
from tests.storage.database import Database


@pytest.fixture
async def sqlite_log(tmp_path: Path) -> AsyncIterator[Database]:
    """A migrated SQLite exchange log of this test's own (the embedded default, and what the CLI tests use)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'log' / 'verbatim.sqlite3'}"
    (tmp_path / "log").mkdir()
    await upgrade(url)
    engine = create_engine(url)
    try:
        yield Database(kind="sqlite", url=url, engine=engine, sessions=create_session_factory(engine))
    finally:
        await engine.dispose()


@pytest.fixture
def review_env(tmp_path: Path, sqlite_log: Database) -> dict[str, str]:
    """Environment for `python -m bot.review` on the SQLite log; Weaviate points at a port where nothing listens."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WEAVIATE_", "VERBATIM_", "COHERE_", "SLACK_", "DATABASE_", "REVIEW_"))}
    env.update({
        "VERBATIM_HOME": str(tmp_path / "home"),
        "DATABASE_URL": sqlite_log.url,
        "WEAVIATE_URL": f"http://127.0.0.1:{free_port()}",
        "WEAVIATE_GRPC_URL": f"http://127.0.0.1:{free_port()}",
        "COLUMNS": "200",
    })
    return env


@pytest.fixture(scope="session")
def chromium() -> str:
    """The chromium to drive: what `scripts/chromium.sh` prints ($CHROMIUM, or Debian's, installed when missing).

    Without one the browser test skips with the reason, except when CI is set: there it fails.
    """
    try:
        found = subprocess.run(["bash", str(REPO / "scripts" / "chromium.sh")], capture_output=True, text=True,
                               timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        reason = f"scripts/chromium.sh could not run ({type(error).__name__})"
    else:
        path = found.stdout.strip().splitlines()[-1] if found.stdout.strip() else ""
        if found.returncode == 0 and path:
            return path
        last = (found.stderr.strip().splitlines() or ["no output"])[-1]
        reason = f"scripts/chromium.sh found no chromium: {last}"
    reason = f"the browser test needs Debian's chromium: {reason}"
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so it may not be skipped)", pytrace=False)
    pytest.skip(reason)
