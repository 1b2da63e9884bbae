"""A bot killed (``kill -9``) between the claim and the reply: the question is still answered, exactly once.

The real ``python -m bot`` process, the Slack stand-in, the session's Weaviate. The stand-in holds the response
to the bot's :eyes: reaction (already on the question), so the kill lands exactly between the claim and the
reply. Then the bot is started again — the same home (SQLite), or a replica beside it sharing PostgreSQL — and
Slack's retries 1, 2 and 3 of the event arrive. Exactly one reply may appear, and the exchange is answered.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from retrieval.store import ChunkStore
from storage.claims import Lease, claim_event
from storage.db import create_engine, create_session_factory
from storage.exchanges import list_exchanges
from storage.migrate import upgrade
from storage.records import ExchangeSummary
from tests.conftest import free_port
from tests.slack.harness import ANSWER, QUESTION, Database, JsonDict, started_bot
from tests.slack.test_process import ENTRY, wait_healthy
from tests.standins import SlackStandIn
from tests.storage.conftest import throwaway_database

CHANNEL = "C0SUPPORT"


@contextmanager
def bot_process(env: dict[str, str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log_path.open("ab") as log:
        process = subprocess.Popen(ENTRY, env=env, cwd=log_path.parent, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


@asynccontextmanager
async def database_for(kind: str, tmp_path: Path) -> AsyncIterator[str]:
    """The exchange log both runs share: a migrated SQLite file, or a PostgreSQL database of this test."""
    async with throwaway_database(kind, tmp_path) as url:
        await upgrade(url)
        yield url


async def exchanges_in(url: str) -> list[ExchangeSummary]:
    engine = create_engine(url)
    try:
        async with create_session_factory(engine)() as session:
            return await list_exchanges(session)
    finally:
        await engine.dispose()


@pytest.mark.parametrize(("second", "database"), [("restart", "sqlite"), ("replica", "postgresql")])
async def test_a_question_whose_bot_was_killed_after_the_eyes_is_answered_once_after_retries(
        cli_env: dict[str, str], demo_store: ChunkStore, tmp_path: Path, second: str, database: str) -> None:
    async with SlackStandIn() as slack, database_for(database, tmp_path) as url:
        port_a, port_b = free_port(), (free_port() if second == "replica" else None)
        env = cli_env | {"VERBATIM_COLLECTION": demo_store.name, "SLACK_BOT_TOKEN": slack.bot_token,
                         "SLACK_SIGNING_SECRET": slack.signing_secret, "SLACK_API_URL": slack.api_url,
                         "DATABASE_URL": url, "PORT": str(port_a)}
        envelope = slack.envelope(slack.app_mention(CHANNEL, QUESTION))
        ts = envelope["event"]["ts"]

        with bot_process(env, tmp_path / "first.log") as first:
            await wait_healthy(f"http://127.0.0.1:{port_a}", first)
            held = slack.stall("reactions.add")
            status, _ = await slack.deliver_event(f"http://127.0.0.1:{port_a}/slack/events", envelope)
            await slack.wait_for(lambda: slack.message(CHANNEL, ts).get("reactions"), timeout=60, what=":eyes:")
            first.send_signal(signal.SIGKILL)
            await asyncio.to_thread(first.wait)
            held.set()
        assert status == 200 and slack.thread(CHANNEL, ts)[1:] == []  # killed before any reply

        env_b = env | ({"PORT": str(port_b), "VERBATIM_HOME": str(tmp_path / "home-b")} if port_b else {})
        url_b = f"http://127.0.0.1:{env_b['PORT']}"
        with bot_process(env_b, tmp_path / "second.log") as restarted:
            await wait_healthy(url_b, restarted)
            statuses = [(await slack.deliver_event(f"{url_b}/slack/events", envelope, retry_num=n))[0]
                        for n in (1, 2, 3)]
            reply = await slack.wait_for(lambda: slack.thread(CHANNEL, ts)[1], timeout=120, what="the reply")
            await slack.wait_for(lambda: not slack.message(CHANNEL, ts).get("reactions"), timeout=60,
                                 what=":eyes: taken off")
            restarted.send_signal(signal.SIGTERM)  # lets anything still in flight finish before we count
            code = await asyncio.to_thread(restarted.wait, 60)
        exchanges = await exchanges_in(url)

    log = (tmp_path / "second.log").read_text(encoding="utf-8", errors="replace")
    assert statuses == [200, 200, 200] and code == 0, log[-3000:]
    assert ANSWER in str(reply["blocks"])
    assert len(slack.thread(CHANNEL, ts)) == 2, "exactly one reply in the thread"
    assert [(e.outcome, e.reply_ts) for e in exchanges] == [("answered", reply["ts"])]
    assert "took over exchange" in log or "recovering exchange" in log


# -- in process: what the taker does with a claim left behind (the real server, a dead owner's claim in SQL) --

DEAD = "another-host/4242/1"  # a claim of an instance elsewhere: only its lease running out frees it


async def left_behind_by_a_dead_instance(slack: SlackStandIn, database: Database, *, asked_ago: timedelta,
                                         text: str = QUESTION) -> tuple[JsonDict, str]:
    """A question in the channel, claimed by an instance that died: its lease ran out. Returns (event, id)."""
    envelope = slack.envelope(slack.app_mention(CHANNEL, text))
    event = envelope["event"]
    slack.add_message(CHANNEL, {k: event[k] for k in ("user", "text", "ts")})
    asked = datetime.now(UTC) - asked_ago
    exchange_id = str(uuid.uuid4())
    async with database.sessions() as session:
        claim = await claim_event(session, envelope["event_id"], exchange_id=exchange_id, created_at=asked,
                                  source="slack", lease=Lease(DEAD, asked + timedelta(seconds=30), asked),
                                  question=text, team_id=slack.team_id, channel_id=CHANNEL, user_id=event["user"],
                                  thread_ts=event["ts"], question_ts=event["ts"])
    assert claim is not None
    return envelope, exchange_id


async def test_the_start_up_sweep_answers_what_a_dead_instance_left_and_says_missed_for_what_is_too_old(
        slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> None:
    recent, recent_id = await left_behind_by_a_dead_instance(slack, database, asked_ago=timedelta(minutes=2))
    stale, stale_id = await left_behind_by_a_dead_instance(slack, database, asked_ago=timedelta(hours=2),
                                                           text="Как сбросить пароль?")
    async with started_bot(slack, answer_deps, database) as bot:
        answer = await bot.reply(CHANNEL, recent["event"]["ts"])
        missed = await bot.reply(CHANNEL, stale["event"]["ts"])
        await bot.settle()
        answered, sorry = await bot.exchange_of(CHANNEL, answer["ts"]), await bot.exchange_of(CHANNEL, missed["ts"])

    assert ANSWER in str(answer["blocks"])
    assert (answered.id, answered.outcome) == (recent_id, "answered")
    assert "Задайте его, пожалуйста, ещё раз" in missed["text"] and stale_id in str(missed["blocks"])
    assert (sorry.id, sorry.outcome, sorry.error_class) == (stale_id, "error", "MissedQuestion")
    assert len(bot.posts()) == 2 and all(
        p["metadata"]["event_payload"]["exchange_id"] in (recent_id, stale_id) for p in bot.posts())


async def test_a_retry_of_a_question_the_dead_instance_had_already_answered_posts_nothing_more(
        slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> None:
    """It died after posting, before recording: the reply is found by its exchange id, not posted again."""
    envelope, exchange_id = await left_behind_by_a_dead_instance(slack, database, asked_ago=timedelta(minutes=1))
    ts = envelope["event"]["ts"]
    earlier = slack.add_message(CHANNEL, {"user": slack.bot_user_id, "bot_id": slack.bot_id, "thread_ts": ts,
                                          "text": "the answer, posted just before the crash",
                                          "metadata": {"event_type": "verbatim_reply",
                                                       "event_payload": {"exchange_id": exchange_id}}})
    async with started_bot(slack, answer_deps, database) as bot:
        await bot.deliver(envelope, retry=1)
        await bot.settle()
        recorded = await bot.exchange_of(CHANNEL, earlier["ts"])

    assert bot.posts() == []
    assert [m["ts"] for m in slack.thread(CHANNEL, ts)] == [ts, earlier["ts"]]
    assert (recorded.id, recorded.outcome) == (exchange_id, "answered")
