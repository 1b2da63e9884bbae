"""Hand-off from a DM or the assistant pane, through the real Bolt app and the Slack stand-in over HTTP and Socket
Mode: with ESCALATION_CHANNEL set, the private answer carries two "Ask a person" buttons behind Slack's confirm
dialog; a click posts once in the escalation channel with a link to the question, never its text unless the asker
chose "with my question"; without the setting there is no button in DMs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from bot.slack.events import HANDOFF_ACTION, HANDOFF_VALUE, HANDOFF_WITH_QUESTION
from bot.slack.messages import SLACK_WORDING
from storage.handoffs import handoff_for
from tests.slack.harness import QUESTION, Bot, Database, bot_settings, started_bot
from tests.standins import SlackStandIn

ESCALATE = "C0ESCALATE"
REFUND_RU = "Как вернуть деньги за годовой тариф?"
RU = SLACK_WORDING["ru"]


@pytest.fixture(params=["http", "socket"])
async def dm_bot(request: pytest.FixtureRequest, tmp_path: Path, slack: SlackStandIn, answer_deps: AnswerDeps,
                 database: Database) -> AsyncIterator[Bot]:
    settings = bot_settings(slack, mode=request.param, escalation_channel=ESCALATE,
                            channels_file=tmp_path / "channels.toml")
    async with started_bot(slack, answer_deps, database, mode=request.param, settings=settings) as running:
        yield running


async def ask_privately(bot: Bot, text: str) -> tuple[dict, dict]:
    question = bot.slack.direct_message(text)
    await bot.deliver(question)
    return question, await bot.reply(question["channel"], question["ts"])


def hand_off_buttons(reply: dict) -> list[dict]:
    return [e for b in reply["blocks"] if b["type"] == "actions" for e in b["elements"]
            if e["action_id"].startswith(HANDOFF_ACTION)]


async def test_a_dm_hand_off_posts_a_link_once_and_never_the_text_without_consent(dm_bot: Bot) -> None:
    bot, slack = dm_bot, dm_bot.slack
    question, reply = await ask_privately(bot, REFUND_RU)
    dm = question["channel"]
    exchange = await bot.exchange_of(dm, reply["ts"])

    without, with_text = hand_off_buttons(reply)
    assert (without["value"], with_text["value"]) == (HANDOFF_VALUE, HANDOFF_WITH_QUESTION)
    assert without["confirm"]["text"]["text"] == RU.confirm_without  # Slack shows it before the click is sent
    assert with_text["confirm"]["text"]["text"] == RU.confirm_with

    await bot.click(dm, reply["ts"], without["action_id"], HANDOFF_VALUE)
    await bot.settle()
    await bot.click(dm, reply["ts"], with_text["action_id"], HANDOFF_WITH_QUESTION)  # after it: nothing more
    await bot.settle()

    [posted] = slack.messages(ESCALATE)
    assert f"<@{slack.asker}>" in posted["text"] and f"/archives/{dm}/p{question['ts'].replace('.', '')}" in posted["text"]
    assert REFUND_RU not in posted["text"]  # the private text stays private
    assert [e["text"] for e in slack.ephemerals(dm)] == [RU.escalation_done.format(where=f"<#{ESCALATE}>"),
                                                         RU.handoff_before]
    async with bot.db.sessions() as session:
        handoff = await handoff_for(session, exchange.id)
    assert handoff is not None and handoff.message_ts == posted["ts"]


async def test_with_my_question_the_text_goes_with_the_link(dm_bot: Bot) -> None:
    bot, slack = dm_bot, dm_bot.slack
    question, reply = await ask_privately(bot, QUESTION)
    _, with_text = hand_off_buttons(reply)
    await bot.click(question["channel"], reply["ts"], with_text["action_id"], HANDOFF_WITH_QUESTION)
    await bot.settle()
    [posted] = slack.messages(ESCALATE)
    assert QUESTION in posted["text"] and "/archives/" in posted["text"]


async def test_without_an_escalation_channel_a_dm_answer_has_no_hand_off_button(
        tmp_path: Path, slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> None:
    settings = bot_settings(slack, channels_file=tmp_path / "channels.toml")
    async with started_bot(slack, answer_deps, database, settings=settings) as bot:
        _, reply = await ask_privately(bot, QUESTION)
    assert hand_off_buttons(reply) == []
