"""Several replicas of the bot behind one Request URL (or a restart mid-retry): one reply per question."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from storage.exchanges import list_exchanges
from storage.migrate import upgrade
from tests.slack.conftest import open_database
from tests.slack.harness import QUESTION, started_bot
from tests.standins import SlackStandIn
from tests.storage.conftest import throwaway_database

CHANNEL = "C0SUPPORT"


@pytest.fixture(params=["sqlite", "postgresql"])
async def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A migrated database both replicas use: a SQLite file, or a PostgreSQL database of this test's own."""
    async with throwaway_database(request.param, tmp_path) as url:
        await upgrade(url)
        yield url


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
