"""Feedback clicks on the bot's answers (👍 / 👎): recorded against the exchange, as the clicking user's vote.

Only a click on a message the bot posted as an answer counts (found by its ``ts`` in the exchange log, as a
reaction is). A vote is anyone's opinion, not a lead's flag: it is counted in the stats, and a 👎 puts the
exchange in the review queue as "asker unhappy". A click Slack delivers twice leaves one vote
(``bot.verdicts``); a later click by the same user replaces theirs.

A 👎 where the channel names a hand-off group also offers its clicker (only them: ephemeral, in the answer's
thread) the "Ask a person" button; its click is a hand-off of that answer like any other (``bot.slack.handoff``).
"""

from __future__ import annotations

import logging

from bot.exchange_log import LogUnavailable
from bot.slack.blocks import handoff_offer_message
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import FeedbackClick

log = logging.getLogger(__name__)


async def take_feedback(click: FeedbackClick, deps: SlackDeps) -> None:
    """Record the click as the user's feedback on the answer it was made under; anything else is ignored."""
    try:
        with deps.in_flight.track():
            exchange_id = await deps.verdicts.vote(click.channel, click.message_ts, user=click.user,
                                                   positive=click.positive, at=click.at)
    except LogUnavailable as error:
        log.error("could not record feedback by %s on %s in %s (exchange log unavailable: %s); the click is lost",
                  click.user, click.message_ts, click.channel, error.cause)
        return
    if exchange_id is None:
        log.info("feedback by %s on %s in %s: not one of our answers, ignored", click.user, click.message_ts,
                 click.channel)
        return
    log.info("feedback %s: exchange=%s user=%s", "helpful" if click.positive else "unhelpful", exchange_id,
             click.user)
    if not click.positive:
        with deps.in_flight.track():
            await _offer_a_person(click, deps)


async def _offer_a_person(click: FeedbackClick, deps: SlackDeps) -> None:
    """After a 👎: the "Ask a person" button, to the clicker only, where the channel has someone to bring in."""
    if not (await deps.channels.current()).of(click.channel).handoff:
        return
    try:
        taken = await deps.handoffs.take(click.channel, click.message_ts, user=click.user, at=click.at, claim=False)
    except LogUnavailable as error:
        log.warning("no hand-off offered to %s after their 👎 (exchange log unavailable: %s)", click.user,
                    error.cause)
        return
    if taken is None:
        return
    offer = handoff_offer_message(taken.answer.language or "en", click.message_ts)
    try:
        await deps.client.chat_postEphemeral(channel=click.channel, user=click.user,
                                             thread_ts=taken.answer.thread_ts or click.message_ts, **offer.as_kwargs())
    except SLACK_ERRORS as error:
        log.info("could not offer %s a person in %s (%s)", click.user, click.channel, slack_error(error))
