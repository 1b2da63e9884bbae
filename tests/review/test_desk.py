"""The review desk's reads and actions on a real log, once on SQLite and once on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.review import desk
from bot.review.desk import prior_turns
from bot.review.errors import NothingToResolve
from bot.review.export import PriorTurn
from bot.review.queries import review_queue
from storage.errors import UnknownExchange
from storage.exchanges import exchange_exists
from storage.flags import flags_for
from storage.stats import window_stats
from tests.review.seed import THREAD, Seeded, seed_log
from tests.storage.builders import T0, at
from tests.storage.database import Database


@pytest.fixture
async def seeded(db: Database) -> Seeded:
    return await seed_log(db.sessions)


async def ids(db: Database, **filters: object) -> list[str]:
    """The queue as it is at ``now`` (default: 5 minutes after the pending question was asked)."""
    filters.setdefault("now", at(30))
    async with db.sessions() as session:
        return [item.id for item in await review_queue(session, **filters)]  # type: ignore[arg-type]


async def test_default_queue_is_flagged_no_support_and_errors_newest_first(db: Database, seeded: Seeded) -> None:
    """A flag resolved as not a problem still shows (the lead can see it was handled); clean ones do not, nor a
    question still being answered (asked 5 minutes ago)."""
    assert await ids(db) == [seeded.dismissed, seeded.error, seeded.no_support, seeded.flagged]


async def test_a_question_still_pending_ten_minutes_after_it_was_asked_is_in_the_default_queue(
        db: Database, seeded: Seeded) -> None:
    """A crash left it and no instance finished it: a lead must see it, not only `review list --all`."""
    assert await ids(db, now=at(36)) == [seeded.pending, seeded.dismissed, seeded.error, seeded.no_support,
                                         seeded.flagged]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"flagged": True}, ["dismissed", "flagged"]),
        ({"no_support": True}, ["no_support"]),
        ({"errors": True}, ["error"]),
        ({"no_support": True, "errors": True}, ["error", "no_support"]),
        ({"channel_id": "C-other"}, ["error"]),
        ({"since": at(5)}, ["dismissed", "error", "no_support"]),
        ({"limit": 2}, ["dismissed", "error"]),
        ({"everything": True}, ["pending", "dismissed", "clean", "error", "no_support", "flagged"]),
    ],
)
async def test_queue_filters_narrow_and_combine(
    db: Database, seeded: Seeded, filters: dict[str, object], expected: list[str]
) -> None:
    assert await ids(db, **filters) == [getattr(seeded, name) for name in expected]


async def test_queue_summary_counts_quotes_and_open_flags(db: Database, seeded: Seeded) -> None:
    async with db.sessions() as session:
        everything = {item.id: item for item in await review_queue(session, everything=True)}
    flagged, clean, dismissed = everything[seeded.flagged], everything[seeded.clean], everything[seeded.dismissed]
    assert (flagged.kept_citations, flagged.lead_flags, flagged.unresolved_lead_flags) == (2, 1, 1)
    assert (clean.kept_citations, clean.rejected_citations, clean.lead_flags) == (1, 1, 0)
    assert (dismissed.lead_flags, dismissed.unresolved_lead_flags) == (1, 0)


async def test_thread_history_holds_only_the_turns_before_the_exchange(db: Database, seeded: Seeded) -> None:
    async with db.sessions() as session:
        before_follow_up = await prior_turns(session, channel_id="C-support", thread_ts=THREAD, before=at(5),
                                             exclude_id=seeded.no_support)
        before_first = await prior_turns(session, channel_id="C-support", thread_ts=THREAD, before=at(0),
                                         exclude_id=seeded.flagged)
        outside_slack = await prior_turns(session, channel_id=None, thread_ts=None, before=at(60),
                                          exclude_id=seeded.flagged)
    assert before_follow_up == [PriorTurn("How long do I have to request a refund?",
                                          "Within 10 days [S1], or 20 days for teams [S2].")]
    assert before_first == [] and outside_slack == []


async def test_window_stats_agree_with_the_per_day_definitions(db: Database, seeded: Seeded) -> None:
    """Five completed exchanges: one no support, one error; four answers' quotes, of which S1 flagged + S2 rejected."""
    async with db.sessions() as session:
        metrics = await window_stats(session, since=T0 - timedelta(days=1))
        other = await window_stats(session, since=T0 - timedelta(days=1), channel_id="C-other")
        empty = await window_stats(session, since=T0 + timedelta(days=1))
    assert (metrics.exchanges, metrics.pending, metrics.answered, metrics.no_support, metrics.error) == (6, 1, 3, 1, 1)
    assert metrics.no_support_rate == pytest.approx(1 / 5)
    assert (metrics.quotes, metrics.rejected_quotes, metrics.wrong_citations) == (6, 1, 2)
    assert metrics.flagged_answers == 1  # the not_a_problem resolution does not count
    assert (metrics.latency_p50_ms, metrics.latency_p95_ms) == (48.5, 5000.0)
    assert (other.exchanges, other.error) == (1, 1)
    assert empty.exchanges == 0 and empty.no_support_rate is None and empty.latency_p50_ms is None


async def test_resolving_without_a_flag_closes_every_open_lead_flag_only(db: Database, seeded: Seeded) -> None:
    resolved = await desk.resolve_flags(db.sessions, seeded.flagged, flag_id=None, resolution="confirmed_bad",
                                        note="30 days, not 10", by="lead-ann", at=at(30))
    assert [flag.id for flag in resolved] == [seeded.open_flag]
    async with db.sessions() as session:
        flags = {flag.id: flag for flag in await flags_for(session, seeded.flagged)}
    assert flags[seeded.open_flag].resolution == "confirmed_bad"
    assert flags[seeded.open_flag].resolution_note == "30 days, not 10"
    assert flags[seeded.open_flag].resolved_by == "lead-ann"
    assert flags[seeded.member_reaction].resolution is None  # a member's reaction is context, not a flag

    with pytest.raises(NothingToResolve, match="has no open flags to resolve"):
        await desk.resolve_flags(db.sessions, seeded.flagged, flag_id=None, resolution="confirmed_bad",
                                 note=None, by="lead-ann", at=at(31))


async def test_a_named_flag_can_be_resolved_again_and_must_belong_to_the_exchange(db: Database, seeded: Seeded) -> None:
    again = await desk.resolve_flags(db.sessions, seeded.dismissed, flag_id=seeded.dismissed_flag,
                                     resolution="fixed_in_docs", note="doc updated", by="lead-bo", at=at(40))
    assert [(flag.id, flag.resolution) for flag in again] == [(seeded.dismissed_flag, "fixed_in_docs")]
    with pytest.raises(NothingToResolve, match=f"flag {seeded.open_flag} is not a reaction on exchange"):
        await desk.resolve_flags(db.sessions, seeded.dismissed, flag_id=seeded.open_flag, resolution="fixed_in_docs",
                                 note=None, by="lead-bo", at=at(41))


async def test_resolving_an_unknown_exchange_names_it(db: Database, seeded: Seeded) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(UnknownExchange, match=missing):
        await desk.resolve_flags(db.sessions, missing, flag_id=None, resolution="confirmed_bad", note=None, by="x",
                                 at=at(1))
    async with db.sessions() as session:
        assert not await exchange_exists(session, missing)
        assert await exchange_exists(session, seeded.flagged)


async def test_export_turns_flagged_exchanges_into_eval_questions_oldest_first(db: Database, seeded: Seeded) -> None:
    """The dismissed flag (not_a_problem) is no regression case; the no-support follow-up carries its thread."""
    flagged_only = await desk.export_questions(db.sessions)
    assert flagged_only == [{
        "id": seeded.flagged, "question": "How long do I have to request a refund?", "history": [],
        "channel": "C-support",
    }]
    with_no_support = await desk.export_questions(db.sessions, flagged=True, no_support=True)
    assert [line["id"] for line in with_no_support] == [seeded.flagged, seeded.no_support]
    assert with_no_support[1]["history"] == [
        {"role": "user", "text": "How long do I have to request a refund?"},
        {"role": "assistant", "text": "Within 10 days [S1], or 20 days for teams [S2]."},
    ]


async def test_reading_an_exchange_returns_its_reactions(db: Database, seeded: Seeded) -> None:
    record, flags = await desk.read_exchange(db.sessions, seeded.flagged)
    assert record.id == seeded.flagged and [flag.id for flag in flags] == [seeded.open_flag, seeded.member_reaction]
    with pytest.raises(UnknownExchange):
        await desk.read_exchange(db.sessions, "00000000-0000-4000-8000-000000000000")
