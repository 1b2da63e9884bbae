"""Asking privately: a direct message, and the assistant pane (a thread started, a question, a follow-up), over
HTTP and Socket Mode alike; what a private question may see (DM_VISIBILITY, the pane's channel context, and Agent
View's: the channel the user views, from app_context_changed or the message's own app_context)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

import pytest

from bot.answer.service import AnswerDeps
from bot.slack.messages import SLACK_WORDING
from storage.records import ExchangeRecord
from tests.slack.harness import (
    ANSWER,
    FOLLOW_UP,
    QUESTION,
    TOPIC,
    Bot,
    Database,
    bot_settings,
    started_bot,
)
from tests.slack.test_conversation import quotes_in
from tests.standins import SlackStandIn

LEADS_QUESTION = "How much goodwill credit can a team lead approve without asking finance?"
LEADS_DOCUMENT = "leads-escalation-matrix"  # visible in C0LEADS only
ANNA, BORIS, GRETA = "U0ANNA", "U0BORIS", "U0GRETA"  # mapped by user id, in the mapped group, neither


class HandClock:
    """The membership caches' clock, moved by the test: expiry without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class PrivateBot:
    bot: Bot
    clock: HandClock


@pytest.fixture(params=["http", "socket"])
async def private_bot(request: pytest.FixtureRequest, slack: SlackStandIn, answer_deps: AnswerDeps,
                      database: Database) -> AsyncIterator[PrivateBot]:
    """The bot in either mode, with ANNA mapped to C0LEADS by id and the group S0LEADS (BORIS) by group."""
    slack.add_usergroup("S0LEADS", [BORIS])
    settings = bot_settings(slack, mode=request.param, dm_visibility=f"{ANNA}=C0LEADS,C0HR;S0LEADS=C0LEADS",
                            membership_cache_s=60)
    clock = HandClock()
    async with started_bot(slack, answer_deps, database, mode=request.param, settings=settings,
                           clock=clock) as running:
        yield PrivateBot(running, clock)


async def dm_answer(bot: Bot, text: str, *, user: str, thread_ts: str | None = None, nth: int = 1,
                    viewing: str | None | Literal[False] = False) -> tuple[dict, ExchangeRecord]:
    """Ask in the user's DM (or in a thread of it; with Agent View's ``app_context`` unless ``viewing`` is False);
    the bot's reply and its exchange."""
    message = bot.slack.direct_message(text, user=user, thread_ts=thread_ts, viewing=viewing)
    await bot.deliver(message)
    channel = bot.slack.dm_channel(user)
    reply = await bot.reply(channel, thread_ts or message["ts"], nth=nth)
    return reply, await bot.exchange_of(channel, reply["ts"])


def cited(exchange: ExchangeRecord) -> set[str]:
    return {c.document_id for c in exchange.citations} | {r.document_id for r in exchange.retrieved}


async def test_a_direct_message_is_answered_there_with_quotes_and_logged_once(any_bot: Bot) -> None:
    bot, slack = any_bot, any_bot.slack
    message = slack.direct_message(QUESTION)
    envelope = await bot.deliver(message)
    await bot.deliver(envelope, retry=1)  # Slack's retry: answered once all the same
    dm = slack.dm_channel()
    reply = await bot.reply(dm, message["ts"])
    exchange = await bot.exchange_of(dm, reply["ts"])
    await bot.settle()

    assert reply["thread_ts"] == message["ts"] and ANSWER in " ".join(quotes_in(reply))
    assert (exchange.outcome, exchange.channel_id, exchange.user_id) == ("answered", dm, slack.asker)
    assert len([p for p in bot.posts() if p["channel"] == dm]) == 1
    assert [c["name"] for c in slack.calls_to("reactions.add")] == ["eyes"], "no status line outside the pane"
    assert slack.calls_to("assistant.threads.setStatus") == []


async def test_an_assistant_thread_gets_prompts_a_title_a_status_line_and_answers_its_follow_up(any_bot: Bot) -> None:
    bot, slack = any_bot, any_bot.slack
    started = slack.assistant_thread_started()
    await bot.deliver(started)
    await bot.settle()
    dm, thread_ts = slack.dm_channel(), started["assistant_thread"]["thread_ts"]

    reply, exchange = await dm_answer(bot, QUESTION, user=slack.asker, thread_ts=thread_ts)
    follow_up, follow_up_exchange = await dm_answer(bot, FOLLOW_UP, user=slack.asker, thread_ts=thread_ts, nth=2)
    await bot.settle()

    thread = slack.assistant_threads[(dm, thread_ts)]
    assert [p["message"] for p in thread["prompts"]["prompts"]] == list(SLACK_WORDING["en"].prompts)
    assert thread["title"] == QUESTION, "titled from the first question, not the follow-up"
    assert [c["status"] for c in slack.calls_to("assistant.threads.setStatus")] == ["searching the documents…"] * 2
    assert thread["status"] == "", "cleared by the reply"
    assert slack.calls_to("reactions.add") == [], "the status line replaces :eyes:"
    assert reply["thread_ts"] == thread_ts and ANSWER in " ".join(quotes_in(reply))
    assert exchange.outcome == "answered" and exchange.thread_ts == thread_ts
    assert follow_up["thread_ts"] == thread_ts and TOPIC in (follow_up_exchange.query or "")


async def test_suggested_prompts_follow_the_users_slack_locale(bot: Bot) -> None:
    slack = bot.slack
    slack.add_user("U0KEIKO", locale="ja-JP")
    started = slack.assistant_thread_started(user="U0KEIKO")
    await bot.deliver(started)
    await bot.settle()

    thread = slack.assistant_threads[(slack.dm_channel("U0KEIKO"), started["assistant_thread"]["thread_ts"])]
    assert [p["message"] for p in thread["prompts"]["prompts"]] == list(SLACK_WORDING["ja"].prompts)
    assert thread["prompts"]["title"] == SLACK_WORDING["ja"].prompts_title


async def test_a_dm_thread_where_slack_refuses_the_status_line_gets_the_working_reaction(bot: Bot) -> None:
    slack = bot.slack
    first = slack.direct_message(QUESTION)
    await bot.deliver(first)
    await bot.reply(slack.dm_channel(), first["ts"])
    reply, _ = await dm_answer(bot, FOLLOW_UP, user=slack.asker, thread_ts=first["ts"], nth=2)
    await bot.settle()

    assert [r.error for r in slack.requests if r.method == "assistant.threads.setStatus"] == ["thread_not_found"]
    assert [c["name"] for c in slack.calls_to("reactions.add")] == ["eyes", "eyes"]
    assert reply["text"]


async def test_a_dm_sees_only_documents_visible_everywhere_by_default(private_bot: PrivateBot) -> None:
    _, exchange = await dm_answer(private_bot.bot, LEADS_QUESTION, user=GRETA)
    assert LEADS_DOCUMENT not in cited(exchange)


async def test_a_user_mapped_by_id_or_by_user_group_sees_the_mapped_channels(private_bot: PrivateBot) -> None:
    bot = private_bot.bot
    _, by_id = await dm_answer(bot, LEADS_QUESTION, user=ANNA)
    _, by_group = await dm_answer(bot, LEADS_QUESTION, user=BORIS)
    assert LEADS_DOCUMENT in {c.document_id for c in by_id.citations if c.kept}
    assert LEADS_DOCUMENT in {c.document_id for c in by_group.citations if c.kept}


async def test_the_pane_opened_from_a_channel_sees_it_only_while_the_user_is_a_member(
        private_bot: PrivateBot) -> None:
    bot, slack, clock = private_bot.bot, private_bot.bot.slack, private_bot.clock
    slack.add_member("C0LEADS", GRETA)
    inside = slack.assistant_thread_started(user=GRETA, context_channel="C0LEADS")
    outside = slack.assistant_thread_started(user="U0OTTO", context_channel="C0LEADS")
    for started in (inside, outside):
        await bot.deliver(started)
    await bot.settle()

    _, member = await dm_answer(bot, LEADS_QUESTION, user=GRETA, thread_ts=inside["assistant_thread"]["thread_ts"])
    _, stranger = await dm_answer(bot, LEADS_QUESTION, user="U0OTTO",
                                  thread_ts=outside["assistant_thread"]["thread_ts"])
    assert LEADS_DOCUMENT in {c.document_id for c in member.citations if c.kept}
    assert LEADS_DOCUMENT not in cited(stranger)

    slack.remove_member("C0LEADS", GRETA)  # she left the channel: known once the cached member list expires
    thread_ts = inside["assistant_thread"]["thread_ts"]
    _, cached = await dm_answer(bot, LEADS_QUESTION, user=GRETA, thread_ts=thread_ts, nth=2)
    clock.now += 61
    _, after = await dm_answer(bot, LEADS_QUESTION, user=GRETA, thread_ts=thread_ts, nth=3)
    assert LEADS_DOCUMENT in {c.document_id for c in cached.citations if c.kept}
    assert LEADS_DOCUMENT not in cited(after)
    assert len(slack.calls_to("conversations.members")) == 2


async def test_a_pane_moved_out_of_the_channel_sees_public_documents_only(private_bot: PrivateBot) -> None:
    bot, slack = private_bot.bot, private_bot.bot.slack
    slack.add_member("C0LEADS", GRETA)
    started = slack.assistant_thread_started(user=GRETA, context_channel="C0LEADS")
    await bot.deliver(started)
    thread_ts = started["assistant_thread"]["thread_ts"]
    await bot.deliver(slack.assistant_thread_context_changed(thread_ts, user=GRETA, context_channel=None))
    await bot.settle()

    _, exchange = await dm_answer(bot, LEADS_QUESTION, user=GRETA, thread_ts=thread_ts)
    assert LEADS_DOCUMENT not in cited(exchange)


async def test_agent_view_context_lets_a_dm_see_the_viewed_channel_only_while_the_user_is_a_member(
        private_bot: PrivateBot) -> None:
    bot, slack = private_bot.bot, private_bot.bot.slack
    slack.add_member("C0LEADS", GRETA)
    for user in (GRETA, "U0OTTO"):
        await bot.deliver(slack.app_context_changed(user=user, viewing="C0LEADS"))
    await bot.settle()

    _, member = await dm_answer(bot, LEADS_QUESTION, user=GRETA)
    _, stranger = await dm_answer(bot, LEADS_QUESTION, user="U0OTTO")
    assert LEADS_DOCUMENT in {c.document_id for c in member.citations if c.kept}
    assert LEADS_DOCUMENT not in cited(stranger)
    assert bot.posts()[-1]["channel"] == slack.dm_channel("U0OTTO"), "answered in the DM, nothing posted elsewhere"

    await bot.deliver(slack.app_context_changed(user=GRETA, viewing=None))  # she looks at no channel now
    await bot.settle()
    _, after = await dm_answer(bot, LEADS_QUESTION, user=GRETA)
    assert LEADS_DOCUMENT not in cited(after)


async def test_agent_view_context_from_slacks_reference_envelope_and_from_the_message_itself(
        private_bot: PrivateBot) -> None:
    """The user only in ``authorizations`` (Slack's sample) still counts; a DM's own ``app_context`` is the freshest
    word and wins over what app_context_changed said before."""
    bot, slack = private_bot.bot, private_bot.bot.slack
    slack.add_member("C0LEADS", GRETA)
    slack.add_member("C0LEADS", "U0OLGA")
    await bot.deliver(slack.app_context_changed(user=GRETA, viewing="C0LEADS", user_in_event=False))
    await bot.settle()
    _, recorded = await dm_answer(bot, LEADS_QUESTION, user=GRETA)
    _, viewing_nothing = await dm_answer(bot, LEADS_QUESTION, user=GRETA, viewing=None)

    _, stamped = await dm_answer(bot, LEADS_QUESTION, user="U0OLGA", viewing="C0LEADS")
    assert LEADS_DOCUMENT in {c.document_id for c in recorded.citations if c.kept}
    assert LEADS_DOCUMENT not in cited(viewing_nothing)
    assert LEADS_DOCUMENT in {c.document_id for c in stamped.citations if c.kept}
