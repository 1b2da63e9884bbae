"""One question from Slack, from its event to its logged reply. Every taken question ends in a reply.

    take      the channel's settings (``bot.slack.help_channels``: off, or an unprompted message that is not a
              question there, is not taken) -> in-process guard (event id and message) -> the channel's line
              -> (follow-up: is it our thread?) -> claim the event id in the exchange log: a lease, renewed
              while we answer (``bot.claims``; the claim records an unprompted question as such);
              a claim left behind by a dead instance is taken over here, by a retry, or by the start-up sweep
              (``bot.slack.recovery``)
    working   :eyes: on the question while it waits and is answered; in a DM thread (the assistant pane) Slack's
              status line instead ("searching the documents…"), and the thread's title from its first question
              — :eyes: again if Slack refuses the status
    sees      a private question (a DM) sees what ``bot.slack.visibility`` grants the asker; one in a channel,
              that channel's documents, only those of its ``sources`` when channels.toml lists some
    ask       bot.answer.ask, on its turn in the channel, with the thread's earlier turns as history: it answers,
              calls back here to reply (Block Kit in the question's thread; an error reply if answering or
              posting failed), and records the exchange (through the journal if the database is down)
    private   in a private-first channel the answer (or no-support reply) goes to the asker only: an ephemeral
              message in the thread with "Share in thread" (``bot.slack.share``); its ts is the exchange's
              reply, and the message as they saw it is kept (``bot.private_replies``) for the share

Exactly-once replies: every reply carries its exchange id in Slack's message metadata. Before the first post of
a taken-over claim, the thread is searched for a reply with that id (the gone owner may have posted it just
before dying); if there is one, it is the reply, and nothing is posted again. A claim left behind for longer
than ``missed_after_s`` gets a short "please ask again" reply instead of a stale answer.

Errors the answer path expects (``ANSWER_ERRORS``: retrieval's root, a timeout) become an error reply and an
error exchange there. Anything else is a bug: it propagates to Bolt's error handler (``listeners.on_error``),
which still replies in the thread and logs the exchange, using the ``Attempt`` this module keeps up to date.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.answer.ask import Asked, Delivery, Origin, ask, record_failure
from bot.answer.exchange import SlackContext
from bot.answer.service import AnswerResult
from bot.answer.types import Question, Turn
from bot.channels import ChannelSettings
from bot.claims import Claim, SlackIds
from bot.exchange_log import LogUnavailable
from bot.log_format import question_fields
from bot.slack.assistant import context_of
from bot.slack.blocks import (
    RenderOptions,
    SlackMessage,
    answer_message,
    error_message,
    help_message,
    missed_message,
)
from bot.slack.concurrency import Ticket, cancel_and_wait
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import SlackQuestion
from bot.slack.help_channels import has_support, person_answered, settings_for
from bot.slack.messages import slack_wording_for
from bot.slack.text import shorten
from bot.slack.threads import BotUser, thread_messages, thread_of

log = logging.getLogger(__name__)


@dataclass
class Attempt:
    """What has happened to one question so far (read by the error handler if a bug interrupts it)."""

    exchange_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    taken: bool = False  # claimed: this process owes the asker a reply
    taken_over: bool = False  # the claim was left behind by another holder, who may have replied already
    reply_ts: str | None = None
    private: SlackMessage | None = None  # the reply was shown to the asker only: this message
    logged: bool = False

    def holds(self, claim: Claim) -> None:
        """Answer as the claim's exchange (a taken-over claim keeps the id and time it was first claimed with)."""
        self.exchange_id, self.created_at, self.taken_over = claim.exchange_id, claim.created_at, claim.taken_over


class MissedQuestion(Exception):
    """A question a crash left unanswered for too long: it got the "please ask again" reply."""


TITLE_CHARS = 80  # an assistant thread's title: the start of its first question
REPLY_EVENT_TYPE = "verbatim_reply"  # Slack message metadata on every reply: which exchange it answers


async def post_with_metadata(deps: SlackDeps, channel: str, thread_ts: str | None, exchange_id: str,
                             message: SlackMessage) -> AsyncSlackResponse:
    """Post ``message`` as the bot's reply to an exchange, carrying its id in the message metadata (which is how
    a restarted instance and a reaction find the exchange a reply answers)."""
    return await deps.client.chat_postMessage(
        channel=channel, thread_ts=thread_ts, unfurl_links=False, unfurl_media=False,
        metadata={"event_type": REPLY_EVENT_TYPE, "event_payload": {"exchange_id": exchange_id}},
        **message.as_kwargs())


async def take_question(question: SlackQuestion, deps: SlackDeps, bot: BotUser, attempt: Attempt, *,
                         claim: Claim | None = None) -> None:
    """Answer ``question`` in its thread unless it was already taken (here, or by another replica).

    ``claim``: already claimed, and marked taken in this process, by the sweep (``bot.slack.recovery``);
    otherwise it is marked and claimed here.
    """
    settings = await settings_for(question, deps)
    if settings is None:
        if claim is None:
            return  # not a question for the bot in this channel (bot.slack.help_channels)
        settings = (await deps.channels.current()).of(question.channel)  # claimed before: finish it
    if claim is None and not deps.seen.first_time(question.event_id, question.message_key):
        log.info("event %s (retry %d) already taken in this process: dropped", question.event_id, question.retry)
        return
    with deps.in_flight.track(), deps.order.reserve(question.channel, question.ts) as ticket:
        history: tuple[Turn, ...] = ()
        if question.in_thread:
            thread = await thread_of(question, deps, bot)
            if not question.mentioned and not thread.answered_by_bot:
                return  # a conversation among people in a thread the bot is not part of
            history = thread.history
        if question.text and claim is None:
            async with deps.claims_at_once:
                claim = await _claim(question, deps, attempt)
            if claim is None:  # another instance holds it (and may yet die: then a retry here may take it)
                deps.seen.forget(question.event_id, question.message_key)
                return
        if claim is not None:
            attempt.holds(claim)
        attempt.taken = True
        reacted = await _show_working(question, deps, first_turn=not history)
        try:
            async with _lease_kept(claim, deps):
                await ticket.turn()
                await _answer_and_reply(question, history, deps, attempt, ticket, _Reply(bot, settings))
        finally:
            if reacted:
                await _react(deps, "remove", question)


@dataclass(frozen=True, slots=True)
class _Reply:
    """What a reply depends on beyond the question: who the bot is, and the channel's settings."""

    bot: BotUser
    settings: ChannelSettings


async def _answer_and_reply(question: SlackQuestion, history: tuple[Turn, ...], deps: SlackDeps, attempt: Attempt,
                            ticket: Ticket, reply: _Reply) -> None:
    if not question.text:  # "@verbatim" and nothing else
        await post_reply(question, help_message(question.language), deps, attempt)
        return
    waited = datetime.now(UTC) - attempt.created_at
    if attempt.taken_over and waited > timedelta(seconds=deps.options.missed_after_s):
        await post_reply(question, missed_message(question.language, attempt.exchange_id), deps, attempt)
        missed = MissedQuestion(f"left unanswered for {waited.total_seconds() / 60:.0f} min by an instance that "
                                "stopped; the asker was asked to ask again")
        await log_failure(question, deps, attempt, missed)
        return

    async def deliver(result: AnswerResult | None, error: BaseException | None) -> Delivery:
        if question.unprompted and (not has_support(result, reply.settings)
                                    or await person_answered(question, deps, reply.bot)):
            ticket.replied()
            return Delivery(silent=True)  # a help channel hears the bot only when it has support
        refused = None
        if result is not None:  # Slack may refuse the answer: then the asker is told plainly
            options = _render_options(deps, reply.settings, question)
            post = post_private if options.private else post_reply
            refused = await post(question, answer_message(result, options), deps, attempt)
        if (error or refused) is not None and attempt.reply_ts is None:
            await post_reply(question, error_message(question.language, attempt.exchange_id), deps, attempt)
        ticket.replied()  # in order is about replies: the channel's next question need not wait for the record
        return Delivery(attempt.reply_ts, refused)

    asked = await ask(await _service_question(question, history, deps, reply.settings), deps.answer, deps.recorder,
                      _origin(question, attempt), limits=deps.limits, deliver=deliver)
    if attempt.reply_ts is not None:
        deps.metrics.replied(question.ts, attempt.reply_ts)
    if attempt.private is not None and attempt.reply_ts is not None:
        await _keep_private(question, deps, attempt, attempt.private, attempt.reply_ts)
    _logged(question, attempt, asked, deps)


async def _keep_private(question: SlackQuestion, deps: SlackDeps, attempt: Attempt, message: SlackMessage,
                        message_ts: str) -> None:
    """Keep the answer the asker alone was shown, for "Share in thread"; without it only the share is lost."""
    try:
        kept = await deps.private_replies.keep(attempt.exchange_id, channel=question.channel, user=question.user,
                                               message_ts=message_ts, message=message.as_kwargs(),
                                               at=datetime.now(UTC))
    except LogUnavailable as error:
        kept = False
        log.warning("could not keep the private reply of exchange %s (%s)", attempt.exchange_id, error.cause)
    if not kept:
        log.warning("exchange %s was shown privately but is not in the log yet: its Share button will not work",
                    attempt.exchange_id)


async def _service_question(question: SlackQuestion, history: tuple[Turn, ...], deps: SlackDeps,
                            settings: ChannelSettings) -> Question:
    sees, sources = None, settings.sources  # in a channel: its documents, narrowed to its sources if it lists any
    if question.private:
        sees, sources = await deps.visibility.sees(question.user, context_of(question, deps)), None
    # The language stays the one detected from the whole text when it was parsed.
    return replace(question.asked, text=question.text[: deps.options.max_question_chars], history=history, sees=sees,
                   sources=sources)


def _slack_ids(question: SlackQuestion) -> SlackIds:
    """Where the question was asked, as its claim records it."""
    return SlackIds(question.event_id, question.team_id, question.channel, question.user, question.reply_thread,
                    question.ts)


def _render_options(deps: SlackDeps, settings: ChannelSettings, question: SlackQuestion) -> RenderOptions:
    return RenderOptions(flag_reaction=deps.options.first_flag_reaction, native_feedback=deps.options.native_feedback,
                         handoff=bool(settings.handoff) and not question.private,
                         escalation=question.private and deps.options.escalation_channel is not None,
                         private=settings.private_first and not question.private)


def _origin(question: SlackQuestion, attempt: Attempt) -> Origin:
    slack = SlackContext(team_id=question.team_id, channel_id=question.channel, user_id=question.user,
                         thread_ts=question.reply_thread, question_ts=question.ts, reply_ts=attempt.reply_ts,
                         event_id=question.event_id or None)
    return Origin("slack", attempt.exchange_id, attempt.created_at, slack)


async def _claim(question: SlackQuestion, deps: SlackDeps, attempt: Attempt) -> Claim | None:
    """The claim this process answers under: new, taken over, or (the log is down: the guard holds) its own;
    None when another live instance holds it or it was answered."""
    mine = Claim(attempt.exchange_id, attempt.created_at)
    if not question.event_id:
        return mine
    try:
        claim = await deps.claims.claim(_slack_ids(question), exchange_id=attempt.exchange_id,
                                        created_at=attempt.created_at, question=question.text,
                                        language=question.language, unprompted=question.unprompted)
    except LogUnavailable as error:
        deps.metrics.database_errors.labels("claim").inc()
        log.warning("cannot claim event %s in the exchange log (%s); answering it once from this process",
                    question.event_id, error.cause)
        return mine
    if claim is None:
        log.info("event %s (retry %d) already claimed by a live instance, or answered: dropped", question.event_id,
                 question.retry)
    elif claim.taken_over:
        log.warning("event %s (retry %d): took over exchange %s left behind by %s", question.event_id,
                    question.retry, claim.exchange_id, claim.previous_owner)
    return claim


@contextlib.asynccontextmanager
async def _lease_kept(claim: Claim | None, deps: SlackDeps) -> AsyncIterator[None]:
    """Renew the claim's lease every third of it while the block runs, so no one takes over a live answer."""
    if claim is None:
        yield
        return
    renewing = asyncio.create_task(_renew_forever(claim, deps), name=f"lease-{claim.exchange_id}")
    try:
        yield
    finally:
        await cancel_and_wait(renewing)


async def _renew_forever(claim: Claim, deps: SlackDeps) -> None:
    while True:
        await asyncio.sleep(deps.options.claim_lease_s / 3)
        try:
            still_ours = await deps.claims.renew(claim)
        except LogUnavailable as error:
            deps.metrics.database_errors.labels("lease").inc()
            log.warning("cannot renew the lease on exchange %s (%s); answering on", claim.exchange_id, error.cause)
            continue
        if not still_ours:
            log.warning("exchange %s is no longer ours (taken over, or recorded meanwhile)", claim.exchange_id)
            return


async def post_reply(question: SlackQuestion, message: SlackMessage, deps: SlackDeps, attempt: Attempt) -> BaseException | None:
    """Post ``message`` in the question's thread; None when it was posted (or, for a taken-over claim, found
    already posted), else the Web API's error."""
    if attempt.taken_over and attempt.reply_ts is None:
        attempt.reply_ts = await _posted_before(question, deps, attempt.exchange_id)
        if attempt.reply_ts is not None:
            log.warning("exchange %s was already answered in %s by the instance that stopped (reply %s); not "
                        "posting again", attempt.exchange_id, question.channel, attempt.reply_ts)
            return None
    try:
        response = await post_with_metadata(deps, question.channel, question.reply_thread, attempt.exchange_id, message)
    except SLACK_ERRORS as error:
        log.error("cannot post the reply to event %s in %s: %s", question.event_id, question.channel,
                  slack_error(error))
        return error
    attempt.reply_ts = str(response.get("ts") or "") or None
    deps.threads.add(f"{question.channel}:{question.reply_thread}")
    return None


async def post_private(question: SlackQuestion, message: SlackMessage, deps: SlackDeps,
                       attempt: Attempt) -> BaseException | None:
    """Show ``message`` to the asker only, in the question's thread (a private-first channel); None when shown,
    else the Web API's error. Slack keeps no ephemeral message we could look for, so a taken-over claim cannot
    tell whether the stopped instance showed it: the asker may then see it twice (never anyone else)."""
    try:
        response = await deps.client.chat_postEphemeral(channel=question.channel, user=question.user,
                                                        thread_ts=question.reply_thread, **message.as_kwargs())
    except SLACK_ERRORS as error:
        log.error("cannot show the private reply to event %s in %s: %s", question.event_id, question.channel,
                  slack_error(error))
        return error
    attempt.reply_ts = str(response.get("message_ts") or "") or None
    attempt.private = message
    deps.threads.add(f"{question.channel}:{question.reply_thread}")
    return None


async def _posted_before(question: SlackQuestion, deps: SlackDeps, exchange_id: str) -> str | None:
    """The ts of a reply in the question's thread that carries this exchange's id, or None.

    If Slack cannot be asked, None: the asker then gets a reply, perhaps a second one, rather than silence.
    """
    replies = thread_messages(deps.client, question.channel, question.reply_thread, metadata=True)
    try:
        async with contextlib.aclosing(replies):
            async for message in replies:
                payload = (message.get("metadata") or {}).get("event_payload") or {}
                if payload.get("exchange_id") == exchange_id and message.get("ts"):
                    return str(message["ts"])
        return None
    except SLACK_ERRORS as error:
        if isinstance(error, SlackApiError) and error.response.get("error") == "thread_not_found":
            return None  # no reply at all yet
        log.warning("cannot look for an earlier reply to exchange %s in %s (%s); replying", exchange_id,
                    question.channel, slack_error(error))
        return None


async def answer_after_bug(question: SlackQuestion, deps: SlackDeps, attempt: Attempt, error: BaseException) -> None:
    """A bug interrupted a taken question: still reply in its thread (unless a reply went out) and log it."""
    with deps.in_flight.track():  # a shutdown waits for this reply too
        if attempt.reply_ts is None:
            await post_reply(question, error_message(question.language, attempt.exchange_id), deps, attempt)
        if not attempt.logged:
            await log_failure(question, deps, attempt, error)


async def log_failure(question: SlackQuestion, deps: SlackDeps, attempt: Attempt, error: BaseException) -> None:
    """Record a question a bug interrupted (Bolt's error handler has told the asker)."""
    _logged(question, attempt, await record_failure(question.asked, error, deps.recorder, _origin(question, attempt)),
            deps)


def _logged(question: SlackQuestion, attempt: Attempt, asked: Asked, deps: SlackDeps) -> None:
    """One log line per question, once its exchange is recorded; its text only with LOG_QUESTIONS."""
    attempt.logged = True
    fields = question_fields(asked, reply_ts=attempt.reply_ts, log_questions=deps.options.log_questions)
    log.info("question event=%s channel=%s%s exchange=%s outcome=%s total_ms=%.0f reply=%s", question.event_id,
             question.channel, " (private)" if question.private else "", asked.exchange_id, asked.record.outcome,
             asked.record.timings_ms.get("total", 0.0), attempt.reply_ts, extra=fields)


async def _show_working(question: SlackQuestion, deps: SlackDeps, *, first_turn: bool) -> bool:
    """Show that the question is being answered; True when that was the working reaction (to be removed).

    In a DM thread: the assistant pane's status line (Slack clears it when the reply is posted) and, for the
    thread's first question, its title. Where Slack refuses the status (a DM thread outside the pane, an app
    without the assistant feature), the working reaction, as in channels.
    """
    if question.in_assistant_thread and question.thread_ts is not None:
        words = slack_wording_for(question.language)
        try:
            await deps.client.assistant_threads_setStatus(channel_id=question.channel, thread_ts=question.thread_ts,
                                                          status=words.status)
        except SLACK_ERRORS as error:
            log.info("no status line in %s thread %s (%s); using the working reaction", question.channel,
                     question.thread_ts, slack_error(error))
        else:
            if first_turn:
                await _set_title(question, deps)
            return False
    await _react(deps, "add", question)
    return True


async def _set_title(question: SlackQuestion, deps: SlackDeps) -> None:
    assert question.thread_ts is not None
    try:
        await deps.client.assistant_threads_setTitle(channel_id=question.channel, thread_ts=question.thread_ts,
                                                     title=shorten(question.text, TITLE_CHARS)[0])
    except SLACK_ERRORS as error:
        log.info("could not title %s thread %s (%s)", question.channel, question.thread_ts, slack_error(error))


async def _react(deps: SlackDeps, action: str, question: SlackQuestion) -> None:
    """Add or remove the working reaction on the question; a failure here never stops the answer."""
    name = deps.options.working_reaction
    if not name:
        return
    call = deps.client.reactions_add if action == "add" else deps.client.reactions_remove
    try:
        await call(channel=question.channel, timestamp=question.ts, name=name)
    except SLACK_ERRORS as error:
        log.info("could not %s :%s: on %s in %s (%s)", action, name, question.ts, question.channel, slack_error(error))
