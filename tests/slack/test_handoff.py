"""The "Ask a person" button, through the real Bolt app and the Slack stand-in over HTTP and Socket Mode: where a
channel names a hand-off group, every answer and no-support reply carries it; a click posts once in the thread,
mentioning the group with the question and the bot's outcome in one line, tells the clicker, is recorded (who,
when) and shows in the review queue as handed off; a second click and a redelivered click post nothing more.
A 👎 offers its clicker the same button."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from bot.review.formatting import flags_label
from bot.review.queries import review_queue
from bot.slack.events import FEEDBACK_ACTION, HANDOFF_ACTION, HANDOFF_VALUE, NEGATIVE, POSITIVE, handoff_value
from bot.slack.messages import SLACK_WORDING
from storage.handoffs import handoff_for
from tests.slack.harness import QUESTION, Bot, Database, bot_settings, started_bot
from tests.standins import SlackStandIn

HELP = "C0HELP"
PLAIN = "C0GENERAL"
UNSUPPORTED = "What is the airspeed velocity of an unladen swallow?"
SHIPPING_JA = "送料はいくらですか？"  # demo/corpus/ja/shipping.md answers it
JA = SLACK_WORDING["ja"]


@pytest.fixture(params=["http", "socket"])
async def handoff_bot(request: pytest.FixtureRequest, tmp_path: Path, slack: SlackStandIn, answer_deps: AnswerDeps,
                      database: Database) -> AsyncIterator[Bot]:
    channels_file = tmp_path / "channels.toml"
    channels_file.write_text(f'[channels.{HELP}]\nmode = "every_question"\nhandoff = "S0ONCALL"\nthreshold = 0.0\n',
                             encoding="utf-8")
    settings = bot_settings(slack, mode=request.param, channels_file=channels_file)
    async with started_bot(slack, answer_deps, database, mode=request.param, settings=settings) as running:
        yield running


def buttons(reply: dict) -> list[str]:
    return [e.get("action_id", "") for b in reply["blocks"] if b["type"] == "actions" for e in b["elements"]]


async def test_a_click_brings_the_group_in_once_and_shows_in_the_queue(handoff_bot: Bot) -> None:
    bot, slack = handoff_bot, handoff_bot.slack
    question = await bot.ask(HELP, QUESTION)
    reply = await bot.reply(HELP, question["ts"])
    exchange = await bot.exchange_of(HELP, reply["ts"])
    assert HANDOFF_ACTION in buttons(reply)

    await bot.click(HELP, reply["ts"], HANDOFF_ACTION, HANDOFF_VALUE, user=slack.asker)
    await bot.settle()
    slack.add_member(HELP, "U0SOMEONE")  # a colleague in the channel (Slack tells members only, ephemerally)
    await bot.click(HELP, reply["ts"], HANDOFF_ACTION, HANDOFF_VALUE, user="U0SOMEONE")  # a second click
    await bot.click(HELP, reply["ts"], HANDOFF_ACTION, HANDOFF_VALUE, user=slack.asker)  # as if redelivered
    await bot.settle()

    handoffs = [m for m in slack.thread(HELP, question["ts"]) if "S0ONCALL" in str(m.get("text"))]
    assert len(handoffs) == 1
    line = handoffs[0]["text"]
    assert "\n" not in line
    assert line.startswith("<!subteam^S0ONCALL>") and f"<@{slack.asker}>" in line
    assert QUESTION in line and "answered with quotes" in line
    told = [(e["user"], e["text"]) for e in slack.ephemerals(HELP)]
    assert told[0] == (slack.asker, "Done: I asked <!subteam^S0ONCALL> to help you in this thread.")
    assert [text for _, text in told[1:]] == ["A person was already asked to help in this thread."] * 2

    async with bot.db.sessions() as session:
        handoff = await handoff_for(session, exchange.id)
        queue = await review_queue(session)
    assert handoff is not None and handoff.user_id == slack.asker and handoff.message_ts == handoffs[0]["ts"]
    assert [(s.id, s.handed_off) for s in queue] == [(exchange.id, True)]
    assert flags_label(queue[0].lead_flags, queue[0].unresolved_lead_flags, queue[0].unhappy,
                       queue[0].handed_off) == "handed off"


async def test_a_no_support_reply_carries_the_button_and_says_so_when_handed_off(handoff_bot: Bot) -> None:
    bot, slack = handoff_bot, handoff_bot.slack
    question = await bot.ask(HELP, UNSUPPORTED)  # a mention: it gets its no-support reply, as always
    reply = await bot.reply(HELP, question["ts"])
    assert HANDOFF_ACTION in buttons(reply)

    await bot.click(HELP, reply["ts"], HANDOFF_ACTION, HANDOFF_VALUE)
    await bot.settle()
    line = next(m["text"] for m in slack.thread(HELP, question["ts"]) if "S0ONCALL" in str(m.get("text")))
    assert "found no support in the documents" in line


async def test_a_channel_without_a_hand_off_group_shows_no_button(handoff_bot: Bot) -> None:
    bot = handoff_bot
    question = await bot.ask(PLAIN, QUESTION)
    reply = await bot.reply(PLAIN, question["ts"])
    assert HANDOFF_ACTION not in buttons(reply)


async def test_a_hand_off_slack_refuses_is_given_back_and_a_later_click_posts_it(handoff_bot: Bot) -> None:
    bot, slack = handoff_bot, handoff_bot.slack
    question = await bot.ask(HELP, QUESTION)
    reply = await bot.reply(HELP, question["ts"])
    exchange = await bot.exchange_of(HELP, reply["ts"])

    slack.fail("chat.postMessage", "channel_not_found")
    await bot.click(HELP, reply["ts"], HANDOFF_ACTION, HANDOFF_VALUE)
    await bot.settle()
    async with bot.db.sessions() as session:
        assert await handoff_for(session, exchange.id) is None
    assert "could not reach anyone" in slack.ephemerals(HELP)[-1]["text"]

    await bot.click(HELP, reply["ts"], HANDOFF_ACTION, HANDOFF_VALUE)
    await bot.settle()
    assert len([m for m in slack.thread(HELP, question["ts"]) if "S0ONCALL" in str(m.get("text"))]) == 1


async def test_a_thumbs_down_offers_its_clicker_a_person_and_that_click_hands_off_once(handoff_bot: Bot) -> None:
    bot, slack = handoff_bot, handoff_bot.slack
    question = await bot.ask(HELP, SHIPPING_JA)
    reply = await bot.reply(HELP, question["ts"])
    exchange = await bot.exchange_of(HELP, reply["ts"])

    await bot.click(HELP, reply["ts"], FEEDBACK_ACTION, NEGATIVE)
    offer = await slack.wait_for(lambda: slack.ephemerals(HELP)[0], timeout=60, what="the offer of a person")
    assert (offer["user"], offer["thread_ts"]) == (slack.asker, question["ts"])
    assert JA.handoff_offer in str(offer["blocks"]) and JA.ask_person in str(offer["blocks"])

    await bot.click_ephemeral(HELP, offer["ts"], HANDOFF_ACTION, handoff_value(reply["ts"]))
    await bot.settle()
    await bot.click(HELP, reply["ts"], HANDOFF_ACTION, HANDOFF_VALUE)  # and the answer's own button after it
    await bot.settle()

    posted = [m for m in slack.thread(HELP, question["ts"]) if "S0ONCALL" in str(m.get("text"))]
    assert len(posted) == 1 and SHIPPING_JA in posted[0]["text"]
    assert [e["text"] for e in slack.ephemerals(HELP)[1:]] == [JA.handoff_done.format(who="<!subteam^S0ONCALL>"),
                                                               JA.handoff_before]
    async with bot.db.sessions() as session:
        handoff = await handoff_for(session, exchange.id)
    assert handoff is not None and handoff.user_id == slack.asker


async def test_a_thumbs_up_or_a_thumbs_down_where_nobody_takes_hand_offs_offers_nothing(handoff_bot: Bot) -> None:
    bot, slack = handoff_bot, handoff_bot.slack
    helped = await bot.reply(HELP, (await bot.ask(HELP, QUESTION))["ts"])
    elsewhere = await bot.reply(PLAIN, (await bot.ask(PLAIN, QUESTION))["ts"])
    await bot.click(HELP, helped["ts"], FEEDBACK_ACTION, POSITIVE)
    await bot.click(PLAIN, elsewhere["ts"], FEEDBACK_ACTION, NEGATIVE)
    await bot.settle()
    assert slack.ephemerals() == []
