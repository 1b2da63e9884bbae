"""Hand-offs: an "Ask a person" click under one of the bot's replies, recorded against its exchange.

One hand-off per exchange, whoever clicks and however often Slack delivers the click: ``claim_handoff`` inserts
the row under the exchange's unique constraint and only the caller that inserted it posts in the thread (then
``handoff_posted``); one that loses gets the row already there. A post that fails gives the row back
(``release_handoff``), so a later click can try again instead of the exchange showing "handed off" with nobody told.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import UnknownExchange
from storage.models import Exchange, Handoff
from storage.records import HandoffRecord, require_aware


async def claim_handoff(session: AsyncSession, exchange_id: str, *, user_id: str,
                        at: datetime) -> tuple[HandoffRecord, bool]:
    """The exchange's hand-off and whether this call made it (False: it was handed off before); commits.
    ``UnknownExchange`` if there is no such exchange."""
    require_aware("at", at)
    if await session.scalar(select(Exchange.id).where(Exchange.id == exchange_id)) is None:
        raise UnknownExchange(f"no exchange with id {exchange_id!r}")
    row = Handoff(id=str(uuid.uuid4()), exchange_id=exchange_id, user_id=user_id, created_at=at)
    record = _to_record(row)
    session.add(row)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        earlier = await handoff_for(session, exchange_id)
        if earlier is None:  # given back between our insert and this read: the next click may try
            raise
        return earlier, False
    return record, True


async def handoff_posted(session: AsyncSession, exchange_id: str, message_ts: str) -> None:
    """Note the message that brought a person in; commits."""
    await session.execute(update(Handoff).where(Handoff.exchange_id == exchange_id).values(message_ts=message_ts))
    await session.commit()


async def release_handoff(session: AsyncSession, exchange_id: str) -> None:
    """Give the hand-off back when nobody could be told (the post failed); commits."""
    await session.execute(delete(Handoff).where(Handoff.exchange_id == exchange_id))
    await session.commit()


async def handoff_for(session: AsyncSession, exchange_id: str) -> HandoffRecord | None:
    row = await session.scalar(select(Handoff).where(Handoff.exchange_id == exchange_id))
    return _to_record(row) if row is not None else None


async def handed_off(session: AsyncSession, exchange_ids: Iterable[str]) -> set[str]:
    """Which of these exchanges were handed off."""
    ids = list(exchange_ids)
    if not ids:
        return set()
    return set(await session.scalars(select(Handoff.exchange_id).where(Handoff.exchange_id.in_(ids))))


def _to_record(row: Handoff) -> HandoffRecord:
    require_aware("created_at", row.created_at)
    return HandoffRecord(row.exchange_id, row.user_id, row.created_at, row.message_ts)
