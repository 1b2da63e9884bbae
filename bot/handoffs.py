"""Hand-offs as the Slack edge asks for them: an "Ask a person" click under one of the bot's answers, written to
the exchange log.

    take      the answer a Slack message is (by its channel and ts) and, where the channel names a hand-off
              group, its one hand-off claimed for the clicker: only the click that makes the row posts, so a
              second click, a second person or a click Slack delivers twice never posts again
    posted    note the message that brought a person in
    release   give the hand-off back when the post failed, so a later click can try again

The rules live in ``storage.handoffs``; an exchange deleted between the lookup and the write is reported as None,
an outage as ``bot.exchange_log.LogUnavailable``. As for an exchange's own write (``storage.journal``), a database
that does not answer within ``timeout_s`` is down: the clicker is told at once instead of waiting on a lock.
A click the log could not take writes nothing, so the next one after the outage hands off (once); a hand-off
claimed before the outage stays claimed whatever fails after it, so it is never posted twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.exchange_log import reached
from storage.errors import UnknownExchange
from storage.exchanges import find_by_reply
from storage.handoffs import claim_handoff, handoff_posted, release_handoff
from storage.journal import WRITE_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class AnsweredQuestion:
    """What a hand-off post says of the exchange under the button."""

    exchange_id: str
    question: str
    asker: str | None  # the Slack user who asked
    thread_ts: str | None
    question_ts: str | None  # the question's own message (a DM hand-off links to it)
    answered: bool  # the bot answered with quotes (else: it found no support)
    language: str | None


@dataclass(frozen=True, slots=True)
class HandoffTaken:
    answer: AnsweredQuestion
    first: bool | None  # True: this click made the hand-off; False: handed off before; None: none asked for
    by: str | None = None  # who handed it off, when it was before


class Handoffs:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], timeout_s: float = WRITE_TIMEOUT_S) -> None:
        self._sessions = sessions
        self._timeout_s = timeout_s

    async def take(self, channel: str, reply_ts: str, *, user: str, at: datetime,
                   claim: bool) -> HandoffTaken | None:
        """The answer posted as this message and, with ``claim``, its hand-off claimed for ``user``; None when
        the message is not one of the bot's answers (or it was deleted meanwhile)."""
        with reached("hand-off"):
            # no Slack call while the session is open
            async with asyncio.timeout(self._timeout_s), self._sessions() as session:
                record = await find_by_reply(session, channel, reply_ts)
                if record is None:
                    return None
                answer = AnsweredQuestion(record.id, record.question, record.user_id, record.thread_ts,
                                          record.question_ts, record.outcome == "answered", record.language)
                if not claim:
                    return HandoffTaken(answer, None)
                try:
                    handoff, first = await claim_handoff(session, record.id, user_id=user, at=at)
                except UnknownExchange:
                    return None
        return HandoffTaken(answer, first, None if first else handoff.user_id)

    async def posted(self, exchange_id: str, message_ts: str) -> None:
        with reached("hand-off post"):
            async with asyncio.timeout(self._timeout_s), self._sessions() as session:
                await handoff_posted(session, exchange_id, message_ts)

    async def release(self, exchange_id: str) -> None:
        with reached("hand-off release"):
            async with asyncio.timeout(self._timeout_s), self._sessions() as session:
                await release_handoff(session, exchange_id)
