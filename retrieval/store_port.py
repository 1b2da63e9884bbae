"""The store port: exactly what the answer path needs from a chunk store, and a small in-memory double of it.

    Store.search(query, vector, language=, channels=, limit=, alpha=, sources=None)
                                                                     -> chunks visible everywhere or in one of
                                                                        ``channels``, best first; given
                                                                        ``sources``, only of documents whose id
                                                                        begins with one (or, in Weaviate, synced
                                                                        from a source of that name)
    Store.sentence_hits(vector, chunk_ids, limit=)                    -> those chunks' sentences, closest first
    Store.ready()                                                     -> whether it would serve a search now

``retrieval.store.ChunkStore`` (Weaviate) is the real implementation and the only one production uses; it
also ingests, registers and fetches, which the answer path never does. ``MemoryStore`` is the double shipped
beside the port (as httpx ships ``MockTransport`` beside its transport port): pure tests of the answer path use
it; the integration tests use the real Weaviate.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from retrieval.chunks import Chunk, ScoredChunk, SentenceHit, SentenceSpan


class Store(Protocol):
    async def search(self, query: str, vector: np.ndarray | None, *, language: str, channels: Collection[str],
                     limit: int, alpha: float, sources: Collection[str] | None = None) -> list[ScoredChunk]: ...

    async def sentence_hits(self, vector: np.ndarray, chunk_ids: Sequence[str], *,
                            limit: int = 400) -> list[SentenceHit]: ...

    async def ready(self) -> bool:
        """Whether a search would be served now (for readiness checks); never raises."""
        ...


@dataclass(frozen=True, slots=True)
class StoredChunk:
    chunk: Chunk
    vector: np.ndarray
    sentences: tuple[tuple[SentenceSpan, np.ndarray], ...] = ()


class MemoryStore:
    """A ``Store`` over a list of chunks with their vectors: exact cosine, visibility as Weaviate applies it
    (``None`` = everyone; ``channels`` see everyone's and their own), ``alpha`` ignored (vector search only);
    ``sources`` narrows by document id prefix only (it keeps no registry of source names)."""

    def __init__(self, chunks: Sequence[StoredChunk]) -> None:
        self._chunks = list(chunks)

    async def search(self, query: str, vector: np.ndarray | None, *, language: str, channels: Collection[str],
                     limit: int, alpha: float, sources: Collection[str] | None = None) -> list[ScoredChunk]:
        if vector is None:
            return []
        seeing = set(channels)
        visible = [c for c in self._chunks if (c.chunk.visibility is None or seeing & set(c.chunk.visibility))
                   and (sources is None or c.chunk.document_id.startswith(tuple(sources)))]
        ranked = sorted(visible, key=lambda c: -_cosine(vector, c.vector))[:limit]
        return [ScoredChunk(c.chunk, _cosine(vector, c.vector), i + 1) for i, c in enumerate(ranked)]

    async def ready(self) -> bool:
        return True

    async def sentence_hits(self, vector: np.ndarray, chunk_ids: Sequence[str], *,
                            limit: int = 400) -> list[SentenceHit]:
        wanted = set(chunk_ids)
        hits = [SentenceHit(c.chunk.chunk_id, span.start, span.end, _cosine(vector, v))
                for c in self._chunks if c.chunk.chunk_id in wanted for span, v in c.sentences]
        return sorted(hits, key=lambda h: -h.score)[:limit]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))
