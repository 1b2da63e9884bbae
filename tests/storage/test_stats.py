"""The metrics leads track, on a small hand-built log whose numbers can be checked by hand."""

from __future__ import annotations

from datetime import timedelta

import pytest

from storage.claims import claim_event
from storage.exchanges import record_exchange
from storage.feedback import record_feedback
from storage.flags import add_flag, remove_flag, resolve_flag
from storage.handoffs import claim_handoff
from storage.records import ChannelStats, DayStats
from storage.stats import channel_stats, daily_channel_stats, daily_stats, percentile, window_stats
from tests.storage.builders import T0, at, citation, exchange, lease
from tests.storage.database import Database


def timed(total: float) -> dict[str, float]:
    return {"search": 1.0, "total": total}


@pytest.fixture
async def log(db: Database) -> Database:
    """Day 1: eight exchanges in two channels; day 2: one. Comments say what each one contributes."""
    e1 = exchange(channel_id="C-a", timings_ms=timed(100), citations=(citation(1), citation(2)))  # lead flags S2
    e2 = exchange(channel_id="C-a", timings_ms=timed(200), citations=(citation(1), citation(2, kept=False)))
    e3 = exchange(channel_id="C-a", timings_ms=timed(300), outcome="no_support", citations=())
    e4 = exchange(channel_id="C-a", timings_ms=timed(400), citations=(citation(1),))  # lead flags the whole reply
    e5 = exchange(channel_id="C-a", timings_ms=timed(500), citations=(citation(1),))  # non-lead + removed lead flag
    e7 = exchange(channel_id="C-b", timings_ms={}, outcome="error", citations=(), error_class="TimeoutError")
    e8 = exchange(channel_id="C-b", timings_ms=timed(600), citations=(citation(1), citation(2)))  # "not a problem"
    e9 = exchange(channel_id="C-a", timings_ms=timed(50), created_at=at(0, days=1), citations=(citation(1, kept=False),))
    async with db.sessions() as session:
        for record in (e1, e2, e3, e4, e5, e7, e8, e9):
            await record_exchange(session, record)
        await claim_event(session, "Ev-pending", exchange_id=exchange().id, created_at=at(30), source="slack",
                          lease=lease(now=30), channel_id="C-a")  # e6: claimed, never completed
        await add_flag(session, e1.id, label="S2", user_id="U-lead", reaction="x", is_lead=True, at=at(5))
        await add_flag(session, e4.id, label=None, user_id="U-lead", reaction="x", is_lead=True, at=at(5))
        await add_flag(session, e5.id, label="S1", user_id="U-member", reaction="x", is_lead=False, at=at(5))
        await add_flag(session, e5.id, label=None, user_id="U-lead", reaction="x", is_lead=True, at=at(5))
        await remove_flag(session, e5.id, label=None, user_id="U-lead", reaction="x", at=at(6))
        fine = await add_flag(session, e8.id, label="S1", user_id="U-lead", reaction="x", is_lead=True, at=at(5))
        await resolve_flag(session, fine.id, resolution="not_a_problem", note=None, by="U-lead", at=at(7))
    return db


async def test_daily_metrics_count_outcomes_flags_wrong_citations_and_latency(log: Database) -> None:
    async with log.sessions() as session:
        days = await daily_stats(session, since=T0 - timedelta(days=1))
    assert days == [
        DayStats(
            day=T0.date(), exchanges=8, pending=1, answered=5, no_support=1, error=1,
            no_support_rate=pytest.approx(1 / 7), flagged_answers=2, flag_rate=pytest.approx(2 / 7),
            quotes=8, rejected_quotes=1, rejected_quote_rate=pytest.approx(1 / 8),
            wrong_citations=3, wrong_citation_rate=pytest.approx(3 / 8),
            latency_p50_ms=300.0, latency_p95_ms=600.0, questions=7, handoff_rate=0.0, deflected=5,
            deflection_rate=pytest.approx(5 / 7),
        ),
        DayStats(
            day=(T0 + timedelta(days=1)).date(), exchanges=1, pending=0, answered=1, no_support=0, error=0,
            no_support_rate=0.0, flagged_answers=0, flag_rate=0.0, quotes=1, rejected_quotes=1,
            rejected_quote_rate=1.0, wrong_citations=1, wrong_citation_rate=1.0, latency_p50_ms=50.0,
            latency_p95_ms=50.0, questions=1, handoff_rate=0.0, deflected=1, deflection_rate=1.0,
        ),
    ]


async def test_the_window_and_the_channel_filter_narrow_the_days(log: Database) -> None:
    async with log.sessions() as session:
        only_day_two = await daily_stats(session, since=T0 + timedelta(hours=12))
        channel_b = await daily_stats(session, since=T0 - timedelta(days=1), channel_id="C-b")
        day_one = await daily_stats(session, since=T0 - timedelta(days=1), until=T0 + timedelta(hours=12))
    assert [day.exchanges for day in only_day_two] == [1]
    assert [(day.exchanges, day.error, day.quotes, day.wrong_citations) for day in channel_b] == [(2, 1, 2, 0)]
    assert [day.day for day in day_one] == [T0.date()]


async def test_per_channel_metrics_cover_the_whole_window(log: Database) -> None:
    async with log.sessions() as session:
        channels = await channel_stats(session, since=T0 - timedelta(days=1))
        trends = await daily_channel_stats(session, since=T0 - timedelta(days=1))
    assert channels == [
        ChannelStats(
            channel_id="C-a", exchanges=7, pending=1, answered=5, no_support=1, error=0,
            no_support_rate=pytest.approx(1 / 6), flagged_answers=2, flag_rate=pytest.approx(2 / 6),
            quotes=7, rejected_quotes=2, rejected_quote_rate=pytest.approx(2 / 7),
            wrong_citations=4, wrong_citation_rate=pytest.approx(4 / 7),
            latency_p50_ms=200.0, latency_p95_ms=500.0, questions=6, handoff_rate=0.0, deflected=5,
            deflection_rate=pytest.approx(5 / 6),
        ),
        ChannelStats(
            channel_id="C-b", exchanges=2, pending=0, answered=1, no_support=0, error=1, no_support_rate=0.0,
            flagged_answers=0, flag_rate=0.0, quotes=2, rejected_quotes=0, rejected_quote_rate=0.0,
            wrong_citations=0, wrong_citation_rate=0.0, latency_p50_ms=600.0, latency_p95_ms=600.0,
            questions=2, handoff_rate=0.0, deflected=1, deflection_rate=0.5,
        ),
    ]
    assert {channel: [day.exchanges for day in days] for channel, days in trends.items()} == {"C-a": [6, 1], "C-b": [2]}


async def test_deflection_counts_answers_that_needed_no_person_among_all_questions(db: Database) -> None:
    """A help channel: answered and handed off, answered and 👎, answered and 👍, silent, no support and handed off."""
    handed, thumbs_down, thumbs_up, silent, unsupported = (
        exchange(channel_id="C-help"), exchange(channel_id="C-help"), exchange(channel_id="C-help"),
        exchange(channel_id="C-help", outcome="not_answered", reply_ts=None),
        exchange(channel_id="C-help", outcome="no_support", citations=()))
    async with db.sessions() as session:
        for record in (handed, thumbs_down, thumbs_up, silent, unsupported):
            await record_exchange(session, record)
        for record in (handed, unsupported):
            await claim_handoff(session, record.id, user_id="U-asker", at=at(5))
        await record_feedback(session, thumbs_down.id, user_id="U-asker", positive=False, at=at(5))
        await record_feedback(session, thumbs_up.id, user_id="U-asker", positive=True, at=at(5))
        await record_feedback(session, handed.id, user_id="U-other", positive=True, at=at(5))
        overall = await window_stats(session, since=T0 - timedelta(days=1), channel_id="C-help")
        [day] = await daily_stats(session, since=T0 - timedelta(days=1), channel_id="C-help")

    for metrics in (overall, day):
        assert (metrics.questions, metrics.answered, metrics.not_answered, metrics.handed_off, metrics.deflected) == (
            5, 3, 1, 2, 1)
        assert metrics.handoff_rate == pytest.approx(2 / 5) and metrics.deflection_rate == pytest.approx(1 / 5)
        assert metrics.no_support_rate == pytest.approx(1 / 4), "the no-support rate is over replies only"


async def test_an_empty_window_has_no_rows_rather_than_zero_rates(db: Database) -> None:
    async with db.sessions() as session:
        assert await daily_stats(session, since=T0) == []
        assert await channel_stats(session, since=T0) == []


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([], 50, None),
        ([7.0], 95, 7.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.0),
        ([4.0, 1.0, 3.0, 2.0], 95, 4.0),
        ([float(n) for n in range(1, 21)], 95, 19.0),
        ([float(n) for n in range(1, 101)], 50, 50.0),
    ],
)
def test_percentiles_are_nearest_rank(values: list[float], p: float, expected: float | None) -> None:
    assert percentile(values, p) == expected
