"""The numbers a support lead watches, per UTC day and per channel.

The two that lead: the share of exchanges without support, and the share of wrong citations. Definitions:

- exchanges: every exchange in the window; `pending` ones (claimed, never completed) are counted apart and
  left out of the rates. no_support_rate = no_support / (answered + no_support + error).
- a flag counts when a lead made it, it is still on the reply, and no lead resolved it as `not_a_problem`
  (someone looked and found the citation fine). flagged_answers: exchanges with a flag that counts;
  flag_rate = flagged_answers / completed exchanges.
- quotes: every composed citation, kept or rejected. A citation is wrong when verification rejected it, or
  a counting flag names its label, or a counting flag covers the whole reply (a lead who flags the reply is
  saying its citations cannot be trusted). wrong_citation_rate = wrong / quotes.
- feedback: the askers' 👍 / 👎 (one current vote per user and answer): helpful, unhelpful, and
  unhappy_rate = unhelpful / (helpful + unhelpful). Not flags: anyone may click them.
- deflection (help channels): questions = completed exchanges with the silent ones (answered + no_support +
  error + not_answered); handed_off = exchanges with an "Ask a person" click; handoff_rate = handed_off /
  questions; deflected = answered and neither handed off nor given a 👎 (the question needed no person);
  deflection_rate = deflected / questions. The no-support rate keeps its own denominator (replies only).
- latency p50/p95: nearest-rank percentiles of `timings_ms["total"]`, computed here in Python so that SQLite
  and PostgreSQL give the same numbers.

Rows are read once and aggregated in Python; a window of a few months of support questions is small.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Citation, Exchange, Feedback, Flag, Handoff
from storage.records import ChannelStats, DayStats, Metrics, require_aware

COMPLETED = ("answered", "no_support", "error")


async def daily_stats(
    session: AsyncSession, *, since: datetime, until: datetime | None = None, channel_id: str | None = None
) -> list[DayStats]:
    """Metrics per UTC day with at least one exchange in [since, until), oldest first; one channel if given."""
    groups = await _load(session, since=since, until=until, channel_id=channel_id, key=lambda ex: ex.created_at.date())
    return [DayStats(day=day, **_metrics(items)) for day, items in sorted(groups.items())]


async def channel_stats(session: AsyncSession, *, since: datetime, until: datetime | None = None) -> list[ChannelStats]:
    """Metrics per channel over [since, until), busiest channel first (None: exchanges outside Slack)."""
    groups = await _load(session, since=since, until=until, channel_id=None, key=lambda ex: ex.channel_id)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0] or ""))
    return [ChannelStats(channel_id=channel, **_metrics(items)) for channel, items in ordered]


async def daily_channel_stats(
    session: AsyncSession, *, since: datetime, until: datetime | None = None
) -> dict[str | None, list[DayStats]]:
    """Metrics per channel and UTC day: the trend of each channel, for charts."""
    groups = await _load(session, since=since, until=until, channel_id=None,
                         key=lambda ex: (ex.channel_id, ex.created_at.date()))
    by_channel: dict[str | None, list[DayStats]] = defaultdict(list)
    for (channel, day), items in sorted(groups.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        by_channel[channel].append(DayStats(day=day, **_metrics(items)))
    return dict(by_channel)


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (the smallest value with at least p% of the values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class _Exchange:
    id: str
    created_at: datetime
    channel_id: str | None
    outcome: str
    total_ms: float | None
    citations: list[tuple[str, bool]] = field(default_factory=list)  # (label, kept)
    flagged_labels: set[str | None] = field(default_factory=set)  # None: the whole reply
    helpful: int = 0
    unhelpful: int = 0
    handed_off: bool = False


async def _load(
    session: AsyncSession,
    *,
    since: datetime,
    until: datetime | None,
    channel_id: str | None,
    key: Callable[[_Exchange], Hashable],
) -> dict[Any, list[_Exchange]]:
    require_aware("since", since)
    require_aware("until", until)
    window: list[ColumnElement[bool]] = [Exchange.created_at >= since]
    if until is not None:
        window.append(Exchange.created_at < until)
    if channel_id is not None:
        window.append(Exchange.channel_id == channel_id)

    exchanges: dict[str, _Exchange] = {}
    rows = await session.execute(
        select(Exchange.id, Exchange.created_at, Exchange.channel_id, Exchange.outcome, Exchange.timings_ms)
        .where(*window)
    )
    for row in rows:
        total = (row.timings_ms or {}).get("total")
        exchanges[row.id] = _Exchange(row.id, row.created_at, row.channel_id, row.outcome,
                                      None if total is None else float(total))

    citations = await session.execute(
        select(Citation.exchange_id, Citation.label, Citation.kept).join(Exchange).where(*window)
    )
    for row in citations:
        exchanges[row.exchange_id].citations.append((row.label, row.kept))

    counting = and_(
        Flag.is_lead, Flag.removed_at.is_(None),
        or_(Flag.resolution.is_(None), Flag.resolution != "not_a_problem"),
    )
    flags = await session.execute(select(Flag.exchange_id, Flag.label).join(Exchange).where(counting, *window))
    for row in flags:
        exchanges[row.exchange_id].flagged_labels.add(row.label)

    votes = await session.execute(select(Feedback.exchange_id, Feedback.positive).join(Exchange).where(*window))
    for row in votes:
        if row.positive:
            exchanges[row.exchange_id].helpful += 1
        else:
            exchanges[row.exchange_id].unhelpful += 1

    handoffs = await session.execute(select(Handoff.exchange_id).join(Exchange).where(*window))
    for row in handoffs:
        exchanges[row.exchange_id].handed_off = True

    groups: dict[Any, list[_Exchange]] = defaultdict(list)
    for exchange in exchanges.values():
        groups[key(exchange)].append(exchange)
    return groups


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _metrics(items: Iterable[_Exchange]) -> dict[str, Any]:
    items = list(items)
    outcomes: defaultdict[str, int] = defaultdict(int)
    for item in items:
        outcomes[item.outcome] += 1
    completed = sum(outcomes[name] for name in COMPLETED)
    flagged = sum(1 for item in items if item.outcome != "pending" and item.flagged_labels)
    quotes = sum(len(item.citations) for item in items)
    rejected = sum(1 for item in items for _, kept in item.citations if not kept)
    wrong = sum(
        1
        for item in items
        for label, kept in item.citations
        if not kept or None in item.flagged_labels or label in item.flagged_labels
    )
    latencies = [item.total_ms for item in items if item.outcome != "pending" and item.total_ms is not None]
    helpful, unhelpful = sum(item.helpful for item in items), sum(item.unhelpful for item in items)
    questions = completed + outcomes["not_answered"]
    handed_off = sum(1 for item in items if item.handed_off)
    deflected = sum(1 for item in items if item.outcome == "answered" and not item.handed_off and not item.unhelpful)
    return {
        "exchanges": len(items),
        "pending": outcomes["pending"],
        "answered": outcomes["answered"],
        "no_support": outcomes["no_support"],
        "error": outcomes["error"],
        "no_support_rate": _rate(outcomes["no_support"], completed),
        "flagged_answers": flagged,
        "flag_rate": _rate(flagged, completed),
        "quotes": quotes,
        "rejected_quotes": rejected,
        "rejected_quote_rate": _rate(rejected, quotes),
        "wrong_citations": wrong,
        "wrong_citation_rate": _rate(wrong, quotes),
        "latency_p50_ms": percentile(latencies, 50),
        "latency_p95_ms": percentile(latencies, 95),
        "helpful": helpful,
        "unhelpful": unhelpful,
        "unhappy_rate": _rate(unhelpful, helpful + unhelpful),
        "not_answered": outcomes["not_answered"],
        "questions": questions,
        "handed_off": handed_off,
        "handoff_rate": _rate(handed_off, questions),
        "deflected": deflected,
        "deflection_rate": _rate(deflected, questions),
    }


async def window_stats(
    session: AsyncSession, *, since: datetime, until: datetime | None = None, channel_id: str | None = None
) -> Metrics:
    """The metrics of a whole window (one channel if given): p50/p95 cannot be recombined from per-day rows."""
    groups = await _load(
        session, since=since, until=until, channel_id=channel_id, key=lambda _exchange: "window"
    )
    return Metrics(**_metrics(groups.get("window", [])))
