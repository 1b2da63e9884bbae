"""Bolt listeners: parse the payload at the edge, hand the value to one function, nothing else.

Plain functions of Bolt's own arguments plus ``deps``; ``register`` binds them to an app. Every event the
manifest subscribes to has a listener, so Bolt acknowledges each one (in Socket Mode an unhandled event is
never acked and Slack sends it again).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.slack.answering import Attempt, answer_after_bug, take_question
from bot.slack.assistant import take_app_context, take_assistant_thread
from bot.slack.deps import SlackDeps
from bot.slack.events import (
    FEEDBACK_ACTION,
    HANDOFF_ACTION,
    SHARE_ACTION,
    SlackQuestion,
    parse_app_context,
    parse_assistant_thread,
    parse_feedback,
    parse_handoff,
    parse_mention,
    parse_message,
    parse_reaction,
    parse_share,
    retry_number,
)
from bot.slack.feedback import take_feedback
from bot.slack.handoff import take_handoff
from bot.slack.reactions import take_reaction
from bot.slack.share import take_share
from bot.slack.threads import BotUser

log = logging.getLogger(__name__)

ATTEMPT = "verbatim_attempt"  # where a question's Attempt waits in Bolt's context for the error handler

Body = dict[str, Any]


def bot_user(context: AsyncBoltContext) -> BotUser:
    return BotUser(user_id=context.bot_user_id, bot_id=context.bot_id)


async def on_app_mention(body: Body, context: AsyncBoltContext, request: AsyncBoltRequest, deps: SlackDeps) -> None:
    """@verbatim in a channel or a thread: answer in the thread."""
    question = parse_mention(body, context.bot_user_id, retry_number(request.headers))
    if question is not None:
        context[ATTEMPT] = attempt = Attempt()
        await take_question(question, deps, bot_user(context), attempt)


async def on_message(body: Body, context: AsyncBoltContext, request: AsyncBoltRequest, deps: SlackDeps) -> None:
    """Any message the bot can see: a person's DM, or their follow-up in a thread the bot answered, is a question."""
    question = parse_message(body, context.bot_user_id, retry_number(request.headers))
    if question is not None:
        context[ATTEMPT] = attempt = Attempt()
        await take_question(question, deps, bot_user(context), attempt)


async def on_reaction(body: Body, context: AsyncBoltContext, request: AsyncBoltRequest, deps: SlackDeps) -> None:
    """reaction_added / reaction_removed: flags on the bot's answers."""
    reaction = parse_reaction(body, retry_number(request.headers))
    if reaction is not None:
        await take_reaction(reaction, deps, bot_user(context))


async def on_assistant_thread(body: Body, context: AsyncBoltContext, request: AsyncBoltRequest,
                              deps: SlackDeps) -> None:
    """assistant_thread_started / _context_changed: the pane's context channel, and prompts for a new thread."""
    thread = parse_assistant_thread(body)
    if thread is not None:
        await take_assistant_thread(thread, deps)


async def on_app_context(body: Body, context: AsyncBoltContext, request: AsyncBoltRequest, deps: SlackDeps) -> None:
    """app_context_changed (Agent View): the channel the user is viewing now, for their next private question."""
    viewing = parse_app_context(body)
    if viewing is None:
        log.info("app_context_changed %s names no user; ignored", body.get("event_id"))
        return
    take_app_context(viewing, deps)


async def on_feedback(ack: AsyncAck, body: Body, deps: SlackDeps) -> None:
    """A 👍 / 👎 click under an answer (interactivity): acked at once, then recorded as that user's feedback."""
    await ack()
    click = parse_feedback(body)
    if click is not None:
        await take_feedback(click, deps)


async def on_handoff(ack: AsyncAck, body: Body, deps: SlackDeps) -> None:
    """An "Ask a person" click (interactivity): acked at once, then handed off once per exchange."""
    await ack()
    click = parse_handoff(body)
    if click is not None:
        await take_handoff(click, deps)


async def on_share(ack: AsyncAck, body: Body, deps: SlackDeps) -> None:
    """A "Share in thread" click under a private answer (interactivity): acked at once, then posted once."""
    await ack()
    click = parse_share(body)
    if click is not None:
        await take_share(click, deps)


async def on_error(error: Exception, body: Body, context: AsyncBoltContext, deps: SlackDeps) -> None:
    """Bolt's one error handler: a listener failed in a way nobody planned for.

    Log it with its traceback; if it interrupted a question this process had taken, still reply in the
    thread and log the exchange as an error, so the asker is never left in silence.
    """
    log.error("listener failed on %s event %s", (body.get("event") or {}).get("type"), body.get("event_id"),
              exc_info=error)
    attempt = context.get(ATTEMPT)
    if not isinstance(attempt, Attempt) or not attempt.taken:
        return
    question = _question_of(body, context)
    if question is None:
        return
    await answer_after_bug(question, deps, attempt, error)


def _question_of(body: Body, context: AsyncBoltContext) -> SlackQuestion | None:
    return parse_mention(body, context.bot_user_id) or parse_message(body, context.bot_user_id)


def register(app: AsyncApp, deps: SlackDeps) -> None:
    """Bind the listeners to ``app`` with ``deps``."""
    app.event("app_mention")(_bind(on_app_mention, deps))
    app.event("message")(_bind(on_message, deps))
    app.event("reaction_added")(_bind(on_reaction, deps))
    app.event("reaction_removed")(_bind(on_reaction, deps))
    app.event("assistant_thread_started")(_bind(on_assistant_thread, deps))
    app.event("assistant_thread_context_changed")(_bind(on_assistant_thread, deps))
    app.event("app_context_changed")(_bind(on_app_context, deps))
    app.action(re.compile(f"^{FEEDBACK_ACTION}"))(_bind_action(on_feedback, deps))
    app.action(re.compile(f"^{HANDOFF_ACTION}"))(_bind_action(on_handoff, deps))  # and its DM "with my question"
    app.action(SHARE_ACTION)(_bind_action(on_share, deps))
    app.error(_bind_error(deps))


def _bind(listener: Callable[..., Awaitable[None]], deps: SlackDeps) -> Callable[..., Awaitable[None]]:
    # Bolt passes arguments by name, so the bound listener spells out the names it wants.
    async def bound(body: Body, context: AsyncBoltContext, request: AsyncBoltRequest) -> None:
        await listener(body, context, request, deps)

    bound.__name__ = bound.__qualname__ = listener.__name__  # Bolt's logs name the listener
    return bound


def _bind_action(listener: Callable[..., Awaitable[None]], deps: SlackDeps) -> Callable[..., Awaitable[None]]:
    async def bound(ack: AsyncAck, body: Body) -> None:
        await listener(ack, body, deps)

    bound.__name__ = bound.__qualname__ = listener.__name__
    return bound


def _bind_error(deps: SlackDeps) -> Callable[..., Awaitable[None]]:
    async def error_handler(error: Exception, body: Body, context: AsyncBoltContext) -> None:
        await on_error(error, body, context, deps)

    return error_handler
