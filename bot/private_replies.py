"""Private replies as the Slack edge asks for them: a private-first channel's answer, shown to the asker only,
kept so that **Share in thread** can post it as the bot's reply, once.

    keep      the ephemeral message as the asker saw it, against the exchange just recorded
    take      the private reply a Share click is on (by its channel and ts), its share claimed for the clicker:
              only the click that claims it posts, so a second click or one Slack delivers twice never posts again
    posted    note the reply posted in the thread (it becomes the exchange's reply)
    release   give the share back when the post failed, so a later click can try again

The rules live in ``storage.private_replies``; an exchange not (yet) in the log is reported as False / None, an
outage as ``bot.exchange_log.LogUnavailable``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.exchange_log import reached
from storage.errors import UnknownExchange
from storage.exchanges import find_by_reply
from storage.private_replies import (
    claim_share,
    keep_private_reply,
    private_reply_at,
    release_share,
    share_posted,
)
from storage.records import PrivateReplyRecord


@dataclass(frozen=True, slots=True)
class ShareTaken:
    exchange_id: str
    asker: str  # who the answer was shown to: the only one who may share it
    thread_ts: str | None
    language: str | None
    message: dict[str, Any]  # what the asker saw: {"text": …, "blocks": […]}
    first: bool  # True: this click claimed the share; False: shared before (or by someone else's click)


class PrivateReplies:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def keep(self, exchange_id: str, *, channel: str, user: str, message_ts: str, message: dict[str, Any],
                   at: datetime) -> bool:
        """Keep what the asker saw; False when the exchange is not in the log (it waits in the journal)."""
        with reached("private reply"):
            async with self._sessions() as session:
                try:
                    await keep_private_reply(session, PrivateReplyRecord(exchange_id, channel, user, message_ts,
                                                                         message, at))
                except UnknownExchange:
                    return False
        return True

    async def take(self, channel: str, message_ts: str, *, user: str, at: datetime) -> ShareTaken | None:
        """The private reply shown as this ephemeral message, its share claimed for ``user`` when ``user`` is its
        asker; None when it is none of ours."""
        with reached("share"):
            async with self._sessions() as session:  # no Slack call while the session is open
                reply = await private_reply_at(session, channel, message_ts)
                record = await find_by_reply(session, channel, message_ts) if reply is not None else None
                if reply is None or record is None:
                    return None
                first = False
                if user == reply.user_id:
                    claimed, first = await claim_share(session, reply.exchange_id, user_id=user, at=at)
                    reply = claimed or reply
        return ShareTaken(reply.exchange_id, reply.user_id, record.thread_ts, record.language, reply.message, first)

    async def posted(self, exchange_id: str, message_ts: str) -> None:
        with reached("share post"):
            async with self._sessions() as session:
                await share_posted(session, exchange_id, message_ts)

    async def release(self, exchange_id: str) -> None:
        with reached("share release"):
            async with self._sessions() as session:
                await release_share(session, exchange_id)
