""""Share in thread": the asker posts the answer only they were shown (a private-first channel) for everyone, once.

    find      the private reply the click is on (``bot.private_replies.PrivateReplies.take``), its share claimed
              for the clicker when they are its asker: only the click that claims it posts, so a second click or
              one Slack delivers twice never posts the answer again
    post      what the asker saw, without the note and the button that were theirs alone
              (``bot.slack.blocks.shared_message``), as the bot's reply in the thread, with the exchange's id in
              its metadata like every reply; it becomes the exchange's reply, so flags, votes and hand-offs on it
              count; then the asker is told (ephemeral)
    give back a post Slack refuses releases the share, so a later click can try again
"""

from __future__ import annotations

import logging

from bot.exchange_log import LogUnavailable
from bot.private_replies import ShareTaken
from bot.slack.answering import post_with_metadata
from bot.slack.blocks import shared_message
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.errors import give_back
from bot.slack.events import ShareClick
from bot.slack.messages import slack_wording_for

log = logging.getLogger(__name__)


async def take_share(click: ShareClick, deps: SlackDeps) -> None:
    """Post the private answer under the click in its thread, unless it is there already (then say so)."""
    with deps.in_flight.track():
        try:
            taken = await deps.private_replies.take(click.channel, click.message_ts, user=click.user, at=click.at)
        except LogUnavailable as error:
            log.error("could not share the reply %s in %s for %s (exchange log unavailable: %s)", click.message_ts,
                      click.channel, click.user, error.cause)
            await _tell(deps, click, None, slack_wording_for("en").share_failed)
            return
        if taken is None or taken.asker != click.user:
            # Only the asker is ever shown the button; anything else is not a click on one of our answers.
            log.info("share click by %s on %s in %s: not a private reply of theirs, ignored", click.user,
                     click.message_ts, click.channel)
            return
        words = slack_wording_for(taken.language or "en")
        if not taken.first:
            await _tell(deps, click, taken, words.share_before)
            return
        await _post(click, taken, deps)


async def _post(click: ShareClick, taken: ShareTaken, deps: SlackDeps) -> None:
    words = slack_wording_for(taken.language or "en")
    message = shared_message(taken.message)
    try:
        response = await post_with_metadata(deps, click.channel, taken.thread_ts, taken.exchange_id, message)
    except SLACK_ERRORS as error:
        log.error("cannot share exchange %s in %s: %s; giving the share back", taken.exchange_id, click.channel,
                  slack_error(error))
        await give_back(deps.private_replies.release, taken.exchange_id, "share")
        await _tell(deps, click, taken, words.share_failed)
        return
    shared_ts = str(response.get("ts") or "")
    try:
        await deps.private_replies.posted(taken.exchange_id, shared_ts)
    except LogUnavailable as error:  # shared and recorded as such; only the post's ts is missing
        log.warning("could not note the shared reply of exchange %s (%s)", taken.exchange_id, error.cause)
    if taken.thread_ts:
        deps.threads.add(f"{click.channel}:{taken.thread_ts}")
    log.info("shared: exchange=%s user=%s reply=%s", taken.exchange_id, click.user, shared_ts)
    await _tell(deps, click, taken, words.share_done)


async def _tell(deps: SlackDeps, click: ShareClick, taken: ShareTaken | None, text: str) -> None:
    """Tell the asker only (ephemeral, in the thread); a refusal is logged, never raised."""
    thread = taken.thread_ts if taken is not None else None
    try:
        await deps.client.chat_postEphemeral(channel=click.channel, user=click.user, text=text,
                                             **({"thread_ts": thread} if thread else {}))
    except SLACK_ERRORS as error:
        log.info("could not tell %s about the share in %s (%s)", click.user, click.channel, slack_error(error))
