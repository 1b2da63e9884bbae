"""The unit of retrieval: a chunk of one document version, and a chunk with its search score.

Weaviate objects become these types inside ``retrieval.store``; nothing above ``retrieval``
ever sees a Weaviate object.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

# A fixed namespace so chunk ids are stable across machines and re-ingests of the same content.
_CHUNK_NAMESPACE = uuid.UUID("5b0f4a36-8f0e-4c55-9d3e-7c1f3b0a9e21")


def make_chunk_id(document_id: str, content_hash: str, ordinal: int) -> str:
    """A stable id for the ``ordinal``-th chunk of one version (content hash) of a document."""
    return str(uuid.uuid5(_CHUNK_NAMESPACE, f"{document_id}\x1f{content_hash}\x1f{ordinal}"))


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str
    document_id: str
    version: str | None
    content_hash: str
    ordinal: int
    title: str
    section: str | None
    page: int | None
    url: str | None
    updated_at: str | None
    visibility: tuple[str, ...] | None  # None: visible to everyone
    language: str  # "en", "ja", "ru", ...
    text: str  # verbatim text of the document: quotes are checked against this


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A chunk as retrieved: its hybrid search score and, after reranking, the reranker's score."""

    chunk: Chunk
    score: float
    rank: int  # 1-based rank in the search results
    rerank_score: float | None = None


@dataclass(frozen=True, slots=True)
class SentenceSpan:
    """A sentence of a chunk, by offsets into the chunk's text."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class SentenceHit:
    chunk_id: str
    start: int
    end: int
    score: float  # cosine similarity to the query vector


def body_text(chunk: Chunk) -> str:
    """What BM25 sees for a chunk: title and section give the words a chunk's text leaves implicit."""
    return "\n".join(part for part in (chunk.title, chunk.section or "", chunk.text) if part)
