"""Questions a crash left behind are finished: at start-up, then every half lease, by whichever instance runs.

A question claimed by an instance that was killed (``kill -9``, out of memory, a node lost) stays a pending
exchange whose lease nobody renews. Slack's retries of its event take it over when they arrive (see
``bot.slack.answering``); this sweep covers the rest — Slack stopped retrying, or the retry came while the lease
still ran. Each left-behind claim is taken over (a compare-and-swap, so two replicas never both take one) and
answered on the usual path, oldest first, in order within its channel: the thread is checked for a reply the
gone owner may already have posted, and a question older than ``missed_after_s`` gets "please ask again".
"""

from __future__ import annotations

import asyncio
import logging

from bot.answer.types import Question
from bot.claims import Claim, LeftBehind
from bot.exchange_log import LogUnavailable
from bot.slack.answering import Attempt, answer_after_bug, take_question
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import SlackQuestion
from bot.slack.threads import BotUser

log = logging.getLogger(__name__)


def question_of(left: LeftBehind) -> SlackQuestion:
    """The Slack question a pending claim was made for (its row holds everything the event said, and the language
    detected when it was parsed; a claim made before claims kept it has it detected again, by ``Question``)."""
    ids = left.slack
    thread = ids.thread_ts if ids.thread_ts and ids.thread_ts != ids.question_ts else None
    # mentioned: it was claimed, so it was already judged a question for the bot (a follow-up in its thread);
    # unprompted (a help channel's question, recorded on the claim): it still gets a reply only with support.
    return SlackQuestion(event_id=ids.event_id, team_id=ids.team_id, user=ids.user, ts=ids.question_ts,
                         thread_ts=thread, asked=Question(left.question, ids.channel, language=left.language or ""),
                         mentioned=not left.unprompted, unprompted=left.unprompted)


class Recovery:
    """The sweep of one running bot; ``sweep`` once, or ``run`` until cancelled."""

    def __init__(self, deps: SlackDeps) -> None:
        self._deps = deps
        self._bot: BotUser | None = None
        self._answering: set[asyncio.Task[None]] = set()  # strong references while they run

    async def run(self) -> None:
        while True:
            await self.sweep()
            await asyncio.sleep(self._deps.options.claim_lease_s / 2)

    async def sweep(self) -> int:
        """Take over every left-behind claim and start answering it; returns how many were taken."""
        deps = self._deps
        bot = await self._bot_user()
        if bot is None:
            return 0
        try:
            left = await deps.claims.left_behind()
        except LogUnavailable as error:
            log.warning("cannot look for questions left behind (%s); will look again", error.cause)
            return 0
        taken = 0
        for pending in left:
            question = question_of(pending)
            if not deps.seen.first_time(question.event_id, question.message_key):
                continue  # a retry of it is being taken in this process right now
            try:
                claim = await deps.claims.take_over(pending.exchange_id)
            except LogUnavailable as error:
                deps.seen.forget(question.event_id, question.message_key)
                log.warning("cannot take over exchange %s (%s); will try again", pending.exchange_id, error.cause)
                return taken
            if claim is None:  # another instance was quicker
                deps.seen.forget(question.event_id, question.message_key)
                continue
            log.warning("recovering exchange %s (event %s in %s, asked %s) left behind by %s", claim.exchange_id,
                        question.event_id, question.channel, claim.created_at.isoformat(), claim.previous_owner)
            self._start(question, claim, bot)
            taken += 1
        return taken

    async def drain(self) -> None:
        """Wait for the recovered questions still being answered (a clean shutdown)."""
        if self._answering:
            await asyncio.gather(*self._answering, return_exceptions=True)

    def _start(self, question: SlackQuestion, claim: Claim, bot: BotUser) -> None:
        attempt = Attempt()
        attempt.holds(claim)
        task = asyncio.create_task(self._answer(question, claim, bot, attempt), name=f"recover-{claim.exchange_id}")
        self._answering.add(task)
        task.add_done_callback(self._done)

    async def _answer(self, question: SlackQuestion, claim: Claim, bot: BotUser, attempt: Attempt) -> None:
        try:
            await take_question(question, self._deps, bot, attempt, claim=claim)
        except Exception as error:  # a bug: what Bolt's error handler does for an event, done here
            log.error("recovering exchange %s failed", claim.exchange_id, exc_info=error)
            if attempt.taken:
                await answer_after_bug(question, self._deps, attempt, error)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._answering.discard(task)

    async def _bot_user(self) -> BotUser | None:
        if self._bot is None:
            try:
                response = await self._deps.client.auth_test()
            except SLACK_ERRORS as error:
                log.warning("cannot learn the bot's identity for recovery (%s); will try again", slack_error(error))
                return None
            self._bot = BotUser(user_id=response.get("user_id"), bot_id=response.get("bot_id"))
        return self._bot
