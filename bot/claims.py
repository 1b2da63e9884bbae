"""The questions the Slack edge takes, as claims in the exchange log: a lease this instance holds while it answers.

    claim        a new question: claim its event (or take over the claim a dead instance left behind); None when a
                 live instance holds it or it was answered
    renew        every third of the lease, while answering; False once the claim is no longer ours
    left_behind  the sweep: questions whose lease ran out or whose owner is gone, oldest first
    take_over    the sweep takes one of them (a compare-and-swap: two replicas never both take it)

The rules live in ``storage.claims``; this service holds who "we" are (``Instance``) and how long a lease runs,
and turns an outage into ``bot.exchange_log.LogUnavailable``. The question's language is kept in the claim, so the
sweep answers a recovered question in it without detecting it again; so is whether nobody asked the bot (a help
channel's ``unprompted`` question), so the sweep finishes it under the channel's rule (a reply only with support).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.exchange_log import reached
from bot.instance import Instance
from storage import claims
from storage.claims import Claim, Lease

__all__ = ["Claim", "Claims", "LeftBehind", "SlackIds"]


@dataclass(frozen=True, slots=True)
class SlackIds:
    """Where a question was asked in Slack, as the claim records it."""

    event_id: str
    team_id: str | None
    channel: str
    user: str
    thread_ts: str | None  # the thread the reply goes in
    question_ts: str


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """A claimed question nobody is answering: what its claim recorded of it."""

    exchange_id: str
    slack: SlackIds
    question: str
    language: str | None  # None: claimed before claims kept it
    unprompted: bool = False  # a help channel's question nobody asked the bot (recorded on the claim's route)


class Claims:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], instance: Instance, lease_s: float) -> None:
        self._sessions = sessions
        self._instance = instance
        self._lease_s = lease_s

    def _lease(self) -> Lease:
        now = datetime.now(UTC)
        return Lease(str(self._instance), now + timedelta(seconds=self._lease_s), now)

    async def claim(self, slack: SlackIds, *, exchange_id: str, created_at: datetime, question: str,
                    language: str, unprompted: bool = False) -> Claim | None:
        with reached("claim"):
            async with self._sessions() as session:
                return await claims.claim_event(
                    session, slack.event_id, exchange_id=exchange_id, created_at=created_at, source="slack",
                    lease=self._lease(), owner_gone=self._instance.owner_gone, question=question, language=language,
                    route={"unprompted": True} if unprompted else None, team_id=slack.team_id,
                    channel_id=slack.channel, user_id=slack.user, thread_ts=slack.thread_ts,
                    question_ts=slack.question_ts)

    async def renew(self, claim: Claim) -> bool:
        with reached("lease"):
            async with self._sessions() as session:
                return await claims.renew_lease(session, claim.exchange_id, self._lease())

    async def left_behind(self) -> list[LeftBehind]:
        with reached("sweep"):
            async with self._sessions() as session:
                records = await claims.left_behind(session, now=datetime.now(UTC),
                                                   owner_gone=self._instance.owner_gone)
        return [LeftBehind(r.id, SlackIds(r.event_id, r.team_id, r.channel_id, r.user_id, r.thread_ts, r.question_ts),
                           r.question, r.language, unprompted=bool(r.route.get("unprompted")))
                for r in records if r.event_id and r.channel_id and r.user_id and r.question_ts]

    async def take_over(self, exchange_id: str) -> Claim | None:
        with reached("take-over"):
            async with self._sessions() as session:
                return await claims.take_over(session, exchange_id, self._lease(), self._instance.owner_gone)
