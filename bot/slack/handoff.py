""""Ask a person": one click under a bot reply brings the channel's hand-off group into the thread, once.

    find      the exchange whose reply the button is on (``find_by_reply``, as a feedback click or a reaction)
    claim     the exchange's one hand-off row (``storage.handoffs.claim_handoff``): only the click that makes it
              posts, so a second click, a second person or a click Slack delivers twice never posts again
    post      in the thread, one line: the hand-off group's mention, the asker, the question and what the bot
              did; then the clicker is told (ephemeral) and the post is noted on the row
    give back a post Slack refuses releases the row, so a later click can try again

A channel without a hand-off group shows no button; a click there anyway (the file changed since) is told so.
"""

from __future__ import annotations

import logging

from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import HandoffClick
from bot.slack.messages import SlackWording, slack_wording_for
from bot.slack.text import escape_mrkdwn, shorten
from storage.errors import UnknownExchange
from storage.exchanges import find_by_reply
from storage.handoffs import claim_handoff, handoff_posted, release_handoff
from storage.journal import DATABASE_DOWN
from storage.records import ExchangeRecord

log = logging.getLogger(__name__)

QUESTION_CHARS = 300  # of the question, in the one-line hand-off post


def handoff_line(record: ExchangeRecord, who: str, words: SlackWording) -> str:
    """The hand-off post: who is brought in, who asked, the question and the bot's outcome, in one line."""
    question = " ".join(shorten(record.question, QUESTION_CHARS)[0].split())
    outcome = words.handoff_answered if record.outcome == "answered" else words.handoff_no_support
    return words.handoff.format(who=who, asker=f"<@{record.user_id}>" if record.user_id else "",
                                question=escape_mrkdwn(question), outcome=outcome)


async def take_handoff(click: HandoffClick, deps: SlackDeps) -> None:
    """Hand the exchange under the click off to the channel's people, unless it was already (then say so)."""
    with deps.in_flight.track():
        settings = (await deps.channels.current()).of(click.channel)
        try:
            async with deps.sessions() as session:  # no Slack call while the session is open
                record = await find_by_reply(session, click.channel, click.message_ts)
                first = None
                if record is not None and settings.handoff:
                    handoff, first = await claim_handoff(session, record.id, user_id=click.user, at=click.at)
        except UnknownExchange:
            return  # deleted between the lookup and the write
        except DATABASE_DOWN as error:
            log.error("could not record the hand-off by %s on %s in %s (exchange log unavailable: %s)", click.user,
                      click.message_ts, click.channel, type(error).__name__)
            await _tell(deps, click, None, slack_wording_for("en").handoff_failed)
            return
        if record is None:
            log.info("hand-off click by %s on %s in %s: not one of our replies, ignored", click.user,
                     click.message_ts, click.channel)
            return
        words = slack_wording_for(record.language or "en")
        if first is None:
            await _tell(deps, click, record, words.handoff_nobody)
        elif not first:
            log.info("hand-off click by %s on exchange %s: handed off before by %s", click.user, record.id,
                     handoff.user_id)
            await _tell(deps, click, record, words.handoff_before)
        else:
            await _post(click, record, settings.handoff_mentions, words, deps)


async def _post(click: HandoffClick, record: ExchangeRecord, who: str, words: SlackWording, deps: SlackDeps) -> None:
    try:
        response = await deps.client.chat_postMessage(
            channel=click.channel, thread_ts=record.thread_ts or click.message_ts,
            text=handoff_line(record, who, words), unfurl_links=False, unfurl_media=False)
    except SLACK_ERRORS as error:
        log.error("cannot post the hand-off of exchange %s in %s: %s; giving it back", record.id, click.channel,
                  slack_error(error))
        try:
            async with deps.sessions() as session:
                await release_handoff(session, record.id)
        except DATABASE_DOWN as down:
            log.error("could not give back the hand-off of exchange %s (%s)", record.id, type(down).__name__)
        await _tell(deps, click, record, words.handoff_failed)
        return
    try:
        async with deps.sessions() as session:
            await handoff_posted(session, record.id, str(response.get("ts") or ""))
    except DATABASE_DOWN as error:  # the hand-off is recorded; only the post's ts is missing
        log.warning("could not note the hand-off post of exchange %s (%s)", record.id, type(error).__name__)
    log.info("handed off: exchange=%s user=%s", record.id, click.user)
    await _tell(deps, click, record, words.handoff_done.format(who=who))


async def _tell(deps: SlackDeps, click: HandoffClick, record: ExchangeRecord | None, text: str) -> None:
    """Tell the clicker only (ephemeral, in the thread); a refusal is logged, never raised."""
    thread = (record.thread_ts if record is not None else None) or click.message_ts
    try:
        await deps.client.chat_postEphemeral(channel=click.channel, user=click.user, thread_ts=thread, text=text)
    except SLACK_ERRORS as error:
        log.info("could not tell %s about the hand-off in %s (%s)", click.user, click.channel, slack_error(error))
