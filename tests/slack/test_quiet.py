"""A good Slack citizen speaks only when asked: what the bot must not answer, and what it answers once."""

from __future__ import annotations

from bot.slack.messages import SLACK_WORDING
from tests.slack.harness import QUESTION, Bot

CHANNEL = "C0SUPPORT"


async def test_the_bot_stays_quiet_on_messages_that_are_not_questions_to_it(bot: Bot) -> None:
    """Top-level chatter, people's own threads, edits, joins, other bots and the bot's own echo: no reply."""
    slack = bot.slack
    chatter = slack.user_message(CHANNEL, "Does anyone know the refund window?")
    own = slack.add_message(CHANNEL, {"user": slack.bot_user_id, "bot_id": slack.bot_id, "text": "an earlier reply"})
    events = [
        chatter,
        slack.user_message(CHANNEL, "I think it is 30 days", thread_ts=chatter["ts"]),  # a thread without the bot
        slack.channel_join(CHANNEL, "U0NEW"),
        slack.bot_message(CHANNEL, "Deploy finished", bot_id="B0CI"),
        slack.own_message_echo(CHANNEL, own["ts"]),
        slack.user_message(CHANNEL, "Thanks!", thread_ts=own["ts"]),  # the bot's post, but no answer of it logged
    ]
    for event in events:
        await bot.deliver(event)
    await bot.deliver(slack.message_changed(CHANNEL, chatter["ts"], "Does anyone know the refund window? (edited)"))
    await bot.settle()

    assert bot.posts() == []
    assert slack.calls_to("reactions.add") == []


async def test_a_mention_delivered_as_app_mention_and_as_message_is_answered_once(bot: Bot) -> None:
    slack = bot.slack
    mention = slack.app_mention(CHANNEL, QUESTION)
    await bot.deliver(slack.as_message_event(mention))
    await bot.deliver(mention)
    await bot.reply(CHANNEL, mention["ts"])
    await bot.settle()

    assert len(bot.posts()) == 1


async def test_a_bare_mention_gets_a_short_how_to_instead_of_an_answer(bot: Bot) -> None:
    """The asker sees one reply in the thread: how to ask, and nothing that looks like an answer (no quotes,
    no sources, no feedback buttons)."""
    mention = await bot.ask(CHANNEL, f"<@{bot.slack.bot_user_id}>")
    reply = await bot.reply(CHANNEL, mention["ts"])
    await bot.settle()
    how_to = SLACK_WORDING["en"].help

    assert reply["thread_ts"] == mention["ts"] and len(bot.posts()) == 1
    assert reply["text"] == how_to
    shown = [{k: v for k, v in block.items() if k != "block_id"} for block in reply["blocks"]]  # Slack adds ids
    assert shown == [{"type": "section", "text": {"type": "mrkdwn", "text": how_to}}]
