"""What operators see of the running server: ``GET /metrics`` (Prometheus) and ``LOG_FORMAT=json`` log lines.

Against the real server (Bolt, aiohttp, the Slack stand-in), a real mention, a real database.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.answer.service import AnswerDeps
from bot.api.app import web_application
from bot.api.deps import ServerState
from bot.log_format import configure_logging
from bot.serve import api_deps
from tests.slack.harness import (
    METRICS_TOKEN,
    QUESTION,
    Bot,
    Database,
    bot_settings,
    started_bot,
)
from tests.standins import SlackStandIn
from tests.standins._common import serve

STAGES = ("search", "rerank", "compose", "verify", "total")


async def scrape(url: str, token: str | None = METRICS_TOKEN) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics", headers=headers) as response:
        return response.status, await response.text()


def samples(exposition: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text exposition, by (name, labels)."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(exposition) for s in family.samples}


async def answered_mention(bot: Bot) -> str:
    """Mention the bot with the demo question; the exchange id of its logged answer."""
    mention = await bot.ask("C0SUPPORT", QUESTION)
    reply = await bot.reply("C0SUPPORT", mention["ts"])
    await bot.settle()
    return (await bot.exchange_of("C0SUPPORT", reply["ts"])).id


async def test_metrics_count_a_mentions_outcome_and_its_stage_latencies(bot: Bot) -> None:
    await answered_mention(bot)
    status, body = await scrape(bot.running.url)
    values = samples(body)

    assert status == 200
    assert values[("verbatim_questions_total", frozenset({("source", "slack"), ("outcome", "answered")}))] == 1
    for stage in STAGES:
        assert values[("verbatim_stage_seconds_count", frozenset({("stage", stage)}))] == 1, stage
        assert values[("verbatim_stage_seconds_sum", frozenset({("stage", stage)}))] > 0, stage
    assert values[("verbatim_slack_event_to_reply_seconds_count", frozenset())] == 1
    assert values[("verbatim_journal_backlog", frozenset())] == 0
    assert values[("verbatim_journal_dead_letters", frozenset())] == 0
    assert values[("verbatim_pending_exchanges", frozenset())] == 0


async def test_an_answer_the_log_refuses_is_still_posted_set_aside_and_counted(bot: Bot, database: Database) -> None:
    """A rule the exchange log holds that the answer breaks (here: a trigger refusing every citation): the asker
    gets the answer, nothing waits in the journal for a database that is up, and /metrics shows one dead letter."""
    async with database.engine.begin() as connection:
        await connection.exec_driver_sql(
            "CREATE TRIGGER refuse_citations BEFORE INSERT ON citations BEGIN SELECT RAISE(ABORT, 'refused'); END")
    mention = await bot.ask("C0SUPPORT", QUESTION)
    reply = await bot.reply("C0SUPPORT", mention["ts"])
    await bot.settle()
    values = samples((await scrape(bot.running.url))[1])

    assert not reply["text"].startswith("Sorry")
    assert values[("verbatim_journal_dead_letters", frozenset())] == 1
    assert values[("verbatim_journal_backlog", frozenset())] == 0
    [letter] = database.journal.dead_letters()
    assert letter.record.question == QUESTION and letter.error == "IntegrityError"


@pytest.mark.parametrize("token", [None, "wrong-token", ""])
async def test_metrics_without_the_metrics_token_are_refused_with_401(bot: Bot, token: str | None) -> None:
    status, body = await scrape(bot.running.url, token)

    assert status == 401 and "Bearer" in json.loads(body)["error"]


async def test_metrics_are_not_served_when_no_metrics_token_is_set(bot: Bot) -> None:
    application = web_application(api_deps(bot.deps), ServerState("http"), api_token=None, metrics_token=None)
    async with serve(application) as url:
        status, _ = await scrape(url)

    assert status == 404


@contextmanager
def json_logs() -> Iterator[io.StringIO]:
    """The server's logging as LOG_FORMAT=json configures it, written to a buffer for the block."""
    root = logging.getLogger()
    level = root.level
    buffer = io.StringIO()
    handler = configure_logging("INFO", "json", stream=buffer)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def question_lines(buffer: io.StringIO) -> list[dict]:
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]  # every line is one JSON object
    assert lines and all({"time", "level", "logger", "event", "message"} <= set(line) for line in lines)
    return [line for line in lines if line["event"] == "question"]


async def test_json_logs_carry_the_exchange_and_slack_ids_but_not_the_question(bot: Bot) -> None:
    with json_logs() as buffer:
        exchange_id = await answered_mention(bot)

    [line] = question_lines(buffer)
    assert line["level"] == "INFO" and line["exchange_id"] == exchange_id and line["outcome"] == "answered"
    assert line["channel"] == "C0SUPPORT" and line["slack_event_id"] and line["reply_ts"]
    assert set(STAGES) <= set(line["timings_ms"])
    assert "question" not in line and QUESTION not in buffer.getvalue()
    assert bot.slack.bot_token not in buffer.getvalue() and bot.slack.signing_secret not in buffer.getvalue()


async def test_json_logs_carry_the_question_when_log_questions_is_set(slack: SlackStandIn, answer_deps: AnswerDeps,
                                                                      database: Database) -> None:
    settings = bot_settings(slack, log_questions=True)
    with json_logs() as buffer:
        async with started_bot(slack, answer_deps, database, settings=settings) as bot:
            exchange_id = await answered_mention(bot)

    [line] = question_lines(buffer)
    assert line["exchange_id"] == exchange_id and line["question"] == QUESTION
