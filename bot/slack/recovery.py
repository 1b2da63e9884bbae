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

from bot.slack.answering import Attempt, answer_after_bug, lease_for, take_question
from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import Mention
from bot.slack.threads import BotUser
from retrieval.language import detect_language
from storage.claims import Claim, left_behind, take_over
from storage.journal import DATABASE_DOWN
from storage.records import ExchangeRecord

log = logging.getLogger(__name__)


def question_of(record: ExchangeRecord) -> Mention | None:
    """The Slack question a pending claim was made for (its row holds everything the event said)."""
    if not (record.event_id and record.channel_id and record.user_id and record.question_ts):
        return None
    thread = record.thread_ts if record.thread_ts and record.thread_ts != record.question_ts else None
    # mentioned: it was claimed, so it was already judged a question for the bot (a follow-up in its thread);
    # unprompted (a help channel's question, recorded on the claim): it still gets a reply only with support.
    unprompted = bool(record.route.get("unprompted"))
    return Mention(event_id=record.event_id, team_id=record.team_id, channel=record.channel_id,
                   user=record.user_id, ts=record.question_ts, thread_ts=thread, text=record.question,
                   mentioned=not unprompted, language=detect_language(record.question), unprompted=unprompted)


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
        lease = lease_for(deps)
        try:
            async with deps.sessions() as session:
                records = await left_behind(session, now=lease.now, owner_gone=deps.instance.owner_gone)
        except DATABASE_DOWN as error:
            log.warning("cannot look for questions left behind (%s); will look again", type(error).__name__)
            return 0
        taken = 0
        for record in records:
            question = question_of(record)
            if question is None or not deps.seen.first_time(question.event_id, question.message_key):
                continue  # a retry of it is being taken in this process right now
            try:
                async with deps.sessions() as session:
                    claim = await take_over(session, record.id, lease_for(deps), deps.instance.owner_gone)
            except DATABASE_DOWN as error:
                deps.seen.forget(question.event_id, question.message_key)
                log.warning("cannot take over exchange %s (%s); will try again", record.id, type(error).__name__)
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

    def _start(self, question: Mention, claim: Claim, bot: BotUser) -> None:
        attempt = Attempt()
        attempt.holds(claim)
        task = asyncio.create_task(self._answer(question, claim, bot, attempt), name=f"recover-{claim.exchange_id}")
        self._answering.add(task)
        task.add_done_callback(self._done)

    async def _answer(self, question: Mention, claim: Claim, bot: BotUser, attempt: Attempt) -> None:
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
