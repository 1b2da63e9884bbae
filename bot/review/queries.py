"""Reads the review desk needs that `storage` does not offer (yet), written against its session and models.

Candidates to move into `storage/` (and why they are here for now: storage is another engineer's package):

    review_queue     the union the desk shows by default (flagged OR no_support OR error); built on
                     `storage.exchanges.list_exchanges`, one call per selection, merged newest first
    thread_history   the turns of a Slack thread *before* a given exchange (`thread_turns` gives the
                     latest ones, which for an old exchange includes what came after it)
    exchange_exists  a cheap existence check (get_exchange loads every child row)

Like storage's functions, each takes an `AsyncSession` and builds no engine.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.review.export import PriorTurn
from storage.exchanges import list_exchanges
from storage.models import Exchange
from storage.records import ExchangeSummary, require_aware


async def review_queue(
    session: AsyncSession,
    *,
    flagged: bool = False,
    no_support: bool = False,
    errors: bool = False,
    everything: bool = False,
    channel_id: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
) -> list[ExchangeSummary]:
    """The review queue, newest first: exchanges that are flagged, or had no support, or failed.

    Each of `flagged`, `no_support`, `errors` adds its exchanges; none of them means all three (the default
    queue). `everything` lists every exchange instead (pending ones too).
    """
    if everything:
        return await list_exchanges(session, channel_id=channel_id, since=since, limit=limit)
    if not (flagged or no_support or errors):
        flagged = no_support = errors = True
    selections: list[dict[str, object]] = []
    if flagged:
        selections.append({"flagged": True})
    if no_support:
        selections.append({"outcome": "no_support"})
    if errors:
        selections.append({"outcome": "error"})
    merged: dict[str, ExchangeSummary] = {}
    for selection in selections:
        for summary in await list_exchanges(
            session, channel_id=channel_id, since=since, limit=limit, **selection  # type: ignore[arg-type]
        ):
            merged[summary.id] = summary
    newest_first = sorted(merged.values(), key=lambda summary: (summary.created_at, summary.id), reverse=True)
    return newest_first[:limit]


async def thread_history(
    session: AsyncSession,
    *,
    channel_id: str | None,
    thread_ts: str | None,
    before: datetime,
    exclude_id: str,
    limit: int = 20,
) -> list[PriorTurn]:
    """The finished turns of the thread that came before `before`, oldest first (the last `limit` of them)."""
    require_aware("before", before)
    if channel_id is None or thread_ts is None:
        return []
    rows = await session.execute(
        select(Exchange.question, Exchange.answer_text)
        .where(
            Exchange.channel_id == channel_id, Exchange.thread_ts == thread_ts, Exchange.created_at < before,
            Exchange.id != exclude_id, Exchange.outcome != "pending",
        )
        .order_by(Exchange.created_at.desc(), Exchange.id.desc())
        .limit(limit)
    )
    return [PriorTurn(question=row.question, answer=row.answer_text) for row in reversed(rows.all())]


async def exchange_exists(session: AsyncSession, exchange_id: str) -> bool:
    """Whether the log holds an exchange with this id."""
    return await session.scalar(select(Exchange.id).where(Exchange.id == exchange_id)) is not None
