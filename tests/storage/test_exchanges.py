"""Exchanges: one claim per Slack event, exact round trips, no duplicates, threads and the review queue."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

from storage.claims import claim_event
from storage.db import create_engine, create_session_factory
from storage.exchanges import (
    find_by_reply,
    get_exchange,
    list_exchanges,
    record_exchange,
    thread_turns,
)
from storage.flags import add_flag
from storage.models import Citation, Exchange, RetrievedChunk
from storage.records import exchange_from_json, exchange_to_json
from tests.storage.builders import T0, at, citation, exchange, lease
from tests.storage.database import Database


async def count_rows(db: Database, model: type) -> int:
    async with db.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def claim(db: Database, event_id: str, exchange_id: str | None = None) -> bool:
    async with db.sessions() as session:
        return await claim_event(session, event_id, exchange_id=exchange_id or str(uuid.uuid4()), created_at=T0,
                                 source="slack", lease=lease(), channel_id="C-support",
                                 question="Refunds?") is not None


async def test_two_replicas_racing_for_one_event_produce_one_winner(db: Database) -> None:
    """Two processes (two engines, as two replicas would have) claim the same event at the same moment."""
    engine_b = create_engine(db.url)
    replica_b = Database(kind=db.kind, url=db.url, engine=engine_b, sessions=create_session_factory(engine_b))
    try:
        results = await asyncio.gather(*(claim(replica, f"Ev-race-{n}") for n in range(5)
                                         for replica in (db, replica_b)))
        assert results.count(True) == 5
        assert await claim(replica_b, "Ev-race-0") is False  # a later retry on the other replica
    finally:
        await engine_b.dispose()
    assert await count_rows(db, Exchange) == 5


async def test_a_recorded_exchange_reads_back_field_for_field(db: Database) -> None:
    """What a lead opens later is exactly what was recorded: every field, chunks by rank, citations by position."""
    record = exchange(
        created_at=datetime(2026, 3, 2, 18, 30, 15, 123456, tzinfo=timezone(timedelta(hours=9))),
        citations=(citation(2), citation(1, kept=False, reason="not_in_chunk", page=None, section=None, url=None)),
    )
    async with db.sessions() as session:
        await record_exchange(session, record)
    async with db.sessions() as session:
        stored = await get_exchange(session, record.id)
    assert stored is not None
    assert stored.created_at == record.created_at and stored.created_at.tzinfo == UTC
    assert stored.citations == tuple(sorted(record.citations, key=lambda c: c.position))
    assert stored.retrieved == record.retrieved
    assert asdict(replace(stored, citations=record.citations)) == asdict(record)


async def test_writing_the_same_exchange_twice_keeps_one_copy(db: Database) -> None:
    """A journal replay after a crash writes a record again: still one exchange, one set of chunks and quotes."""
    record = exchange()
    for _ in range(2):
        async with db.sessions() as session:
            await record_exchange(session, record)
    counts = [await count_rows(db, model) for model in (Exchange, RetrievedChunk, Citation)]
    assert counts == [1, 3, 2]


async def test_recording_completes_the_claimed_pending_exchange(db: Database) -> None:
    """The claim's row becomes the answered exchange; a record built without the event id keeps the claim's."""
    record = exchange(event_id=None)
    assert await claim(db, "Ev-complete", exchange_id=record.id)
    async with db.sessions() as session:
        pending = await get_exchange(session, record.id)
    assert pending is not None and pending.outcome == "pending" and pending.retrieved == ()
    async with db.sessions() as session:
        await record_exchange(session, record)
    async with db.sessions() as session:
        stored = await get_exchange(session, record.id)
    assert stored is not None
    assert (stored.outcome, stored.event_id, len(stored.citations)) == ("answered", "Ev-complete", 2)
    assert await claim(db, "Ev-complete") is False


async def test_rewriting_an_exchange_replaces_its_chunks_and_quotes(db: Database) -> None:
    record = exchange()
    async with db.sessions() as session:
        await record_exchange(session, record)
    shorter = replace(record, outcome="no_support", answer_text=None, citations=(), retrieved=record.retrieved[:1])
    async with db.sessions() as session:
        await record_exchange(session, shorter)
    async with db.sessions() as session:
        stored = await get_exchange(session, record.id)
    assert stored == shorter


async def test_two_journaled_answers_to_one_event_are_both_kept(db: Database) -> None:
    """Both replicas answered while the database was down: both replies were posted, so both are logged."""
    first = exchange(event_id="Ev-twice")
    second = exchange(event_id="Ev-twice", created_at=at(1))
    for record in (first, second):
        async with db.sessions() as session:
            await record_exchange(session, record)
    async with db.sessions() as session:
        stored_first, stored_second = await get_exchange(session, first.id), await get_exchange(session, second.id)
    assert stored_first is not None and stored_first.event_id == "Ev-twice"
    assert stored_second is not None and stored_second.event_id is None


async def test_an_unknown_exchange_reads_as_none(db: Database) -> None:
    async with db.sessions() as session:
        assert await get_exchange(session, str(uuid.uuid4())) is None
        assert await find_by_reply(session, "C-support", "1.2") is None


async def test_a_reaction_on_the_reply_finds_its_exchange(db: Database) -> None:
    record = exchange(channel_id="C-a", reply_ts="1700000009.000900")
    other = exchange(channel_id="C-b", reply_ts="1700000009.000900")
    async with db.sessions() as session:
        await record_exchange(session, record)
        await record_exchange(session, other)
    async with db.sessions() as session:
        found = await find_by_reply(session, "C-a", "1700000009.000900")
    assert found is not None and found.id == record.id


async def test_thread_turns_are_the_latest_finished_turns_oldest_first(db: Database) -> None:
    """A follow-up sees the earlier turns in order; the question being answered right now (pending) is not one."""
    thread = "1700000100.000001"
    turns = [exchange(thread_ts=thread, created_at=at(minute), question=f"turn {minute}",
                      outcome="no_support" if minute == 2 else "answered") for minute in range(5)]
    elsewhere = exchange(thread_ts="1700000999.000001", created_at=at(3))
    async with db.sessions() as session:
        for record in [*reversed(turns), elsewhere]:
            await record_exchange(session, record)
    async with db.sessions() as session:
        await claim_event(session, "Ev-now", exchange_id=str(uuid.uuid4()), created_at=at(6), source="slack",
                          lease=lease(now=6), channel_id="C-support", thread_ts=thread, question="and now?")
    async with db.sessions() as session:
        assert [t.question for t in await thread_turns(session, "C-support", thread)] == [f"turn {m}" for m in range(5)]
        assert [t.question for t in await thread_turns(session, "C-support", thread, limit=2)] == ["turn 3", "turn 4"]
        assert await thread_turns(session, "C-other", thread) == []


async def test_the_review_queue_filters_by_flag_outcome_channel_and_date(db: Database) -> None:
    answered = exchange(created_at=at(0), channel_id="C-a")
    flagged = exchange(created_at=at(1), channel_id="C-a", citations=(citation(1), citation(2, kept=False)))
    no_support = exchange(created_at=at(2), channel_id="C-b", outcome="no_support", citations=())
    error = exchange(created_at=at(0, days=1), channel_id="C-b", outcome="error", error_class="TimeoutError",
                     timings_ms={})
    async with db.sessions() as session:
        for record in (answered, flagged, no_support, error):
            await record_exchange(session, record)
        await add_flag(session, flagged.id, label="S1", user_id="U-lead", reaction="x", is_lead=True, at=at(5))
        await add_flag(session, answered.id, label=None, user_id="U-someone", reaction="x", is_lead=False, at=at(5))

    async def ids(**filters: object) -> list[str]:
        async with db.sessions() as session:
            return [summary.id for summary in await list_exchanges(session, **filters)]  # type: ignore[arg-type]

    assert await ids() == [error.id, no_support.id, flagged.id, answered.id]
    assert await ids(flagged=True) == [flagged.id]
    assert await ids(flagged=False) == [error.id, no_support.id, answered.id]
    assert await ids(outcome="no_support") == [no_support.id]
    assert await ids(channel_id="C-a") == [flagged.id, answered.id]
    assert await ids(since=at(0, days=1)) == [error.id]
    assert await ids(limit=2, offset=1) == [no_support.id, flagged.id]

    async with db.sessions() as session:
        summaries = {s.id: s for s in await list_exchanges(session)}
    assert (summaries[flagged.id].kept_citations, summaries[flagged.id].rejected_citations) == (1, 1)
    assert (summaries[flagged.id].lead_flags, summaries[flagged.id].unresolved_lead_flags) == (1, 1)
    assert summaries[answered.id].lead_flags == 0  # a non-lead's reaction is not a flag
    assert summaries[answered.id].total_ms == 48.5 and summaries[error.id].total_ms is None


async def test_bad_input_is_refused_before_it_reaches_the_database(db: Database) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        exchange(created_at=datetime(2026, 3, 2, 9, 0))
    with pytest.raises(ValueError, match="outcome must be one of"):
        exchange(outcome="maybe")
    with pytest.raises(ValueError, match="UUID"):
        exchange(id="not-a-uuid")
    async with db.sessions() as session:
        with pytest.raises(ValueError, match="outcome must be one of"):
            await list_exchanges(session, outcome="maybe")
        with pytest.raises(ValueError, match="timezone-aware"):
            await list_exchanges(session, since=datetime(2026, 1, 1))


def test_an_exchange_survives_a_json_round_trip() -> None:
    """The journal stores records as JSON: nothing may change on the way back."""
    record = exchange(citations=(citation(1), citation(2, kept=False)))
    assert exchange_from_json(json.loads(json.dumps(exchange_to_json(record)))) == record
