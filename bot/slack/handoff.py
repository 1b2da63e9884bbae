""""Ask a person": one click under a bot reply brings the channel's hand-off group into the thread, once.

    find      the exchange whose reply the button is on, as a feedback click or a reaction
    claim     the exchange's one hand-off (``bot.handoffs.Handoffs.take``): only the click that makes it posts, so a
              second click, a second person or a click Slack delivers twice never posts again
    post      in the thread, one line: the hand-off group's mention, the asker, the question and what the bot
              did; then the clicker is told (ephemeral) and the post is noted on the hand-off
    give back a post Slack refuses releases the hand-off, so a later click can try again

A channel without a hand-off group shows no button; a click there anyway (the file changed since) is told so.

In a DM or the assistant pane the hand-off goes to ``ESCALATION_CHANNEL`` instead (no button without one): one
line with the asker, what the bot did and a link to the question (``chat.getPermalink``), never the question's
text unless the asker clicked "… with my question" and confirmed Slack's dialog saying so.
"""

from __future__ import annotations

import logging

from bot.exchange_log import LogUnavailable
from bot.handoffs import AnsweredQuestion
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.errors import give_back
from bot.slack.events import HandoffClick
from bot.slack.messages import SlackWording, slack_wording_for
from bot.slack.text import escape_mrkdwn, shorten

log = logging.getLogger(__name__)

QUESTION_CHARS = 300  # of the question, in the one-line hand-off post


def handoff_line(answer: AnsweredQuestion, who: str, words: SlackWording) -> str:
    """The hand-off post: who is brought in, who asked, the question and the bot's outcome, in one line."""
    question = " ".join(shorten(answer.question, QUESTION_CHARS)[0].split())
    outcome = words.handoff_answered if answer.answered else words.handoff_no_support
    return words.handoff.format(who=who, asker=f"<@{answer.asker}>" if answer.asker else "",
                                question=escape_mrkdwn(question), outcome=outcome)


async def take_handoff(click: HandoffClick, deps: SlackDeps) -> None:
    """Hand the exchange under the click off to the channel's people, unless it was already (then say so)."""
    with deps.in_flight.track():
        settings = (await deps.channels.current()).of(click.channel)
        escalation = deps.options.escalation_channel if _is_dm(click.channel) else None
        try:
            taken = await deps.handoffs.take(click.channel, click.message_ts, user=click.user, at=click.at,
                                             claim=escalation is not None if _is_dm(click.channel)
                                             else bool(settings.handoff))
        except LogUnavailable as error:
            log.error("could not record the hand-off by %s on %s in %s (exchange log unavailable: %s)", click.user,
                      click.message_ts, click.channel, error.cause)
            await _tell(deps, click, None, slack_wording_for("en").handoff_failed)
            return
        if taken is None:
            log.info("hand-off click by %s on %s in %s: not one of our replies (or deleted), ignored", click.user,
                     click.message_ts, click.channel)
            return
        answer = taken.answer
        words = slack_wording_for(answer.language or "en")
        if taken.first is None:
            await _tell(deps, click, answer, words.handoff_nobody)
        elif not taken.first:
            log.info("hand-off click by %s on exchange %s: handed off before by %s", click.user, answer.exchange_id,
                     taken.by)
            await _tell(deps, click, answer, words.handoff_before)
        elif escalation is not None:
            await _escalate(click, answer, escalation, words, deps)
        else:
            await _post(click, answer, settings.handoff_mentions, words, deps)


def _is_dm(channel: str) -> bool:
    return channel.startswith("D")


def escalation_line(answer: AnsweredQuestion, link: str | None, words: SlackWording, *, with_question: bool) -> str:
    """The post in the escalation channel: who, what the bot did, a link; the question only if the asker agreed."""
    outcome = words.handoff_answered if answer.answered else words.handoff_no_support
    line = words.escalation.format(asker=f"<@{answer.asker}>" if answer.asker else "", outcome=outcome,
                                   link=f"<{link}>" if link else "")
    if with_question:
        question = " ".join(shorten(answer.question, QUESTION_CHARS)[0].split())
        line += words.escalation_question.format(question=escape_mrkdwn(question))
    return line.strip()


async def _escalate(click: HandoffClick, answer: AnsweredQuestion, where: str, words: SlackWording,
                    deps: SlackDeps) -> None:
    link = None
    try:
        response = await deps.client.chat_getPermalink(channel=click.channel,
                                                       message_ts=answer.question_ts or click.message_ts)
        link = str(response.get("permalink") or "") or None
    except SLACK_ERRORS as error:  # the hand-off still goes, naming the asker, without the link
        log.warning("no permalink to the question of exchange %s (%s)", answer.exchange_id, slack_error(error))
    try:
        posted = await deps.client.chat_postMessage(
            channel=where, text=escalation_line(answer, link, words, with_question=click.with_question),
            unfurl_links=False, unfurl_media=False)
    except SLACK_ERRORS as error:
        log.error("cannot post the hand-off of exchange %s in %s: %s; giving it back", answer.exchange_id, where,
                  slack_error(error))
        await give_back(deps.handoffs.release, answer.exchange_id, "hand-off")
        await _tell(deps, click, answer, words.handoff_failed)
        return
    try:
        await deps.handoffs.posted(answer.exchange_id, str(posted.get("ts") or ""))
    except LogUnavailable as error:
        log.warning("could not note the hand-off post of exchange %s (%s)", answer.exchange_id, error.cause)
    log.info("handed off from a DM: exchange=%s user=%s to=%s with_question=%s", answer.exchange_id, click.user,
             where, click.with_question)
    await _tell(deps, click, answer, words.escalation_done.format(where=f"<#{where}>"))


async def _post(click: HandoffClick, answer: AnsweredQuestion, who: str, words: SlackWording,
                deps: SlackDeps) -> None:
    try:
        response = await deps.client.chat_postMessage(
            channel=click.channel, thread_ts=answer.thread_ts or click.message_ts,
            text=handoff_line(answer, who, words), unfurl_links=False, unfurl_media=False)
    except SLACK_ERRORS as error:
        log.error("cannot post the hand-off of exchange %s in %s: %s; giving it back", answer.exchange_id,
                  click.channel, slack_error(error))
        await give_back(deps.handoffs.release, answer.exchange_id, "hand-off")
        await _tell(deps, click, answer, words.handoff_failed)
        return
    try:
        await deps.handoffs.posted(answer.exchange_id, str(response.get("ts") or ""))
    except LogUnavailable as error:  # the hand-off is recorded; only the post's ts is missing
        log.warning("could not note the hand-off post of exchange %s (%s)", answer.exchange_id, error.cause)
    log.info("handed off: exchange=%s user=%s", answer.exchange_id, click.user)
    await _tell(deps, click, answer, words.handoff_done.format(who=who))


async def _tell(deps: SlackDeps, click: HandoffClick, answer: AnsweredQuestion | None, text: str) -> None:
    """Tell the clicker only (ephemeral, in the thread); a refusal is logged, never raised."""
    thread = (answer.thread_ts if answer is not None else None) or click.message_ts
    try:
        await deps.client.chat_postEphemeral(channel=click.channel, user=click.user, thread_ts=thread, text=text)
    except SLACK_ERRORS as error:
        log.info("could not tell %s about the hand-off in %s (%s)", click.user, click.channel, slack_error(error))
