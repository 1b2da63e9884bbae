"""What a lead's verdict teaches the answer path: a citation resolved `confirmed_bad` is remembered for its question.

    learn(sessions, record, resolved, learning) -> the suppressions now in force for those flags

- `confirmed_bad` on a citation's flag ("S2"): that citation's chunk; on the whole answer: every kept citation's.
- The chunk's content hash comes from the index (None when the index cannot be read: the chunk id names the
  version anyway); the query's vector from the embedder the bot answers with (None without one: only the
  same question, by its text, is then matched).
- Any other verdict on a flag lifts what an earlier `confirmed_bad` of that flag remembered.
- `Learning.changed` is called after a write (the bot's cached `SuppressionSource.invalidate`, when the desk
  runs in the bot's process).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.review.lookup import ChunkLookup, IndexUnavailable, read_index
from retrieval.embedders import Embedder
from retrieval.errors import RetrievalError, first_line
from storage.records import ExchangeRecord, FlagRecord, SuppressionRecord
from storage.suppressions import lift, remember

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Learning:
    """What remembering a confirmed-bad citation reads: the index (content hashes) and the query embedder."""

    lookup: ChunkLookup = field(default_factory=lambda: IndexUnavailable("no index given"))
    embedder: Embedder | None = None
    changed: Callable[[], None] | None = None


def flagged_citations(record: ExchangeRecord, flag: FlagRecord) -> list[tuple[str, str, str | None]]:
    """(chunk id, document id, version) of the kept citations a flag names (all of them for the whole answer)."""
    chosen = [c for c in record.citations if c.kept and (flag.label is None or c.label == flag.label)]
    return list(dict.fromkeys((c.chunk_id, c.document_id, c.version) for c in chosen))


async def learn(sessions: async_sessionmaker[AsyncSession], record: ExchangeRecord, resolved: Sequence[FlagRecord],
                learning: Learning, *, at: datetime) -> list[SuppressionRecord]:
    """Remember the chunks of flags resolved `confirmed_bad`; lift those of flags resolved otherwise."""
    bad = [flag for flag in resolved if flag.resolution == "confirmed_bad"]
    kept: list[SuppressionRecord] = []
    for flag in resolved:
        if flag.resolution != "confirmed_bad":
            async with sessions() as session:
                await lift(session, flag.id, at=at)
    if bad:
        targets = {flag.id: flagged_citations(record, flag) for flag in bad}
        chunk_ids = [chunk for cited in targets.values() for chunk, _, _ in cited]
        index = await read_index(learning.lookup, chunk_ids, [])
        hashes = {cid: chunk.content_hash for cid, chunk in (index.chunks or {}).items()}
        query = record.query or record.question
        vector = await _vector(learning.embedder, query)
        rows = [
            SuppressionRecord(
                id=str(uuid.uuid4()), flag_id=flag.id, exchange_id=record.id, chunk_id=chunk_id,
                document_id=document_id, version=version, content_hash=hashes.get(chunk_id), question=record.question,
                query=query, embedder=learning.embedder.name if vector is not None and learning.embedder else None,
                query_vector=vector, created_by=flag.resolved_by or "unknown", created_at=flag.resolved_at or at,
            )
            for flag in bad for chunk_id, document_id, version in targets[flag.id]
        ]
        async with sessions() as session:
            kept = await remember(session, rows)
    if resolved and learning.changed is not None:
        learning.changed()
    return kept


async def _vector(embedder: Embedder | None, query: str) -> tuple[float, ...] | None:
    if embedder is None:
        return None
    try:
        return tuple(float(x) for x in await embedder.embed_query(query))
    except RetrievalError as error:
        log.warning("query vector not made (only the same question will be matched): %s", first_line(error))
        return None
