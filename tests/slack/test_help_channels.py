"""Help channels through the real Bolt app and the Slack stand-in, over HTTP and Socket Mode: in an
every-question channel a person's question is answered in its thread without a mention; chatter, bots, edits,
joins, messages to a person and threads a person answered are left alone; a question without enough support
gets silence, recorded; the channel is switched off by editing the file, without a restart."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.answer.service import AnswerDeps
from storage.claims import Lease, claim_event
from storage.exchanges import with_outcome
from tests.slack.harness import ANSWER, QUESTION, Bot, Database, bot_settings, started_bot
from tests.standins import SlackStandIn

HELP = "C0HELP"
ELSEWHERE = "C0GENERAL"


@dataclass
class HelpBot:
    bot: Bot
    channels_file: Path

    def configure(self, text: str) -> None:
        """Write the channels file as an admin would edit it (a later edit: a later modification time)."""
        before = self.channels_file.stat().st_mtime_ns if self.channels_file.exists() else 0
        self.channels_file.write_text(text, encoding="utf-8")
        info = self.channels_file.stat()
        if info.st_mtime_ns <= before:
            os.utime(self.channels_file, ns=(info.st_atime_ns, before + 1_000_000_000))


def every_question(threshold: float = 0.0, handoff: str = "S0ONCALL") -> str:
    return f'[channels.{HELP}]\nmode = "every_question"\nhandoff = "{handoff}"\nthreshold = {threshold}\n'


@pytest.fixture(params=["http", "socket"])
async def help_bot(request: pytest.FixtureRequest, tmp_path: Path, slack: SlackStandIn, answer_deps: AnswerDeps,
                   database: Database) -> AsyncIterator[HelpBot]:
    channels_file = tmp_path / "channels.toml"
    channels_file.write_text(every_question(), encoding="utf-8")
    settings = bot_settings(slack, mode=request.param, channels_file=channels_file)
    async with started_bot(slack, answer_deps, database, mode=request.param, settings=settings) as running:
        yield HelpBot(running, channels_file)


async def silent_exchanges(bot: Bot) -> list[str]:
    async with bot.db.sessions() as session:
        return [r.question for r in await with_outcome(session, "not_answered")]


async def test_a_question_in_a_help_channel_is_answered_in_its_thread_without_a_mention(help_bot: HelpBot) -> None:
    bot, slack = help_bot.bot, help_bot.bot.slack
    question = slack.user_message(HELP, QUESTION)
    await bot.deliver(question)
    reply = await bot.reply(HELP, question["ts"])
    exchange = await bot.exchange_of(HELP, reply["ts"])

    assert ANSWER in str(reply["blocks"])
    assert reply["thread_ts"] == question["ts"]
    assert (exchange.outcome, exchange.question) == ("answered", QUESTION)

    await bot.deliver(question, retry=1)  # Slack's retry of the same event: answered once
    await bot.settle()
    assert len(slack.bot_messages(HELP)) == 1


async def test_chatter_bots_edits_joins_and_messages_to_a_person_are_left_alone(help_bot: HelpBot) -> None:
    bot, slack = help_bot.bot, help_bot.bot.slack
    slack.add_user("U0AGENT", name="agent")
    statement = slack.user_message(HELP, "Deploying the new release to staging now.")
    await bot.deliver(statement)
    await bot.deliver(slack.bot_message(HELP, "How long is an account locked? (posted by an integration)"))
    await bot.deliver(slack.message_changed(HELP, statement["ts"], f"{QUESTION}"))
    await bot.deliver(slack.channel_join(HELP, "U0NEWBIE"))
    await bot.deliver(slack.user_message(HELP, f"<@U0AGENT> {QUESTION}"))
    await bot.deliver(slack.user_message(HELP, f"<!subteam^S0ONCALL> {QUESTION}"))
    await bot.deliver(slack.user_message(ELSEWHERE, QUESTION))  # a channel left in mention mode
    await bot.settle()

    assert slack.bot_messages(HELP) == [] and slack.bot_messages(ELSEWHERE) == []
    assert await silent_exchanges(bot) == [], "nothing was taken, so nothing is recorded"


async def test_a_question_below_the_channels_threshold_gets_silence_and_is_recorded(help_bot: HelpBot) -> None:
    bot, slack = help_bot.bot, help_bot.bot.slack
    help_bot.configure(every_question(threshold=1.0))
    await bot.deliver(slack.user_message(HELP, QUESTION))
    await bot.deliver(slack.user_message(HELP, "What is the airspeed velocity of an unladen swallow?"))
    await bot.settle()

    assert slack.bot_messages(HELP) == []
    assert sorted(await silent_exchanges(bot)) == sorted(
        [QUESTION, "What is the airspeed velocity of an unladen swallow?"])


async def test_a_thread_a_person_already_answered_is_left_to_them(help_bot: HelpBot) -> None:
    bot, slack = help_bot.bot, help_bot.bot.slack
    question = slack.add_message(HELP, {"user": slack.asker, "text": QUESTION})
    slack.add_message(HELP, {"user": "U0AGENT", "text": "15 minutes, I think", "thread_ts": question["ts"]})
    await bot.deliver(slack.user_message(HELP, QUESTION, ts=question["ts"]))
    await bot.settle()

    assert slack.bot_messages(HELP) == []
    assert await silent_exchanges(bot) == [QUESTION]


async def test_a_follow_up_in_the_bots_thread_is_answered_and_in_a_silent_thread_is_not(help_bot: HelpBot) -> None:
    bot, slack = help_bot.bot, help_bot.bot.slack
    question = slack.user_message(HELP, QUESTION)
    await bot.deliver(question)
    await bot.reply(HELP, question["ts"])
    await bot.deliver(slack.user_message(HELP, "Can support shorten it", thread_ts=question["ts"]))
    await bot.reply(HELP, question["ts"], nth=2)

    help_bot.configure(every_question(threshold=1.0))
    silent = slack.user_message(HELP, "Where do I find the VPN settings?")
    await bot.deliver(silent)
    await bot.settle()
    await bot.deliver(slack.user_message(HELP, "Try the IT portal", user="U0AGENT", thread_ts=silent["ts"]))
    await bot.settle()
    assert [m for m in slack.thread(HELP, silent["ts"]) if m.get("bot_id")] == []


async def test_a_channel_switched_off_in_the_file_is_left_alone_without_a_restart(help_bot: HelpBot) -> None:
    bot, slack = help_bot.bot, help_bot.bot.slack
    help_bot.configure(f'[channels.{HELP}]\nmode = "off"\n')
    await bot.deliver(slack.user_message(HELP, QUESTION))
    await bot.ask(HELP, QUESTION)  # off: not even a mention
    await bot.settle()
    assert slack.bot_messages(HELP) == []

    help_bot.configure(f'[channels.{HELP}]\nmode = "everything"\n')  # a bad edit: refused, "off" stays
    await bot.deliver(slack.user_message(HELP, QUESTION))
    await bot.settle()
    assert slack.bot_messages(HELP) == []

    help_bot.configure(every_question())
    question = slack.user_message(HELP, QUESTION)
    await bot.deliver(question)
    assert ANSWER in str((await bot.reply(HELP, question["ts"]))["blocks"])



async def test_a_help_channel_question_left_behind_by_a_crash_is_still_silent_without_support(
        tmp_path: Path, slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> None:
    """The claim remembers that nobody asked the bot: the start-up sweep that finishes it keeps the channel's rule."""
    channels_file = tmp_path / "channels.toml"
    channels_file.write_text(every_question(threshold=1.0), encoding="utf-8")
    question = slack.add_message(HELP, {"user": slack.asker, "text": QUESTION})
    asked = datetime.now(UTC) - timedelta(minutes=2)
    async with database.sessions() as session:  # claimed by an instance elsewhere whose lease ran out
        await claim_event(session, "Ev0LEFTBEHIND", exchange_id=str(uuid.uuid4()), created_at=asked,
                          source="slack", lease=Lease("another-host/4242/1", asked + timedelta(seconds=30), asked),
                          question=QUESTION, team_id=slack.team_id, channel_id=HELP, user_id=slack.asker,
                          thread_ts=question["ts"], question_ts=question["ts"], route={"unprompted": True})
    settings = bot_settings(slack, channels_file=channels_file)
    async with started_bot(slack, answer_deps, database, settings=settings) as bot:
        for _ in range(600):  # the sweep runs at start-up, in the background
            if await silent_exchanges(bot):
                break
            await asyncio.sleep(0.1)
        await bot.settle()
        assert await silent_exchanges(bot) == [QUESTION]
    assert slack.bot_messages(HELP) == []
