"""What people say of the bot's answers in Slack, written to the exchange log: leads' flags and anyone's votes.

    answer_at   the answer a Slack message is (by its channel and ts), with the labels of its kept citations
    flag        a flag reaction on it (everyone's is kept; ``is_lead`` decides whether it counts)
    unflag      the reaction taken back
    vote        a 👍 / 👎 click under it: the user's one vote (a later click replaces it)

The rules live in ``storage.flags`` and ``storage.feedback``; an exchange deleted between the lookup and the write
is reported as False / None, an outage as ``bot.exchange_log.LogUnavailable``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.exchange_log import reached
from storage.errors import UnknownExchange
from storage.exchanges import find_by_reply
from storage.feedback import record_feedback
from storage.flags import add_flag, remove_flag


@dataclass(frozen=True, slots=True)
class PostedAnswer:
    exchange_id: str
    labels: frozenset[str]  # "S1" …: the citations shown


class Verdicts:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def answer_at(self, channel: str, reply_ts: str) -> PostedAnswer | None:
        """The answer posted as this message; None when it is not one of the bot's answers."""
        with reached("flag"):
            async with self._sessions() as session:
                record = await find_by_reply(session, channel, reply_ts)
        if record is None:
            return None
        return PostedAnswer(record.id, frozenset(c.label for c in record.citations if c.kept))

    async def flag(self, exchange_id: str, *, label: str | None, user: str, reaction: str, is_lead: bool,
                   at: datetime) -> bool:
        """Record the flag (idempotent); False when the exchange is gone."""
        with reached("flag"):
            async with self._sessions() as session:
                try:
                    await add_flag(session, exchange_id, label=label, user_id=user, reaction=reaction,
                                   is_lead=is_lead, at=at)
                except UnknownExchange:
                    return False
        return True

    async def unflag(self, exchange_id: str, *, label: str | None, user: str, reaction: str, at: datetime) -> bool:
        """Take the flag back; False when the exchange is gone."""
        with reached("flag"):
            async with self._sessions() as session:
                try:
                    await remove_flag(session, exchange_id, label=label, user_id=user, reaction=reaction, at=at)
                except UnknownExchange:
                    return False
        return True

    async def vote(self, channel: str, reply_ts: str, *, user: str, positive: bool, at: datetime) -> str | None:
        """Record ``user``'s vote on the answer posted as this message; its exchange id, or None when it is not one
        of the bot's answers (or was deleted meanwhile)."""
        with reached("feedback"):
            async with self._sessions() as session:
                record = await find_by_reply(session, channel, reply_ts)
                if record is None:
                    return None
                try:
                    await record_feedback(session, record.id, user_id=user, positive=positive, at=at)
                except UnknownExchange:
                    return None
        return record.id
