"""Help channels: which messages the bot takes in a channel, and when it stays silent in one.

    takes     by the channel's mode (``bot.channels``): ``off`` takes nothing there; ``mention`` takes mentions and
              follow-ups in the bot's threads, as always; ``every_question`` also takes a person's top-level
              message that mentions nobody (``SlackQuestion.unprompted``) when it reads as a question
              (``bot.slack.question_like``). DMs and the assistant pane are no channel's: always taken.
    silent    an unprompted question gets a reply only when the bot has support: an answer whose evidence
              probability (``AnswerResult.evidence_probability``, where the local model decided) reaches the
              channel's threshold, and no person has answered in the thread meanwhile. Otherwise nothing is
              posted and the exchange is recorded as ``not_answered`` (an error stays an error, also unposted).

Everything else about an unprompted question (claim, dedupe, recovery, history, recording) is a mention's path.
"""

from __future__ import annotations

import contextlib
import logging

from bot.answer.service import AnswerResult
from bot.answer.types import Answered
from bot.channels import ChannelSettings
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import SlackQuestion
from bot.slack.question_like import looks_like_question
from bot.slack.threads import BotUser, thread_messages

log = logging.getLogger(__name__)


async def settings_for(question: SlackQuestion, deps: SlackDeps) -> ChannelSettings | None:
    """The settings of the question's channel when the bot takes it there; None when it does not."""
    settings = (await deps.channels.current()).of(question.channel)
    if question.private:
        return settings
    if settings.mode == "off":
        log.info("event %s in %s: the channel is off, ignored", question.event_id, question.channel)
        return None
    if question.unprompted and (settings.mode != "every_question" or not looks_like_question(question.text)):
        return None  # chatter, or a channel where the bot speaks only when spoken to
    return settings


def has_support(result: AnswerResult | None, settings: ChannelSettings) -> bool:
    """Whether an unprompted question's answer is one to post: answered, and at least the channel's threshold
    where the local model gave a probability (Cohere's route has none: its own decision stands)."""
    if result is None or not isinstance(result.outcome, Answered):
        return False
    return result.evidence_probability is None or result.evidence_probability >= settings.threshold


async def person_answered(question: SlackQuestion, deps: SlackDeps, bot: BotUser) -> bool:
    """Whether someone other than the asker and the bot has replied under the question (then the bot keeps out).
    If Slack cannot be asked, False: the answer, which has support, goes out."""
    replies = thread_messages(deps.client, question.channel, question.reply_thread)
    try:
        async with contextlib.aclosing(replies):
            async for message in replies:
                user = message.get("user")
                if (message.get("ts") != question.ts and not message.get("bot_id") and user
                        and user not in (question.user, bot.user_id)):
                    return True
    except SLACK_ERRORS as error:
        log.info("cannot read the thread of %s in %s (%s); answering", question.ts, question.channel,
                 slack_error(error))
    return False
