"""Citations a lead confirmed bad, remembered per question: written when a flag is resolved, read by the answer path.

    remember        the rows of one resolved flag (idempotent on (flag, chunk): resolving again changes nothing)
    lift            a flag resolved otherwise later: its rows stop counting (kept, with `lifted_at`)
    in_force        every row not lifted, for the answer path's cached source and `review chunks`
    for_exchanges   the rows made from these exchanges' flags (recheck)

A new version of the document clears a suppression without a write: its chunks have new ids and content
hashes, and the answer path matches both (`bot.answer.suppress`). Each write commits before it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Suppression
from storage.records import SuppressionRecord, require_aware


async def remember(session: AsyncSession, records: Sequence[SuppressionRecord]) -> list[SuppressionRecord]:
    """Store each record unless its (flag, chunk) is already stored (then it is made in force again)."""
    kept: list[SuppressionRecord] = []
    for record in records:
        row = await session.scalar(select(Suppression).where(Suppression.flag_id == record.flag_id,
                                                             Suppression.chunk_id == record.chunk_id))
        if row is None:
            row = Suppression(**_columns(record))
            session.add(row)
        else:
            row.lifted_at = None
        await session.flush()
        kept.append(_to_record(row))
    await session.commit()
    return kept


async def lift(session: AsyncSession, flag_id: str, *, at: datetime) -> int:
    """Stop the flag's suppressions from counting; returns how many were in force."""
    require_aware("at", at)
    result = await session.execute(
        update(Suppression).where(Suppression.flag_id == flag_id, Suppression.lifted_at.is_(None))
        .values(lifted_at=at).execution_options(synchronize_session=False)
    )
    await session.commit()
    return int(result.rowcount)  # type: ignore[attr-defined]


async def in_force(session: AsyncSession) -> list[SuppressionRecord]:
    """Every suppression not lifted, oldest first."""
    rows = await session.scalars(select(Suppression).where(Suppression.lifted_at.is_(None))
                                 .order_by(Suppression.created_at, Suppression.id))
    return [_to_record(row) for row in rows]


async def for_exchanges(session: AsyncSession, exchange_ids: Sequence[str]) -> list[SuppressionRecord]:
    """The suppressions (lifted or not) made from flags on these exchanges."""
    if not exchange_ids:
        return []
    rows = await session.scalars(select(Suppression).where(Suppression.exchange_id.in_(list(exchange_ids)))
                                 .order_by(Suppression.created_at, Suppression.id))
    return [_to_record(row) for row in rows]


def _columns(record: SuppressionRecord) -> dict[str, object]:
    return {
        "id": record.id, "flag_id": record.flag_id, "exchange_id": record.exchange_id, "chunk_id": record.chunk_id,
        "document_id": record.document_id, "version": record.version, "content_hash": record.content_hash,
        "question": record.question, "query": record.query, "embedder": record.embedder,
        "query_vector": None if record.query_vector is None else list(record.query_vector),
        "created_by": record.created_by, "created_at": record.created_at, "lifted_at": record.lifted_at,
    }


def _to_record(row: Suppression) -> SuppressionRecord:
    return SuppressionRecord(
        id=row.id, flag_id=row.flag_id, exchange_id=row.exchange_id, chunk_id=row.chunk_id,
        document_id=row.document_id, version=row.version, content_hash=row.content_hash, question=row.question,
        query=row.query, embedder=row.embedder,
        query_vector=None if row.query_vector is None else tuple(row.query_vector),
        created_by=row.created_by, created_at=row.created_at, lifted_at=row.lifted_at,
    )
