"""A channel's ``sources`` (channels.toml) through the real Bolt app and the Slack stand-in, over HTTP and Socket
Mode: a question asked in a narrowed channel is answered only from the listed sources, while the same question
in a channel without the key (listed in the file or not) is answered from everything the channel may see."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from storage.records import ExchangeRecord
from tests.slack.harness import ANSWER, QUESTION, Bot, Database, bot_settings, started_bot
from tests.slack.test_conversation import quotes_in
from tests.standins import SlackStandIn

NARROWED, LISTED, ELSEWHERE = "C0BILLING", "C0OPS", "C0GENERAL"
LOCKOUT_DOCUMENT = "accounts-password-reset"  # where QUESTION's answer is
RU_QUESTION = "Через сколько минут оператор первой линии должен ответить клиенту?"
RU_ANSWER = "в течение 15 минут"

CHANNELS = f"""\
[channels.{NARROWED}]
mode = "mention"
sources = ["billing-", "ru-"]

[channels.{LISTED}]
mode = "mention"
"""


@pytest.fixture(params=["http", "socket"])
async def sources_bot(request: pytest.FixtureRequest, tmp_path: Path, slack: SlackStandIn, answer_deps: AnswerDeps,
                      database: Database) -> AsyncIterator[Bot]:
    channels_file = tmp_path / "channels.toml"
    channels_file.write_text(CHANNELS, encoding="utf-8")
    settings = bot_settings(slack, mode=request.param, channels_file=channels_file)
    async with started_bot(slack, answer_deps, database, mode=request.param, settings=settings) as running:
        yield running


async def asked(bot: Bot, channel: str, text: str) -> tuple[dict, ExchangeRecord]:
    mention = await bot.ask(channel, text)
    reply = await bot.reply(channel, mention["ts"])
    return reply, await bot.exchange_of(channel, reply["ts"])


def documents_of(exchange: ExchangeRecord) -> set[str]:
    """Every document the answer searched, cited or showed as nearest."""
    return {c.document_id for c in exchange.citations} | {r.document_id for r in exchange.retrieved}


async def test_a_narrowed_channel_answers_only_from_its_sources_and_others_from_everything(
        sources_bot: Bot) -> None:
    bot = sources_bot
    _, narrowed = await asked(bot, NARROWED, QUESTION)
    listed_reply, listed = await asked(bot, LISTED, QUESTION)
    elsewhere_reply, elsewhere = await asked(bot, ELSEWHERE, QUESTION)

    assert narrowed.retrieved, "the search still ran, over the allowed documents"
    assert all(d.startswith(("billing-", "ru-")) for d in documents_of(narrowed)), documents_of(narrowed)
    assert LOCKOUT_DOCUMENT not in documents_of(narrowed)
    for reply, exchange in ((listed_reply, listed), (elsewhere_reply, elsewhere)):
        assert exchange.outcome == "answered"
        assert LOCKOUT_DOCUMENT in {c.document_id for c in exchange.citations if c.kept}
        assert ANSWER in " ".join(quotes_in(reply))


async def test_a_narrowed_channel_still_answers_from_a_listed_source_in_russian(sources_bot: Bot) -> None:
    reply, exchange = await asked(sources_bot, NARROWED, RU_QUESTION)
    assert exchange.outcome == "answered"
    assert {c.document_id for c in exchange.citations if c.kept} == {"ru-first-line-guide"}
    assert RU_ANSWER in " ".join(quotes_in(reply))
