"""When something goes wrong the asker still hears back, in the thread, and the exchange is still logged;
requests that are not from Slack are refused and answer nothing."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.answer.service import AnswerDeps
from bot.answer.wording import WORDING
from retrieval.embedders.local import E5Embedder
from retrieval.store import ChunkStore
from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_server import WeaviateHandle, connect
from storage.exchanges import list_exchanges
from tests.slack.conftest import open_database
from tests.slack.harness import ANSWER, API_TOKEN, FOLLOW_UP, QUESTION, Bot, Database, started_bot
from tests.slack.test_operations import samples, scrape
from tests.standins import SlackStandIn

CHANNEL = "C0SUPPORT"


@pytest.fixture
async def closed_weaviate_deps(answer_deps: AnswerDeps, demo_store: ChunkStore,
                               weaviate_config: WeaviateConfig) -> AsyncIterator[AnswerDeps]:
    """The answer service with its store pointed at a Weaviate connection that has been closed."""
    remote = dataclasses.replace(weaviate_config, url=f"http://127.0.0.1:{weaviate_config.port}",
                                 grpc_url=f"http://127.0.0.1:{weaviate_config.grpc_port}",
                                 api_key=weaviate_config.key_path.read_text(encoding="utf-8").strip())
    handle: WeaviateHandle = await connect(remote)
    await handle.close()
    yield dataclasses.replace(answer_deps, store=ChunkStore(handle.client, demo_store.name))


@pytest.mark.parametrize("forgery", ["bad_signature", "stale_timestamp"])
async def test_a_forged_or_stale_request_is_refused_with_401_and_answers_nothing(bot: Bot, forgery: str) -> None:
    slack = bot.slack
    mention = slack.app_mention(CHANNEL, QUESTION)
    options = {"bad_signature": True} if forgery == "bad_signature" else {"timestamp": int(time.time()) - 600}
    status, _ = await slack.deliver_event(bot.events_url, mention, **options)  # type: ignore[arg-type]
    await bot.settle()

    assert status == 401
    assert bot.posts() == [] and slack.calls_to("reactions.add") == []
    async with bot.db.sessions() as session:
        assert await list_exchanges(session) == []


async def test_with_weaviate_down_the_asker_gets_an_error_reply_in_the_thread_and_the_error_is_logged(
        slack: SlackStandIn, closed_weaviate_deps: AnswerDeps, database: Database) -> None:
    async with started_bot(slack, closed_weaviate_deps, database) as bot:
        mention = await bot.ask(CHANNEL, QUESTION)
        reply = await bot.reply(CHANNEL, mention["ts"])
        exchange = await bot.exchange_of(CHANNEL, reply["ts"])
        errors = samples((await scrape(bot.running.url))[1])

    assert errors[("verbatim_answer_errors_total", frozenset({("cause", "store")}))] == 1, "operators see the cause"
    assert reply["thread_ts"] == mention["ts"]
    assert WORDING["en"].error.split(" — ")[0] in reply["text"]
    assert "Weaviate" not in reply["text"] and "Error" not in reply["text"], "no library text reaches the asker"
    assert exchange.outcome == "error" and exchange.error_class == "StoreError"
    assert exchange.id in str(reply["blocks"]), "the reply names the exchange, for whoever looks it up"


async def test_with_weaviate_down_api_ask_answers_503_with_the_contracts_error_object_and_no_library_text(
        slack: SlackStandIn, closed_weaviate_deps: AnswerDeps, database: Database) -> None:
    async with started_bot(slack, closed_weaviate_deps, database) as bot, aiohttp.ClientSession() as session:
        async with session.post(f"{bot.running.url}/api/ask", json={"question": QUESTION},
                                headers={"Authorization": f"Bearer {API_TOKEN}"}) as response:
            status, payload = response.status, await response.json()
    async with database.sessions() as session:
        [logged] = await list_exchanges(session)

    assert status == 503
    assert payload == {"status": "error", "answer": WORDING["en"].error, "citations": [], "nearest": [],
                       "exchange_id": logged.id, "timings_ms": {}}
    assert (logged.source, logged.outcome, logged.error_class) == ("api", "error", "StoreError")


async def test_a_rate_limited_reply_is_retried_after_retry_after_and_still_posted(bot: Bot) -> None:
    bot.slack.rate_limit("chat.postMessage", times=1, retry_after=1)
    mention = await bot.ask(CHANNEL, QUESTION)
    reply = await bot.reply(CHANNEL, mention["ts"])

    assert ANSWER in str(reply["blocks"])
    assert [r.status for r in bot.slack.requests if r.method == "chat.postMessage"] == [429, 200]


async def test_when_slack_refuses_the_answer_the_asker_still_gets_an_error_reply(bot: Bot) -> None:
    bot.slack.fail("chat.postMessage", "invalid_blocks", times=1)
    mention = await bot.ask(CHANNEL, QUESTION)
    reply = await bot.reply(CHANNEL, mention["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])
    errors = samples((await scrape(bot.running.url))[1])

    assert reply["text"].startswith("Sorry")
    assert exchange.outcome == "error" and exchange.error_class == "SlackApiError"
    assert errors[("verbatim_answer_errors_total", frozenset({("cause", "delivery")}))] == 1


@pytest.fixture
async def down_database(tmp_path: Path) -> AsyncIterator[Database]:
    """An exchange log whose database does not answer (its folder is missing), with a working journal."""
    down = await open_database(f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'verbatim.sqlite3'}",
                               tmp_path / "journal.jsonl")
    try:
        yield down
    finally:
        await down.engine.dispose()


async def test_with_the_exchange_log_down_questions_are_still_answered_and_kept_in_the_journal(
        slack: SlackStandIn, answer_deps: AnswerDeps, down_database: Database) -> None:
    async with started_bot(slack, answer_deps, down_database) as bot:
        mention = await bot.ask(CHANNEL, QUESTION)
        await bot.reply(CHANNEL, mention["ts"])
        await bot.deliver(slack.user_message(CHANNEL, FOLLOW_UP, thread_ts=mention["ts"]))
        await bot.reply(CHANNEL, mention["ts"], nth=2)  # the thread is known from Slack itself
        await bot.settle()

    assert down_database.journal.pending() == 2


async def test_even_an_unforeseen_failure_ends_in_an_error_reply_and_a_logged_exchange(
        slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> None:
    """A broken part that fails in a way nobody planned for (here: an embedder already shut down raises
    RuntimeError) reaches Bolt's error handler, which still answers the thread and logs the exchange."""
    stopped = E5Embedder()
    await stopped.aclose()
    async with started_bot(slack, dataclasses.replace(answer_deps, embedder=stopped), database) as bot:
        mention = await bot.ask(CHANNEL, QUESTION)
        reply = await bot.reply(CHANNEL, mention["ts"])
        exchange = await bot.exchange_of(CHANNEL, reply["ts"])
        await bot.settle()

    assert reply["thread_ts"] == mention["ts"] and reply["text"].startswith("Sorry")
    assert exchange.outcome == "error" and exchange.error_class == "RuntimeError"
    assert slack.reactions(CHANNEL, mention["ts"]) == {}, "the working reaction is taken off"


async def readiness(bot: Bot) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{bot.running.url}/readyz") as response:
            return response.status, await response.json()


async def test_readyz_reports_the_store_and_the_database_apart(slack: SlackStandIn, answer_deps: AnswerDeps,
                                                              database: Database) -> None:
    async with started_bot(slack, answer_deps, database) as bot:
        assert await readiness(bot) == (200, {"status": "ready", "store": "ok", "database": "ok"})


async def test_readyz_is_503_while_the_store_cannot_serve(slack: SlackStandIn, closed_weaviate_deps: AnswerDeps,
                                                          database: Database) -> None:
    async with started_bot(slack, closed_weaviate_deps, database) as bot:
        status, body = await readiness(bot)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{bot.running.url}/healthz") as health:
                alive = health.status
    assert (status, body["status"], body["store"], body["database"]) == (503, "not_ready", "unavailable", "ok")
    assert alive == 200  # liveness is not readiness: the process itself is fine


async def test_readyz_stays_ready_with_the_database_down_and_says_so(
        slack: SlackStandIn, answer_deps: AnswerDeps, down_database: Database) -> None:
    async with started_bot(slack, answer_deps, down_database) as bot:
        status, body = await readiness(bot)
    assert status == 200 and body["store"] == "ok" and body["database"].startswith("unavailable")
