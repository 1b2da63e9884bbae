"""Feedback buttons under an answer: a click is acked and recorded as that user's vote, over HTTP (a form body)
and Socket Mode (an interactive envelope) alike; a 👎 puts the exchange in the review queue; reactions still flag."""

from __future__ import annotations

from bot.review.queries import review_queue
from bot.slack.events import FEEDBACK_ACTION
from storage.feedback import feedback_for
from storage.flags import flags_for
from tests.slack.harness import LEAD, QUESTION, Bot

CHANNEL = "C0SUPPORT"


async def test_a_click_on_the_feedback_buttons_is_recorded_as_that_users_vote(any_bot: Bot) -> None:
    bot, slack = any_bot, any_bot.slack
    question = await bot.ask(CHANNEL, QUESTION)
    reply = await bot.reply(CHANNEL, question["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])
    buttons = [e for b in reply["blocks"] if b["type"] == "context_actions" for e in b["elements"]]
    assert [e["type"] for e in buttons] == ["feedback_buttons"]

    await bot.click(CHANNEL, reply["ts"], FEEDBACK_ACTION, "positive", user="U0ASKER")
    await bot.click(CHANNEL, reply["ts"], FEEDBACK_ACTION, "negative", user="U0AGENT")
    await bot.deliver(slack.reaction_added(CHANNEL, reply["ts"], "x", user=LEAD))  # a lead's flag, as before
    await bot.settle()
    async with bot.db.sessions() as session:
        votes = await feedback_for(session, exchange.id)
        flags = await flags_for(session, exchange.id)
        queue = await review_queue(session, unhappy=True)

    assert {(v.user_id, v.positive) for v in votes} == {("U0ASKER", True), ("U0AGENT", False)}
    assert [(f.user_id, f.is_flag) for f in flags] == [(LEAD, True)], "a click is not a flag"
    assert [(s.id, s.unhappy) for s in queue] == [(exchange.id, 1)]
    if bot.mode == "socket":
        assert all(ack.get("envelope_id") for ack in slack.acks)


async def test_a_click_on_the_plain_button_pair_counts_too_and_a_click_elsewhere_is_ignored(bot: Bot) -> None:
    slack = bot.slack
    question = await bot.ask(CHANNEL, QUESTION)
    reply = await bot.reply(CHANNEL, question["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])
    other = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "not an answer",
                                        "blocks": [{"type": "actions", "elements": [
                                            {"type": "button", "action_id": f"{FEEDBACK_ACTION}_negative",
                                             "value": "negative", "text": {"type": "plain_text", "text": "👎"}}]}]})

    await bot.click(CHANNEL, reply["ts"], f"{FEEDBACK_ACTION}_negative", "negative", user="U0ASKER")
    await bot.click(CHANNEL, other["ts"], f"{FEEDBACK_ACTION}_negative", "negative", user="U0ASKER")
    await bot.settle()
    async with bot.db.sessions() as session:
        votes = await feedback_for(session, exchange.id)

    assert [(v.user_id, v.positive) for v in votes] == [("U0ASKER", False)]
