"""Feedback clicks on the bot's answers (👍 / 👎): recorded against the exchange, as the clicking user's vote.

Only a click on a message the bot posted as an answer counts (found by its ``ts`` in the exchange log, as a
reaction is). A vote is anyone's opinion, not a lead's flag: it is counted in the stats, and a 👎 puts the
exchange in the review queue as "asker unhappy". A click Slack delivers twice leaves one vote
(``bot.verdicts``); a later click by the same user replaces theirs.
"""

from __future__ import annotations

import logging

from bot.exchange_log import LogUnavailable
from bot.slack.deps import SlackDeps
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
