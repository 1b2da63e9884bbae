"""Feedback clicks on the bot's answers (👍 / 👎): recorded against the exchange, as the clicking user's vote.

Only a click on a message the bot posted as an answer counts (found by its ``ts`` in the exchange log, as a
reaction is). A vote is anyone's opinion, not a lead's flag: it is counted in the stats, and a 👎 puts the
exchange in the review queue as "asker unhappy". A click Slack delivers twice leaves one vote
(``storage.feedback``); a later click by the same user replaces theirs.
"""

from __future__ import annotations

import logging

from bot.slack.deps import SlackDeps
from bot.slack.events import FeedbackClick
from storage.errors import UnknownExchange
from storage.exchanges import find_by_reply
from storage.feedback import record_feedback
from storage.journal import DATABASE_DOWN

log = logging.getLogger(__name__)


async def take_feedback(click: FeedbackClick, deps: SlackDeps) -> None:
    """Record the click as the user's feedback on the answer it was made under; anything else is ignored."""
    try:
        with deps.in_flight.track():
            async with deps.sessions() as session:
                exchange = await find_by_reply(session, click.channel, click.message_ts)
                if exchange is None:
                    log.info("feedback by %s on %s in %s: not one of our answers, ignored", click.user,
                             click.message_ts, click.channel)
                    return
                await record_feedback(session, exchange.id, user_id=click.user, positive=click.positive,
                                      at=click.at)
    except UnknownExchange:
        return  # deleted between the lookup and the write
    except DATABASE_DOWN as error:
        log.error("could not record feedback by %s on %s in %s (exchange log unavailable: %s); the click is lost",
                  click.user, click.message_ts, click.channel, type(error).__name__)
        return
    log.info("feedback %s: exchange=%s user=%s", "helpful" if click.positive else "unhelpful", exchange.id,
             click.user)
