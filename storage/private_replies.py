"""Private replies: a private-first channel's answer, shown to the asker only, and its one share in the thread.

    keep          the ephemeral message as the asker saw it, against its exchange (written once: a second
                  write for the same exchange leaves the first)
    at            the private reply a click on the ephemeral message is about (by channel and its ts)
    claim_share   mark it shared by the clicker: only the call that sets ``shared_at`` posts, so a second click
                  or a click Slack delivers twice never posts the answer again
    share_posted  note the reply posted in the thread; it becomes the exchange's reply (``reply_ts``), so
                  reactions, feedback and hand-offs on the shared message find the exchange
    release_share a post Slack refused gives the share back, so a later click can try again
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import UnknownExchange
from storage.models import Exchange, PrivateReply
from storage.records import PrivateReplyRecord, require_aware


async def keep_private_reply(session: AsyncSession, reply: PrivateReplyRecord) -> PrivateReplyRecord:
    """Record the private reply (the one already there, if any, stays); commits. ``UnknownExchange`` if its
    exchange is not in the log."""
    if await session.scalar(select(Exchange.id).where(Exchange.id == reply.exchange_id)) is None:
        raise UnknownExchange(f"no exchange with id {reply.exchange_id!r}")
    session.add(PrivateReply(exchange_id=reply.exchange_id, channel_id=reply.channel_id, user_id=reply.user_id,
                             message_ts=reply.message_ts, message=reply.message, created_at=reply.created_at))
    try:
        await session.commit()
    except IntegrityError:  # written before (a retried delivery): the first one is what the asker saw
        await session.rollback()
    earlier = await private_reply_for(session, reply.exchange_id)
    assert earlier is not None
    return earlier


async def private_reply_at(session: AsyncSession, channel_id: str, message_ts: str) -> PrivateReplyRecord | None:
    """The private reply posted as the ephemeral message ``message_ts`` in ``channel_id``, if any."""
    row = await session.scalar(select(PrivateReply).where(PrivateReply.channel_id == channel_id,
                                                          PrivateReply.message_ts == message_ts))
    return _to_record(row) if row is not None else None


async def private_reply_for(session: AsyncSession, exchange_id: str) -> PrivateReplyRecord | None:
    row = await session.scalar(select(PrivateReply).where(PrivateReply.exchange_id == exchange_id))
    return _to_record(row) if row is not None else None


async def claim_share(session: AsyncSession, exchange_id: str, *, user_id: str,
                      at: datetime) -> tuple[PrivateReplyRecord | None, bool]:
    """The private reply, and whether this call marked it shared (False: shared, or being shared, before);
    commits. (None, False) when there is no private reply for the exchange."""
    require_aware("at", at)
    result = await session.execute(
        update(PrivateReply).where(PrivateReply.exchange_id == exchange_id, PrivateReply.shared_at.is_(None))
        .values(shared_by=user_id, shared_at=at))
    await session.commit()
    return await private_reply_for(session, exchange_id), result.rowcount == 1  # type: ignore[attr-defined]


async def share_posted(session: AsyncSession, exchange_id: str, shared_ts: str) -> None:
    """Note the reply posted in the thread and make it the exchange's reply; commits."""
    await session.execute(update(PrivateReply).where(PrivateReply.exchange_id == exchange_id)
                          .values(shared_ts=shared_ts))
    await session.execute(update(Exchange).where(Exchange.id == exchange_id).values(reply_ts=shared_ts))
    await session.commit()


async def release_share(session: AsyncSession, exchange_id: str) -> None:
    """Give the share back when its post failed; commits."""
    await session.execute(update(PrivateReply).where(PrivateReply.exchange_id == exchange_id)
                          .values(shared_by=None, shared_at=None, shared_ts=None))
    await session.commit()


def _to_record(row: PrivateReply) -> PrivateReplyRecord:
    return PrivateReplyRecord(row.exchange_id, row.channel_id, row.user_id, row.message_ts, dict(row.message),
                              row.created_at, row.shared_by, row.shared_at, row.shared_ts)
