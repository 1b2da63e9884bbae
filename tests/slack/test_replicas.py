"""Several replicas of the bot behind one Request URL (or a restart mid-retry): one reply per question."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.answer.service import AnswerDeps
from storage.exchanges import list_exchanges
from storage.migrate import upgrade
from tests.slack.conftest import open_database
from tests.slack.harness import QUESTION, started_bot
from tests.standins import SlackStandIn
from tests.storage.conftest import postgres_server_url

CHANNEL = "C0SUPPORT"


@pytest.fixture(params=["sqlite", "postgresql"])
async def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A migrated database both replicas use: a SQLite file, or a PostgreSQL database of this test's own."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'shared.sqlite3'}"
        await upgrade(url)
        yield url
        return
    server_url = postgres_server_url()
    admin = create_async_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    name = f"verbatim_slack_{uuid.uuid4().hex[:12]}"
    quoted = admin.dialect.identifier_preparer.quote(name)
    try:
        async with admin.connect() as connection:
            await connection.exec_driver_sql("CREATE DATABASE " + quoted)
        url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
        await upgrade(url)
        yield url
        async with admin.connect() as connection:
            await connection.exec_driver_sql("DROP DATABASE IF EXISTS " + quoted + " WITH (FORCE)")
    finally:
        await admin.dispose()


async def test_two_replicas_sharing_one_database_answer_a_doubly_delivered_mention_once(
        slack: SlackStandIn, answer_deps: AnswerDeps, shared_url: str, tmp_path: Path) -> None:
    first_db = await open_database(shared_url, tmp_path / "a.jsonl")
    second_db = await open_database(shared_url, tmp_path / "b.jsonl")
    try:
        async with started_bot(slack, answer_deps, first_db) as first, \
                started_bot(slack, answer_deps, second_db) as second:
            envelope = slack.envelope(slack.app_mention(CHANNEL, QUESTION))
            statuses = await asyncio.gather(slack.deliver_event(first.events_url, envelope),
                                            slack.deliver_event(second.events_url, envelope, retry_num=1))
            await first.reply(CHANNEL, envelope["event"]["ts"])
            await first.settle()
            await second.settle()
        async with first_db.sessions() as session:
            exchanges = await list_exchanges(session)
    finally:
        await first_db.engine.dispose()
        await second_db.engine.dispose()

    assert [s.status for s in statuses] == [200, 200]
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert len(slack.calls_to("reactions.add")) == 1
    assert [e.outcome for e in exchanges] == ["answered"]
