"""Reactions on the bot's replies: the leads' flags, taken back, and resolved.

Every reaction is recorded, but only a lead's reaction that is still on the message is a flag
(`FlagRecord.is_flag`): the review queue and the stats count those, while other people's reactions stay
visible as context. Nothing is deleted: taking a reaction back sets `removed_at`, and adding it again opens a
new row, so the history of who flagged what, when, survives.

Slack may deliver a reaction event twice (retries, several replicas). Flag writes for one exchange are
therefore serialised by a no-op UPDATE of the exchange row (a row lock on PostgreSQL, the write lock on
SQLite) before the open flag is looked up, so a repeated reaction finds the open flag instead of adding a
second one. Each write commits before it returns.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, and_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import UnknownExchange, UnknownFlag
from storage.models import Exchange, Flag
from storage.records import (
    RESOLUTIONS,
    FlagRecord,
    Resolution,
    require_aware,
    require_choice,
)


async def add_flag(
    session: AsyncSession,
    exchange_id: str,
    *,
    label: str | None,
    user_id: str,
    reaction: str,
    is_lead: bool,
    at: datetime,
) -> FlagRecord:
    """Record a reaction (on the whole answer when `label` is None, else on citation `label`).

    Returns the open flag: the existing one when the same person's same reaction is already there.
    Raises UnknownExchange when there is no such exchange.
    """
    require_aware("at", at)
    at = at.astimezone(UTC)
    await lock_exchange(session, exchange_id)
    existing = await session.scalar(
        select(Flag).where(_same_reaction(exchange_id, label, user_id, reaction), Flag.removed_at.is_(None))
        .order_by(Flag.created_at).limit(1)
    )
    if existing is not None:
        record = _to_record(existing)
        await session.commit()
        return record
    flag = Flag(
        id=str(uuid.uuid4()), exchange_id=exchange_id, label=label, user_id=user_id, reaction=reaction,
        is_lead=is_lead, created_at=at,
    )
    session.add(flag)
    await session.flush()
    record = _to_record(flag)
    await session.commit()
    return record


async def remove_flag(
    session: AsyncSession,
    exchange_id: str,
    *,
    label: str | None,
    user_id: str,
    reaction: str,
    at: datetime,
) -> bool:
    """Mark the reaction as taken back at `at`; False when it was not on the message.

    Raises UnknownExchange when there is no such exchange.
    """
    require_aware("at", at)
    await lock_exchange(session, exchange_id)
    result = await session.execute(
        update(Flag)
        .where(_same_reaction(exchange_id, label, user_id, reaction), Flag.removed_at.is_(None))
        .values(removed_at=at)
        .execution_options(synchronize_session=False)
    )
    await session.commit()
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def resolve_flag(
    session: AsyncSession,
    flag_id: str,
    *,
    resolution: Resolution,
    note: str | None,
    by: str,
    at: datetime,
) -> FlagRecord:
    """Close a flag with a lead's verdict; resolving again replaces the earlier verdict.

    Raises UnknownFlag for an id that is not a flag, ValueError for an unknown resolution.
    """
    require_choice("resolution", resolution, RESOLUTIONS)
    require_aware("at", at)
    at = at.astimezone(UTC)
    flag = await session.get(Flag, flag_id, with_for_update=True, populate_existing=True)
    if flag is None:
        await session.rollback()
        raise UnknownFlag(f"no flag with id {flag_id!r}")
    flag.resolution = resolution
    flag.resolution_note = note
    flag.resolved_by = by
    flag.resolved_at = at
    await session.flush()
    record = _to_record(flag)
    await session.commit()
    return record


async def flags_for(session: AsyncSession, exchange_id: str) -> list[FlagRecord]:
    """Every reaction recorded on the exchange's reply, oldest first, including removed and non-lead ones."""
    rows = await session.scalars(
        select(Flag).where(Flag.exchange_id == exchange_id).order_by(Flag.created_at, Flag.id)
        .execution_options(populate_existing=True)
    )
    return [_to_record(row) for row in rows]


async def lock_exchange(session: AsyncSession, exchange_id: str) -> None:
    """Serialise writes about one exchange on its row (``UnknownExchange``, rolled back, if there is none)."""
    result = await session.execute(
        update(Exchange).where(Exchange.id == exchange_id).values(source=Exchange.source)
        .execution_options(synchronize_session=False)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        await session.rollback()
        raise UnknownExchange(f"no exchange with id {exchange_id!r}")


def _same_reaction(exchange_id: str, label: str | None, user_id: str, reaction: str) -> ColumnElement[bool]:
    same_label = Flag.label.is_(None) if label is None else Flag.label == label
    return and_(Flag.exchange_id == exchange_id, same_label, Flag.user_id == user_id, Flag.reaction == reaction)


def _to_record(row: Flag) -> FlagRecord:
    return FlagRecord(
        id=row.id, exchange_id=row.exchange_id, label=row.label, user_id=row.user_id, reaction=row.reaction,
        is_lead=row.is_lead, created_at=row.created_at, removed_at=row.removed_at,
        resolution=row.resolution,  # type: ignore[arg-type]
        resolution_note=row.resolution_note, resolved_by=row.resolved_by, resolved_at=row.resolved_at,
    )
