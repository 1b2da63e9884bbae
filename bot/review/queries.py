"""The review queue: the union the desk shows by default (flagged OR asker unhappy OR handed off OR no_support OR
error OR stuck), composed from `storage.exchanges.list_exchanges`, one call per selection, merged newest first. No SQL here: every query
lives in `storage/` (thread history is `storage.exchanges.thread_turns`, existence `exchange_exists`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from storage.exchanges import list_exchanges
from storage.records import ExchangeSummary

# A pending exchange older than this is stuck: the running instances' sweep answers a left-behind one within a
# lease (30 s by default), so a question still pending after 10 minutes needs a person to look.
STUCK_AFTER = timedelta(minutes=10)


async def review_queue(
    session: AsyncSession,
    *,
    flagged: bool = False,
    unhappy: bool = False,
    no_support: bool = False,
    errors: bool = False,
    everything: bool = False,
    handed_off: bool = False,
    channel_id: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
    now: datetime | None = None,
) -> list[ExchangeSummary]:
    """The review queue, newest first: exchanges that are flagged, or an asker gave a 👎 ("asker unhappy"), or had
    no support, or failed, or are stuck, or were handed off to a person ("Ask a person").

    Each of `flagged`, `unhappy`, `no_support`, `errors` adds its exchanges; none of them means all four (the default
    queue) plus the stuck ones: still pending `STUCK_AFTER` after they were asked (a crash left them and no
    instance has finished them: nobody is running, or answering them keeps failing). `everything` lists every
    exchange instead (pending ones too).
    """
    if everything:
        return await list_exchanges(session, channel_id=channel_id, since=since, limit=limit)
    selections: list[dict[str, object]] = []
    if not (flagged or unhappy or no_support or errors or handed_off):
        flagged = unhappy = no_support = errors = handed_off = True
        selections.append({"outcome": "pending", "before": (now or datetime.now(UTC)) - STUCK_AFTER})
    if flagged:
        selections.append({"flagged": True})
    if unhappy:
        selections.append({"unhappy": True})
    if handed_off:
        selections.append({"handed_off": True})
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
