"""The review desk's port to the chunk index: two reads, and what it means when they fail.

A lead reviewing an exchange wants the text each quote came from and whether the cited version is still the
one indexed. Both live in Weaviate, which may be down while the exchange log is up: the review must still
show everything the log holds, and say once that the chunk text is unavailable. So every failure of the
index becomes `IndexView.unavailable` (a one-line reason) here, and never an error page.

`retrieval.store.ChunkStore` satisfies `ChunkLookup` as it is; `IndexUnavailable` is the stand-in used when
the index could not even be opened (the reason is kept and shown on every review); `StaticChunks` holds
chunks in memory (tests, or a log examined away from its index).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from retrieval.chunks import Chunk
from retrieval.errors import RetrievalError, first_line
from retrieval.store import DocumentRecord

DEFAULT_TIMEOUT_S = 10.0


class ChunkLookup(Protocol):
    """Read chunks by id (any version still stored) and the version of each document now indexed."""

    async def get_chunks(self, chunk_ids: Sequence[str]) -> Mapping[str, Chunk]: ...

    async def current(self, document_ids: Sequence[str]) -> Mapping[str, DocumentRecord]: ...


class ChunksUnavailable(Exception):
    """The index cannot be read; the message is one line saying why."""


# What a failed read of the index looks like: retrieval's one root (Weaviate's own errors never leave it).
LOOKUP_ERRORS = (ChunksUnavailable, RetrievalError, OSError, TimeoutError)


class IndexUnavailable:
    """A `ChunkLookup` for when the index could not be opened: every read fails with the same reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def get_chunks(self, chunk_ids: Sequence[str]) -> Mapping[str, Chunk]:
        raise ChunksUnavailable(self.reason)

    async def current(self, document_ids: Sequence[str]) -> Mapping[str, DocumentRecord]:
        raise ChunksUnavailable(self.reason)


class StaticChunks:
    """A `ChunkLookup` over chunks and registry records held in memory.

    Shipped with the port, as httpx ships MockTransport: for tests of the pages, and for looking at a log
    copied off a machine whose index is not at hand.
    """

    def __init__(self, chunks: Iterable[Chunk] = (), documents: Iterable[DocumentRecord] = ()) -> None:
        self._chunks = {chunk.chunk_id: chunk for chunk in chunks}
        self._documents = {document.document_id: document for document in documents}

    async def get_chunks(self, chunk_ids: Sequence[str]) -> Mapping[str, Chunk]:
        return {chunk_id: self._chunks[chunk_id] for chunk_id in chunk_ids if chunk_id in self._chunks}

    async def current(self, document_ids: Sequence[str]) -> Mapping[str, DocumentRecord]:
        return {doc_id: self._documents[doc_id] for doc_id in document_ids if doc_id in self._documents}


@dataclass(frozen=True, slots=True)
class IndexView:
    """What the index said about an exchange's chunks and documents; `unavailable` is why it said nothing."""

    chunks: Mapping[str, Chunk] | None
    current: Mapping[str, DocumentRecord] | None
    unavailable: str | None = None


async def read_index(
    lookup: ChunkLookup, chunk_ids: Sequence[str], document_ids: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> IndexView:
    """The chunks and current versions for a review, or an `IndexView` saying why they are unavailable."""
    chunk_ids = list(dict.fromkeys(chunk_ids))
    document_ids = list(dict.fromkeys(document_ids))
    try:
        async with asyncio.timeout(timeout_s):
            chunks = await lookup.get_chunks(chunk_ids)
            current = await lookup.current(document_ids)
    except TimeoutError:
        return IndexView(None, None, f"the index did not answer within {timeout_s:g} s")
    except LOOKUP_ERRORS as error:
        return IndexView(None, None, first_line(error))
    return IndexView(dict(chunks), dict(current))
