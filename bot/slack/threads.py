"""Is this a thread the bot answered, and what was said in it before?

The exchange log is the source (``ExchangeLog.thread_history``): every answer the bot posted is an exchange with
its thread's ``thread_ts``, so one indexed query answers both questions and gives the earlier turns (question,
then the bot's answer text). Slack is asked (``conversations.replies``) only when the log cannot tell: the database is down, this
process answered in the thread a moment ago and the exchange is still on its way to the log, or the bot was
@mentioned in a thread of people talking (their messages are the history). Asking Slack about every thread
message in every channel would spend the Web API's rate limit on chatter.

``thread_messages`` is the one reader of a thread in Slack: ``conversations.replies`` page after page
(Slack's cursor), so a thread longer than a page is read to its end, here and in ``bot.slack.answering``
(the reply an instance that stopped may have posted).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.answer.types import Turn
from bot.exchange_log import LogUnavailable
from bot.slack.concurrency import ts_key
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import SlackQuestion
from bot.slack.text import clean_question

log = logging.getLogger(__name__)

THREAD_PAGE = 200  # messages per conversations.replies call: Slack's recommended most


@dataclass(frozen=True, slots=True)
class BotUser:
    """Who the bot is in this workspace (Bolt learns it from auth.test)."""

    user_id: str | None
    bot_id: str | None


@dataclass(frozen=True, slots=True)
class Thread:
    answered_by_bot: bool
    history: tuple[Turn, ...]


NOT_OURS = Thread(False, ())


async def thread_of(question: SlackQuestion, deps: SlackDeps, bot: BotUser) -> Thread:
    """The thread ``question`` was asked in: whether the bot answered there, and the earlier turns."""
    if not question.in_thread or question.thread_ts is None:
        return NOT_OURS
    try:
        history = await deps.log.thread_history(question.channel, question.thread_ts, deps.options.history_turns)
    except LogUnavailable as error:
        log.warning("exchange log unavailable (%s); asking Slack about thread %s in %s",
                    error.cause, question.thread_ts, question.channel)
        return await _from_slack(question, deps.client, bot, deps.options.history_turns)
    if history:  # a help channel's silent question is no reply of ours: no history (bot.exchange_log)
        return Thread(True, history)
    if question.mentioned or f"{question.channel}:{question.thread_ts}" in deps.threads:
        return await _from_slack(question, deps.client, bot, deps.options.history_turns)
    return NOT_OURS


async def thread_messages(client: AsyncWebClient, channel: str, thread_ts: str, *,
                          metadata: bool = False) -> AsyncIterator[dict[str, Any]]:
    """Every message of the thread, its parent first, read page by page; ``metadata``: with each message's
    metadata (``include_all_metadata``). A Web API failure is raised (``SLACK_ERRORS``) for the caller to judge.
    A caller that stops early closes it (``contextlib.aclosing``)."""
    extra = {"include_all_metadata": True} if metadata else {}
    cursor: str | None = None
    while True:
        response = await client.conversations_replies(channel=channel, ts=thread_ts, limit=THREAD_PAGE,
                                                      cursor=cursor, **extra)
        for message in response.get("messages") or ():
            yield message
        cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
        if cursor is None:
            return


async def _from_slack(question: SlackQuestion, client: AsyncWebClient, bot: BotUser, limit: int) -> Thread:
    assert question.thread_ts is not None
    before = ts_key(question.ts)
    try:
        earlier = [m async for m in thread_messages(client, question.channel, question.thread_ts)
                   if ts_key(str(m.get("ts", ""))) < before]
    except SLACK_ERRORS as error:
        log.warning("cannot read thread %s in %s (%s); not answering the message there",
                    question.thread_ts, question.channel, slack_error(error))
        return NOT_OURS
    ours = [_is_bot(m, bot) for m in earlier]
    turns = [Turn("assistant" if mine else "user", clean_question(str(m.get("text") or ""), bot.user_id))
             for m, mine in zip(earlier, ours)]
    return Thread(any(ours), tuple(t for t in turns if t.text)[-2 * limit:])


def _is_bot(message: dict[str, object], bot: BotUser) -> bool:
    return (bot.bot_id is not None and message.get("bot_id") == bot.bot_id) or (
        bot.user_id is not None and message.get("user") == bot.user_id)
