"""Slack edge fixtures: the stand-in workspace, a migrated database per test, the running bot in either mode.

The answer service's parts are built once per session from the demo corpus (``demo_store``, ingested once);
each test gets a fresh stand-in and a fresh SQLite exchange log, copied from one migrated template so
Alembic runs once.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from bot.runtime.answer import build_answer_deps
from bot.runtime.retrieval import Retrieval
from bot.settings import Settings
from retrieval.embedders.local import E5Embedder
from retrieval.store import ChunkStore
from retrieval.weaviate_server import WeaviateHandle
from storage.db import create_engine, create_session_factory
from storage.journal import Journal
from storage.migrate import upgrade
from tests.slack.harness import Bot, Database, started_bot
from tests.standins import SlackStandIn


@pytest.fixture(scope="session")
def answer_deps(demo_store: ChunkStore, embedder: E5Embedder, weaviate: WeaviateHandle) -> AnswerDeps:
    """The answer service as `verbatim serve` builds it (local models), over the demo corpus."""
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    return build_answer_deps(settings, Retrieval(settings, weaviate, demo_store, embedder, None))


@pytest.fixture(scope="session")
async def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("slack-db") / "template.sqlite3"
    await upgrade(f"sqlite+aiosqlite:///{path}")
    return path


async def open_database(url: str, journal: Path) -> Database:
    engine = create_engine(url)
    return Database(url=url, engine=engine, sessions=create_session_factory(engine), journal=Journal(journal))


@pytest.fixture
async def database(tmp_path: Path, migrated_sqlite: Path) -> AsyncIterator[Database]:
    """A fresh SQLite exchange log of this test's own (a copy of the migrated template)."""
    path = tmp_path / "verbatim.sqlite3"
    shutil.copyfile(migrated_sqlite, path)
    db = await open_database(f"sqlite+aiosqlite:///{path}", tmp_path / "journal.jsonl")
    try:
        yield db
    finally:
        await db.engine.dispose()


@pytest.fixture
async def slack() -> AsyncIterator[SlackStandIn]:
    async with SlackStandIn() as stand_in:
        stand_in.add_user("U0LEAD", name="lead")
        yield stand_in


@pytest.fixture
async def bot(slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> AsyncIterator[Bot]:
    """The bot over HTTP (Events API)."""
    async with started_bot(slack, answer_deps, database, mode="http") as running:
        yield running


@pytest.fixture(params=["http", "socket"])
async def any_bot(request: pytest.FixtureRequest, slack: SlackStandIn, answer_deps: AnswerDeps,
                  database: Database) -> AsyncIterator[Bot]:
    """The bot over HTTP, then over Socket Mode: the same behaviour is expected of both."""
    async with started_bot(slack, answer_deps, database, mode=request.param) as running:
        yield running
