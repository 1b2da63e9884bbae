"""Citations leads confirmed bad, as the desk shows them. Pure: no I/O.

- On one exchange: how many candidate chunks its answer left out because a lead confirmed them bad for that
  question or a near-duplicate (`route.suppressed`, written by the answer path), and how many it ranked last.
- For the documents' owners (`verbatim review chunks`): each suppressed chunk with the different questions it
  was confirmed bad for, most first, and whether it still applies: a new version of the chunk's document
  (another content hash or version indexed) clears it, since the flag was about the old text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.answer.suppress import normalize_question
from retrieval.store import DocumentRecord
from storage.records import ExchangeRecord, SuppressionRecord


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def route_ids(exchange: ExchangeRecord, key: str) -> tuple[str, ...]:
    value = exchange.route.get(key) if isinstance(exchange.route, Mapping) else None
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def suppressed_line(exchange: ExchangeRecord) -> str | None:
    """"1 citation suppressed by a lead's flag" (and how many ranked lower), or None when none was."""
    suppressed, demoted = route_ids(exchange, "suppressed"), route_ids(exchange, "demoted")
    parts = []
    if suppressed:
        parts.append(f"{plural(len(suppressed), 'citation')} suppressed by a lead's flag")
    if demoted:
        parts.append(f"{plural(len(demoted), 'citation')} ranked lower (flagged for a similar question)")
    return "; ".join(parts) or None


class ChunkState(StrEnum):
    IN_FORCE = "in_force"  # the flagged version is still the one indexed
    CLEARED = "cleared"  # a new version of the document is indexed: the flag was about the old text
    REMOVED = "removed"  # the document is no longer indexed
    UNKNOWN = "unknown"  # the index could not be read


@dataclass(frozen=True, slots=True)
class SuppressedChunk:
    chunk_id: str
    document_id: str
    version: str | None
    state: ChunkState
    indexed_version: str | None
    questions: tuple[str, ...]  # the different questions (as asked) it was confirmed bad for
    suppressions: tuple[SuppressionRecord, ...]


def chunk_state(suppression: SuppressionRecord, indexed: DocumentRecord | None, *, index_read: bool) -> ChunkState:
    if not index_read:
        return ChunkState.UNKNOWN
    if indexed is None:
        return ChunkState.REMOVED
    if suppression.content_hash is not None and indexed.content_hash != suppression.content_hash:
        return ChunkState.CLEARED
    if indexed.version != suppression.version:
        return ChunkState.CLEARED
    return ChunkState.IN_FORCE


def by_chunk(suppressions: Sequence[SuppressionRecord], current: Mapping[str, DocumentRecord] | None,
             *, min_questions: int = 1) -> list[SuppressedChunk]:
    """Suppressions grouped by chunk, with at least ``min_questions`` different questions, most questions first."""
    groups: dict[str, list[SuppressionRecord]] = {}
    for suppression in suppressions:
        groups.setdefault(suppression.chunk_id, []).append(suppression)
    chunks = []
    for chunk_id, rows in groups.items():
        distinct: dict[str, str] = {}
        for row in rows:
            distinct.setdefault(normalize_question(row.question), row.question)
        if len(distinct) < min_questions:
            continue
        first = rows[0]
        indexed = current.get(first.document_id) if current is not None else None
        chunks.append(SuppressedChunk(chunk_id, first.document_id, first.version,
                                      chunk_state(first, indexed, index_read=current is not None),
                                      indexed.version if indexed is not None else None,
                                      tuple(distinct.values()), tuple(rows)))
    return sorted(chunks, key=lambda c: (-len(c.questions), c.document_id, c.chunk_id))


def suppression_to_json(suppression: SuppressionRecord) -> dict[str, Any]:
    return {
        "id": suppression.id, "flag_id": suppression.flag_id, "exchange_id": suppression.exchange_id,
        "chunk_id": suppression.chunk_id, "document_id": suppression.document_id, "version": suppression.version,
        "content_hash": suppression.content_hash, "question": suppression.question, "query": suppression.query,
        "embedder": suppression.embedder, "has_vector": suppression.query_vector is not None,
        "created_by": suppression.created_by, "created_at": suppression.created_at.isoformat(),
    }


def chunk_to_json(chunk: SuppressedChunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id, "document_id": chunk.document_id, "version": chunk.version,
        "state": chunk.state.value, "indexed_version": chunk.indexed_version, "questions": list(chunk.questions),
        "flags": [s.flag_id for s in chunk.suppressions], "exchanges": [s.exchange_id for s in chunk.suppressions],
    }
