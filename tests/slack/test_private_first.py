"""Private-first help channels, through the real Bolt app and the Slack stand-in over HTTP and Socket Mode: the
answer is shown to the asker only (ephemeral, in the thread) with "Share in thread" and "Ask a person"; sharing
posts it once as the bot's reply, the quotes the asker read unchanged, and records who shared it; what the asker
saw is kept either way; a share Slack refuses is given back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from bot.slack.answering import REPLY_EVENT_TYPE
from bot.slack.events import HANDOFF_ACTION, HANDOFF_VALUE, SHARE_ACTION, SHARE_VALUE
from bot.slack.messages import SLACK_WORDING
from storage.handoffs import handoff_for
from storage.private_replies import private_reply_for
from tests.slack.harness import Bot, Database, bot_settings, started_bot
from tests.standins import SlackStandIn

HELP = "C0HELP"
RETURNS = "返品は何日以内に受け付けますか？"  # demo/corpus/ja/shipping.md answers it
REFUND_RU = "Как вернуть деньги за годовой тариф?"
JA, RU = SLACK_WORDING["ja"], SLACK_WORDING["ru"]


@pytest.fixture(params=["http", "socket"])
async def private_bot(request: pytest.FixtureRequest, tmp_path: Path, slack: SlackStandIn, answer_deps: AnswerDeps,
                      database: Database) -> AsyncIterator[Bot]:
    channels_file = tmp_path / "channels.toml"
    channels_file.write_text(f'[channels.{HELP}]\nmode = "every_question"\nhandoff = "S0ONCALL"\nthreshold = 0.0\n'
                             "private_first = true\n", encoding="utf-8")
    settings = bot_settings(slack, mode=request.param, channels_file=channels_file)
    async with started_bot(slack, answer_deps, database, mode=request.param, settings=settings) as running:
        yield running


def buttons(message: dict) -> list[str]:
    return [e.get("action_id", "") for b in message.get("blocks", []) if b["type"] == "actions"
            for e in b["elements"]]


def quotes(message: dict) -> list[str]:
    return [e["text"] for b in message.get("blocks", []) if b["type"] == "rich_text"
            for q in b["elements"] for e in q["elements"]]


async def shown_to_asker(bot: Bot, question: dict) -> dict:
    def ephemeral() -> dict:
        return [e for e in bot.slack.ephemerals(HELP) if e["thread_ts"] == question["ts"]][0]  # IndexError: not yet

    return await bot.slack.wait_for(ephemeral, timeout=60, what="the private answer")


async def test_the_answer_is_shown_to_the_asker_only_and_shared_in_the_thread_once(private_bot: Bot) -> None:
    bot, slack = private_bot, private_bot.slack
    question = slack.user_message(HELP, RETURNS)
    await bot.deliver(question)
    private = await shown_to_asker(bot, question)
    exchange = await bot.exchange_of(HELP, private["ts"])

    assert slack.bot_messages(HELP) == []  # nobody else sees anything
    assert private["user"] == slack.asker and exchange.outcome == "answered"
    assert buttons(private)[-2:] == [HANDOFF_ACTION, SHARE_ACTION]
    assert JA.private_note in str(private["blocks"]) and JA.share in str(private["blocks"])
    async with bot.db.sessions() as session:
        kept = await private_reply_for(session, exchange.id)
    assert kept is not None and kept.user_id == slack.asker and kept.shared_at is None
    assert quotes(kept.message) == quotes(private)  # what the asker saw is logged

    await bot.click_ephemeral(HELP, private["ts"], SHARE_ACTION, SHARE_VALUE)
    await bot.settle()
    await bot.click_ephemeral(HELP, private["ts"], SHARE_ACTION, SHARE_VALUE)  # a second click, or a redelivery
    await bot.settle()

    shared = slack.bot_messages(HELP)
    assert len(shared) == 1
    assert shared[0]["thread_ts"] == question["ts"]
    assert quotes(shared[0]) == quotes(private)  # the quotes the asker read, unchanged
    assert SHARE_ACTION not in buttons(shared[0]) and JA.private_note not in str(shared[0]["blocks"])
    assert HANDOFF_ACTION in buttons(shared[0])
    assert shared[0]["metadata"] == {"event_type": REPLY_EVENT_TYPE, "event_payload": {"exchange_id": exchange.id}}
    told = [e["text"] for e in slack.ephemerals(HELP) if e["ts"] != private["ts"]]
    assert told == [JA.share_done, JA.share_before]
    async with bot.db.sessions() as session:
        kept = await private_reply_for(session, exchange.id)
    assert kept is not None and (kept.shared_by, kept.shared_ts) == (slack.asker, shared[0]["ts"])
    assert (await bot.exchange_of(HELP, shared[0]["ts"])).id == exchange.id  # flags and votes land on it now


async def test_ask_a_person_on_the_private_answer_brings_the_group_into_the_thread(private_bot: Bot) -> None:
    bot, slack = private_bot, private_bot.slack
    question = await bot.ask(HELP, REFUND_RU)  # a mention in a private-first channel is answered privately too
    private = await shown_to_asker(bot, question)
    exchange = await bot.exchange_of(HELP, private["ts"])
    assert RU.share in str(private["blocks"]) and slack.bot_messages(HELP) == []

    await bot.click_ephemeral(HELP, private["ts"], HANDOFF_ACTION, HANDOFF_VALUE)
    await bot.settle()

    posted = [m for m in slack.thread(HELP, question["ts"]) if "S0ONCALL" in str(m.get("text"))]
    assert len(posted) == 1 and REFUND_RU in posted[0]["text"]
    async with bot.db.sessions() as session:
        handoff = await handoff_for(session, exchange.id)
    assert handoff is not None and handoff.user_id == slack.asker


async def test_a_share_slack_refuses_is_given_back_and_a_later_click_shares_it(private_bot: Bot) -> None:
    bot, slack = private_bot, private_bot.slack
    question = slack.user_message(HELP, RETURNS)
    await bot.deliver(question)
    private = await shown_to_asker(bot, question)
    await bot.exchange_of(HELP, private["ts"])

    slack.fail("chat.postMessage", "channel_not_found")
    await bot.click_ephemeral(HELP, private["ts"], SHARE_ACTION, SHARE_VALUE)
    await bot.settle()
    assert slack.bot_messages(HELP) == []
    assert slack.ephemerals(HELP)[-1]["text"] == JA.share_failed

    await bot.click_ephemeral(HELP, private["ts"], SHARE_ACTION, SHARE_VALUE)
    await bot.settle()
    assert len(slack.bot_messages(HELP)) == 1
    assert slack.ephemerals(HELP)[-1]["text"] == JA.share_done
