"""Suppressions: a confirmed-bad citation is remembered with its question's vector, once, and can be lifted."""

from __future__ import annotations

import uuid

from storage.exchanges import record_exchange
from storage.flags import add_flag
from storage.records import SuppressionRecord
from storage.suppressions import for_exchanges, in_force, lift, remember
from tests.storage.builders import at, exchange
from tests.storage.database import Database

VECTOR = tuple((i % 17) / 17 - 0.5 + 1e-9 * i for i in range(384))  # 384 floats, none of them round


async def flagged(db: Database) -> tuple[str, str]:
    record = exchange()
    async with db.sessions() as session:
        await record_exchange(session, record)
    async with db.sessions() as session:
        flag = await add_flag(session, record.id, label="S1", user_id="U-lead", reaction="x", is_lead=True, at=at(1))
    return record.id, flag.id


def suppression(exchange_id: str, flag_id: str, *, chunk_id: str = "chunk-1", question: str = "Сколько дней?",
                vector: tuple[float, ...] | None = VECTOR) -> SuppressionRecord:
    return SuppressionRecord(
        id=str(uuid.uuid4()), flag_id=flag_id, exchange_id=exchange_id, chunk_id=chunk_id, document_id="refund-policy",
        version="2026-01", content_hash="abc123", question=question, query=question, embedder="e5-small-q4",
        query_vector=vector, created_by="Аня", created_at=at(2),
    )


async def test_a_suppression_comes_back_with_every_float_of_its_vector_and_its_unicode(db: Database) -> None:
    exchange_id, flag_id = await flagged(db)
    written = suppression(exchange_id, flag_id, question="アカウントは何分ロックされますか？")
    async with db.sessions() as session:
        await remember(session, [written])
    async with db.sessions() as session:
        (read,) = await in_force(session)

    assert read == written
    assert read.query_vector is not None and len(read.query_vector) == 384


async def test_remembering_the_same_flag_and_chunk_again_keeps_one_row(db: Database) -> None:
    exchange_id, flag_id = await flagged(db)
    async with db.sessions() as session:
        await remember(session, [suppression(exchange_id, flag_id)])
    async with db.sessions() as session:
        await remember(session, [suppression(exchange_id, flag_id), suppression(exchange_id, flag_id, chunk_id="c2")])
    async with db.sessions() as session:
        rows = await in_force(session)

    assert sorted(r.chunk_id for r in rows) == ["c2", "chunk-1"]


async def test_a_lifted_suppression_is_no_longer_in_force_but_is_kept(db: Database) -> None:
    exchange_id, flag_id = await flagged(db)
    async with db.sessions() as session:
        await remember(session, [suppression(exchange_id, flag_id, vector=None)])
    async with db.sessions() as session:
        assert await lift(session, flag_id, at=at(5)) == 1
    async with db.sessions() as session:
        assert await in_force(session) == []
        (kept,) = await for_exchanges(session, [exchange_id])
    assert kept.lifted_at == at(5) and kept.query_vector is None
    async with db.sessions() as session:  # confirmed bad again: in force again
        await remember(session, [suppression(exchange_id, flag_id)])
        assert len(await in_force(session)) == 1
