"""Flags: a lead's reaction flags an answer or one citation; taking it back, adding it again, resolving it."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from storage.errors import UnknownExchange, UnknownFlag
from storage.exchanges import list_exchanges, record_exchange
from storage.flags import add_flag, flags_for, remove_flag, resolve_flag
from storage.records import FlagRecord
from tests.storage.builders import at, exchange
from tests.storage.database import Database


async def recorded(db: Database) -> str:
    record = exchange()
    async with db.sessions() as session:
        await record_exchange(session, record)
    return record.id


async def react(db: Database, exchange_id: str, *, label: str | None = "S1", user: str = "U-lead",
                reaction: str = "x", lead: bool = True, minute: float = 0) -> FlagRecord:
    async with db.sessions() as session:
        return await add_flag(session, exchange_id, label=label, user_id=user, reaction=reaction, is_lead=lead,
                              at=at(minute))


async def unreact(db: Database, exchange_id: str, *, label: str | None = "S1", user: str = "U-lead",
                  reaction: str = "x", minute: float = 0) -> bool:
    async with db.sessions() as session:
        return await remove_flag(session, exchange_id, label=label, user_id=user, reaction=reaction, at=at(minute))


async def history(db: Database, exchange_id: str) -> list[FlagRecord]:
    async with db.sessions() as session:
        return await flags_for(session, exchange_id)


async def test_the_same_reaction_delivered_twice_is_one_flag(db: Database) -> None:
    exchange_id = await recorded(db)
    first = await react(db, exchange_id, minute=1)
    again = await react(db, exchange_id, minute=2)
    assert again.id == first.id
    assert [flag.created_at for flag in await history(db, exchange_id)] == [at(1)]


async def test_concurrent_deliveries_of_one_reaction_still_make_one_flag(db: Database) -> None:
    """Slack retries can reach two replicas at once; the exchange lock keeps one open flag."""
    exchange_id = await recorded(db)
    flags = await asyncio.gather(*(react(db, exchange_id) for _ in range(4)))
    assert len({flag.id for flag in flags}) == 1
    assert len(await history(db, exchange_id)) == 1


async def test_taking_a_reaction_back_and_adding_it_again_keeps_the_history(db: Database) -> None:
    exchange_id = await recorded(db)
    first = await react(db, exchange_id, minute=1)
    assert await unreact(db, exchange_id, minute=2) is True
    assert await unreact(db, exchange_id, minute=3) is False  # nothing left to take back
    second = await react(db, exchange_id, minute=4)
    assert second.id != first.id and second.is_flag
    flags = await history(db, exchange_id)
    assert [(flag.id, flag.removed_at) for flag in flags] == [(first.id, at(2)), (second.id, None)]


async def test_flags_on_the_answer_and_on_each_citation_are_separate(db: Database) -> None:
    exchange_id = await recorded(db)
    whole = await react(db, exchange_id, label=None)
    s1 = await react(db, exchange_id, label="S1")
    s2_other_reaction = await react(db, exchange_id, label="S1", reaction="warning")
    assert len({whole.id, s1.id, s2_other_reaction.id}) == 3
    assert await unreact(db, exchange_id, label=None) is True
    assert [flag.label for flag in await history(db, exchange_id) if flag.is_open] == ["S1", "S1"]


async def test_a_non_leads_reaction_is_recorded_but_is_not_a_flag(db: Database) -> None:
    exchange_id = await recorded(db)
    reaction = await react(db, exchange_id, user="U-member", lead=False)
    assert reaction.is_open and not reaction.is_flag
    async with db.sessions() as session:
        assert await list_exchanges(session, flagged=True) == []
    await react(db, exchange_id, user="U-lead", lead=True)
    async with db.sessions() as session:
        assert [s.lead_flags for s in await list_exchanges(session, flagged=True)] == [1]


async def test_a_lead_resolves_a_flag_and_can_change_the_verdict(db: Database) -> None:
    exchange_id = await recorded(db)
    flag = await react(db, exchange_id)
    async with db.sessions() as session:
        resolved = await resolve_flag(session, flag.id, resolution="confirmed_bad", note="quote is from v1",
                                      by="U-lead2", at=at(10))
    assert (resolved.resolution, resolved.resolution_note, resolved.resolved_by, resolved.resolved_at) == (
        "confirmed_bad", "quote is from v1", "U-lead2", at(10))
    async with db.sessions() as session:
        await resolve_flag(session, flag.id, resolution="fixed_in_docs", note=None, by="U-lead2", at=at(20))
    [stored] = await history(db, exchange_id)
    assert (stored.resolution, stored.resolution_note, stored.resolved_at) == ("fixed_in_docs", None, at(20))
    async with db.sessions() as session:
        [summary] = await list_exchanges(session, flagged=True)
    assert (summary.lead_flags, summary.unresolved_lead_flags) == (1, 0)


async def test_unknown_exchanges_flags_and_verdicts_are_refused(db: Database) -> None:
    exchange_id = await recorded(db)
    with pytest.raises(UnknownExchange, match="no exchange with id"):
        await react(db, str(uuid.uuid4()))
    with pytest.raises(UnknownExchange):
        await unreact(db, str(uuid.uuid4()))
    async with db.sessions() as session:
        with pytest.raises(UnknownFlag, match="no flag with id"):
            await resolve_flag(session, str(uuid.uuid4()), resolution="not_a_problem", note=None, by="U", at=at())
        flag = await add_flag(session, exchange_id, label=None, user_id="U", reaction="x", is_lead=True, at=at())
        with pytest.raises(ValueError, match="resolution must be one of"):
            await resolve_flag(session, flag.id, resolution="wontfix", note=None, by="U", at=at())  # type: ignore[arg-type]
