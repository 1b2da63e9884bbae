"""Claims are leases: one holder per Slack event; a claim left behind by a gone or silent holder is taken over,
exactly once, and never one that is held, renewed, or already answered."""

from __future__ import annotations

import asyncio
import uuid

from storage.claims import (
    Claim,
    Lease,
    claim_event,
    left_behind,
    renew_lease,
    take_over,
)
from storage.db import create_engine, create_session_factory
from storage.exchanges import get_exchange, record_exchange
from tests.storage.builders import T0, at, exchange, lease
from tests.storage.database import Database

A, B = "host-a/100/1", "host-b/200/1"


def gone(*owners: str):  # noqa: ANN201 - a predicate
    return lambda owner: owner in owners


async def claim(db: Database, event_id: str, held: Lease, *, owner_gone=None,  # noqa: ANN001
                exchange_id: str | None = None) -> Claim | None:
    async with db.sessions() as session:
        return await claim_event(session, event_id, exchange_id=exchange_id or str(uuid.uuid4()), created_at=held.now,
                                 source="slack", lease=held, owner_gone=owner_gone or gone(),
                                 channel_id="C-support", user_id="U-asker", question_ts="1700000000.000100",
                                 thread_ts="1700000000.000100", question="Refunds?", language="en")


async def test_a_retry_while_the_holder_lives_is_dropped_and_the_first_claim_is_new(db: Database) -> None:
    first = await claim(db, "Ev-1", lease(A))
    assert first is not None and not first.taken_over
    assert await claim(db, "Ev-1", lease(B, now=0.1)) is None  # A holds it for 30 s
    assert await claim(db, "Ev-1", lease(A, now=0.1)) is None  # our own claim is not "taken over" again


async def test_a_claim_whose_lease_ran_out_is_taken_over_keeping_its_exchange_id(db: Database) -> None:
    first = await claim(db, "Ev-2", lease(A))
    assert first is not None
    later = await claim(db, "Ev-2", lease(B, now=1))  # a minute later: A's 30 s lease is over
    assert later == Claim(first.exchange_id, T0, taken_over=True, previous_owner=A)  # asked at T0
    assert await claim(db, "Ev-2", lease(A, now=1.1)) is None  # and now B holds it


async def test_a_claim_whose_owner_is_gone_is_taken_over_before_its_lease_ends(db: Database) -> None:
    first = await claim(db, "Ev-3", lease(A))
    assert first is not None
    taken = await claim(db, "Ev-3", lease(B, now=0.1), owner_gone=gone(A))
    assert taken is not None and taken.taken_over and taken.exchange_id == first.exchange_id


async def test_a_renewed_lease_is_not_taken_over_and_an_answered_event_never_is(db: Database) -> None:
    first = await claim(db, "Ev-4", lease(A))
    assert first is not None
    async with db.sessions() as session:
        assert await renew_lease(session, first.exchange_id, lease(A, now=0.4, for_s=60))
    assert await claim(db, "Ev-4", lease(B, now=1)) is None  # renewed until 1.4 min
    async with db.sessions() as session:
        await record_exchange(session, exchange(id=first.exchange_id, event_id="Ev-4"))
        assert not await renew_lease(session, first.exchange_id, lease(A, now=1.2))  # answered: no lease to renew
    assert await claim(db, "Ev-4", lease(B, now=10), owner_gone=gone(A)) is None
    async with db.sessions() as session:
        stored = await get_exchange(session, first.exchange_id)
    assert stored is not None and stored.outcome == "answered"


async def test_left_behind_lists_pending_slack_claims_nobody_answers_oldest_first(db: Database) -> None:
    held = await claim(db, "Ev-held", lease(B, now=0, for_s=3600))
    old = await claim(db, "Ev-old", lease(A, now=-5))
    dead = await claim(db, "Ev-dead", lease(A, now=0, for_s=3600))
    assert held and old and dead
    async with db.sessions() as session:
        found = await left_behind(session, now=at(1), owner_gone=gone(A))
    assert [r.event_id for r in found] == ["Ev-old", "Ev-dead"]
    assert found[0].question == "Refunds?" and found[0].question_ts == "1700000000.000100"
    assert found[0].language == "en", "the sweep answers in the language detected when the question arrived"


async def test_two_instances_racing_to_take_over_one_claim_produce_one_winner(db: Database) -> None:
    """The start-up sweeps of two replicas find the same left-behind claim at the same moment."""
    engine_b = create_engine(db.url)
    replica_b = Database(kind=db.kind, url=db.url, engine=engine_b, sessions=create_session_factory(engine_b))
    try:
        claims = [await claim(db, f"Ev-race-{n}", lease(A)) for n in range(5)]

        async def sweep(replica: Database, owner: str) -> int:
            won = 0
            for left in claims:
                assert left is not None
                async with replica.sessions() as session:
                    won += await take_over(session, left.exchange_id, lease(owner, now=1)) is not None
            return won

        wins = await asyncio.gather(sweep(db, "host-c/1/1"), sweep(replica_b, "host-d/1/1"))
    finally:
        await engine_b.dispose()
    assert sum(wins) == 5


async def test_a_burst_of_deliveries_and_retries_at_once_gives_each_event_one_claim(db: Database) -> None:
    """100 mentions arrive together and Slack retries each of them at the same moment: every event is claimed
    exactly once and no write fails (on SQLite the writes take turns on one connection)."""
    events = [f"Ev-burst-{n}" for n in range(40)]
    tries = [claim(db, event, lease(A)) for event in events for _ in range(3)]
    results = await asyncio.gather(*tries)
    won = [r for r in results if r is not None]
    assert len(won) == len(events)
    async with db.sessions() as session:
        records = [await get_exchange(session, c.exchange_id) for c in won]
    assert sorted(r.event_id for r in records if r is not None) == sorted(events)
