"""One question from Slack, from its event to its logged reply. Every taken question ends in a reply.

    take      in-process guard (event id and message) -> the channel's line -> (follow-up: is it our thread?)
              -> claim the event id in the exchange log (at most once across restarts and replicas)
    working   :eyes: on the question while it waits and is answered
    ask       bot.answer.ask, on its turn in the channel, with the thread's earlier turns as history: it answers,
              calls back here to reply (Block Kit in the question's thread; an error reply if answering or
              posting failed), and records the exchange (through the journal if the database is down)

Errors the answer path expects (``ANSWER_ERRORS``: retrieval's root, a timeout) become an error reply and an
error exchange there. Anything else is a bug: it propagates to Bolt's error handler (``listeners.on_error``),
which still replies in the thread and logs the exchange, using the ``Attempt`` this module keeps up to date.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.answer.ask import Asked, Delivery, Origin, ask, record_failure
from bot.answer.exchange import SlackContext
from bot.answer.query import Turn
from bot.answer.service import AnswerResult, Question
from bot.slack.blocks import (
    RenderOptions,
    SlackMessage,
    answer_message,
    error_message,
    help_message,
)
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import Mention
from bot.slack.threads import BotUser, thread_of
from storage.exchanges import claim_event
from storage.journal import DATABASE_DOWN

log = logging.getLogger(__name__)


@dataclass
class Attempt:
    """What has happened to one question so far (read by the error handler if a bug interrupts it)."""

    exchange_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    taken: bool = False  # claimed: this process owes the asker a reply
    reply_ts: str | None = None
    logged: bool = False


async def take_question(question: Mention, deps: SlackDeps, bot: BotUser, attempt: Attempt) -> None:
    """Answer ``question`` in its thread unless it was already taken (here, or by another replica)."""
    if not deps.seen.first_time(question.event_id, question.message_key):
        log.info("event %s (retry %d) already taken in this process: dropped", question.event_id, question.retry)
        return
    with deps.in_flight.track(), deps.order.reserve(question.channel, question.ts) as ticket:
        history: tuple[Turn, ...] = ()
        if question.in_thread:
            thread = await thread_of(question, deps, bot)
            if not question.mentioned and not thread.answered_by_bot:
                return  # a conversation among people in a thread the bot is not part of
            history = thread.history
        if question.text and not await _claim(question, deps, attempt):
            return
        attempt.taken = True
        await _react(deps, "add", question)
        try:
            await ticket.turn()
            await _answer_and_reply(question, history, deps, attempt)
        finally:
            await _react(deps, "remove", question)


async def _answer_and_reply(question: Mention, history: tuple[Turn, ...], deps: SlackDeps, attempt: Attempt) -> None:
    if not question.text:  # "@verbatim" and nothing else
        await post_reply(question, help_message(question.language), deps, attempt)
        return

    async def deliver(result: AnswerResult | None, error: BaseException | None) -> Delivery:
        refused = None
        if result is not None:  # Slack may refuse the answer: then the asker is told plainly
            refused = await post_reply(question, answer_message(result, _render_options(deps)), deps, attempt)
        if (error or refused) is not None and attempt.reply_ts is None:
            await post_reply(question, error_message(question.language, attempt.exchange_id), deps, attempt)
        return Delivery(attempt.reply_ts, refused)

    asked = await ask(_service_question(question, history, deps), deps.answer, deps.recorder,
                      _origin(question, attempt), limits=deps.limits, deliver=deliver)
    _logged(question, attempt, asked)


def _service_question(question: Mention, history: tuple[Turn, ...], deps: SlackDeps) -> Question:
    return Question(question.text[: deps.options.max_question_chars], channel=question.channel, history=history,
                    language=question.language)


def _render_options(deps: SlackDeps) -> RenderOptions:
    return RenderOptions(flag_reaction=deps.options.first_flag_reaction)


def _origin(question: Mention, attempt: Attempt) -> Origin:
    slack = SlackContext(team_id=question.team_id, channel_id=question.channel, user_id=question.user,
                         thread_ts=question.reply_thread, question_ts=question.ts, reply_ts=attempt.reply_ts,
                         event_id=question.event_id or None)
    return Origin("slack", attempt.exchange_id, attempt.created_at, slack)


async def _claim(question: Mention, deps: SlackDeps, attempt: Attempt) -> bool:
    """True when this process may answer: first to claim the event id, or the log is down (guard holds)."""
    if not question.event_id:
        return True
    try:
        async with deps.sessions() as session:
            first = await claim_event(
                session, question.event_id, exchange_id=attempt.exchange_id, created_at=attempt.created_at,
                source="slack", question=question.text, team_id=question.team_id, channel_id=question.channel,
                user_id=question.user, thread_ts=question.reply_thread, question_ts=question.ts)
    except DATABASE_DOWN as error:
        log.warning("cannot claim event %s in the exchange log (%s); answering it once from this process",
                    question.event_id, type(error).__name__)
        return True
    if not first:
        log.info("event %s (retry %d) already claimed by another instance: dropped", question.event_id,
                 question.retry)
    return first


async def post_reply(question: Mention, message: SlackMessage, deps: SlackDeps, attempt: Attempt) -> BaseException | None:
    """Post ``message`` in the question's thread; None when it was posted, else the Web API's error."""
    try:
        response = await deps.client.chat_postMessage(
            channel=question.channel, thread_ts=question.reply_thread, unfurl_links=False, unfurl_media=False,
            **message.as_kwargs())
    except SLACK_ERRORS as error:
        log.error("cannot post the reply to event %s in %s: %s", question.event_id, question.channel,
                  slack_error(error))
        return error
    attempt.reply_ts = str(response.get("ts") or "") or None
    deps.threads.add(f"{question.channel}:{question.reply_thread}")
    return None


async def log_failure(question: Mention, deps: SlackDeps, attempt: Attempt, error: BaseException) -> None:
    """Record a question a bug interrupted (Bolt's error handler has told the asker)."""
    service_question = Question(question.text, channel=question.channel, language=question.language)
    _logged(question, attempt, await record_failure(service_question, error, deps.recorder, _origin(question, attempt)))


def _logged(question: Mention, attempt: Attempt, asked: Asked) -> None:
    """One log line per question, once its exchange is recorded."""
    attempt.logged = True
    log.info("question event=%s channel=%s exchange=%s outcome=%s total_ms=%.0f reply=%s", question.event_id,
             question.channel, asked.exchange_id, asked.record.outcome, asked.record.timings_ms.get("total", 0.0),
             attempt.reply_ts)


async def _react(deps: SlackDeps, action: str, question: Mention) -> None:
    """Add or remove the working reaction on the question; a failure here never stops the answer."""
    name = deps.options.working_reaction
    if not name:
        return
    call = deps.client.reactions_add if action == "add" else deps.client.reactions_remove
    try:
        await call(channel=question.channel, timestamp=question.ts, name=name)
    except SLACK_ERRORS as error:
        log.info("could not %s :%s: on %s in %s (%s)", action, name, question.ts, question.channel, slack_error(error))
