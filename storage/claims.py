"""Claims on Slack events: at-least-once work, exactly-once replies, across restarts and replicas.

A claim is the 'pending' exchange row that holds a Slack event id (unique: one row per event), with a lease —
``claimed_by`` (the instance answering it) and ``lease_until``. The holder renews the lease while it works.
Whoever finds the row still pending may take the claim over when the lease has run out, or when its owner is
provably gone (``owner_gone``: the caller's test, e.g. a process of this host that no longer exists).

    claim_event     Slack's event arrives: insert the claim, or take over one that was left behind
    take_over       the start-up sweep takes a left-behind claim by its exchange id
    renew_lease     the holder, every third of the lease, while it answers
    left_behind     pending Slack claims whose lease ran out or whose owner is gone, oldest first
    pending_count   how many claims are pending (being answered, or left behind), for the /metrics gauge

Taking over is a compare-and-swap on the owner and expiry read a moment before (one UPDATE … WHERE), so two
instances racing for the same left-behind claim cannot both win, on SQLite and PostgreSQL alike. The winner must
still look in the thread for a reply the gone owner may have posted before dying (the Slack edge does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.exchanges import new_exchange, to_record
from storage.models import Exchange
from storage.records import ExchangeRecord, Source, require_aware

OwnerGone = Callable[[str], bool]


def _never_gone(owner: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a claim, until when, and the time it is now (all aware datetimes)."""

    owner: str
    until: datetime
    now: datetime

    def __post_init__(self) -> None:
        require_aware("until", self.until)
        require_aware("now", self.now)


@dataclass(frozen=True, slots=True)
class Claim:
    """The exchange this instance now answers; ``taken_over`` when it was left behind by another holder."""

    exchange_id: str
    created_at: datetime
    taken_over: bool = False
    previous_owner: str | None = None


async def claim_event(
    session: AsyncSession,
    event_id: str,
    *,
    exchange_id: str,
    created_at: datetime,
    source: Source,
    lease: Lease,
    owner_gone: OwnerGone = _never_gone,
    question: str = "",
    language: str | None = None,
    team_id: str | None = None,
    channel_id: str | None = None,
    user_id: str | None = None,
    thread_ts: str | None = None,
    question_ts: str | None = None,
    route: Mapping[str, Any] | None = None,
) -> Claim | None:
    """Claim a Slack event: a new claim, a left-behind one taken over, or None (held by a live owner, or done).

    Call it with a session holding no other changes: a lost insert rolls the session back.
    """
    record = ExchangeRecord(
        id=exchange_id, created_at=created_at, source=source, question=question, outcome="pending", language=language,
        event_id=event_id, team_id=team_id, channel_id=channel_id, user_id=user_id, thread_ts=thread_ts,
        question_ts=question_ts, route=dict(route or {}),
    )
    row = new_exchange(record, event_id)
    row.claimed_by, row.lease_until = lease.owner, lease.until
    session.add(row)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        return await _take_over(session, Exchange.event_id == event_id, lease, owner_gone)
    return Claim(exchange_id, created_at)


async def take_over(session: AsyncSession, exchange_id: str, lease: Lease,
                    owner_gone: OwnerGone = _never_gone) -> Claim | None:
    """Take the left-behind claim of this exchange; None when it is held by a live owner or no longer pending."""
    return await _take_over(session, Exchange.id == exchange_id, lease, owner_gone)


async def renew_lease(session: AsyncSession, exchange_id: str, lease: Lease) -> bool:
    """Extend our lease; False when the claim is no longer ours (taken over, or completed)."""
    result = await session.execute(
        update(Exchange)
        .where(Exchange.id == exchange_id, Exchange.claimed_by == lease.owner, Exchange.outcome == "pending")
        .values(lease_until=lease.until)
        .execution_options(synchronize_session=False)
    )
    await session.commit()
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def left_behind(session: AsyncSession, *, now: datetime, owner_gone: OwnerGone = _never_gone,
                      limit: int = 100) -> list[ExchangeRecord]:
    """Pending Slack claims nobody is answering (lease run out, or owner gone), oldest first."""
    require_aware("now", now)
    statement = (
        select(Exchange)
        .where(Exchange.outcome == "pending", Exchange.source == "slack", Exchange.event_id.is_not(None))
        .order_by(Exchange.created_at, Exchange.id)
        .limit(limit)
    )
    rows = (await session.scalars(statement)).all()
    return [to_record(row, children=False) for row in rows
            if _takeable(row.claimed_by, row.lease_until, now, owner_gone)]


async def pending_count(session: AsyncSession) -> int:
    """Exchanges still pending: claimed by an instance that is answering them, or left behind by one."""
    return int(await session.scalar(select(func.count()).select_from(Exchange).where(Exchange.outcome == "pending"))
               or 0)


def _takeable(owner: str | None, lease_until: datetime | None, now: datetime, owner_gone: OwnerGone) -> bool:
    """A pending claim nobody answers: no lease, a lease run out, or an owner known to be gone."""
    if lease_until is None or owner is None or lease_until <= now:
        return True
    return owner_gone(owner)


async def _take_over(session: AsyncSession, which: ColumnElement[bool], lease: Lease,
                     owner_gone: OwnerGone) -> Claim | None:
    row = (await session.execute(
        select(Exchange.id, Exchange.created_at, Exchange.outcome, Exchange.claimed_by, Exchange.lease_until)
        .where(which)
    )).one_or_none()
    await session.rollback()  # end the read; the swap below decides
    if row is None or row.outcome != "pending":
        return None
    if row.claimed_by == lease.owner or not _takeable(row.claimed_by, row.lease_until, lease.now, owner_gone):
        return None
    swapped = await session.execute(
        update(Exchange)
        .where(Exchange.id == row.id, Exchange.outcome == "pending",
               Exchange.claimed_by.is_not_distinct_from(row.claimed_by),
               Exchange.lease_until.is_not_distinct_from(row.lease_until))
        .values(claimed_by=lease.owner, lease_until=lease.until)
        .execution_options(synchronize_session=False)
    )
    await session.commit()
    if not swapped.rowcount:  # type: ignore[attr-defined]
        return None  # another instance took it first
    return Claim(row.id, row.created_at, taken_over=True, previous_owner=row.claimed_by)
