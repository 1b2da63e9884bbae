"""Documents in: load, chunk, skip what is unchanged, embed, and replace each document's chunks.

Bad input never stops a run: each file (or JSONL line) that cannot be loaded, and each document
Weaviate rejects, is one ``failed`` outcome with a one-line message, and the rest goes on.
A store that cannot be reached at all does stop it (``StoreError`` propagates).

Stopping: cancelled (the CLI's Ctrl-C), a run finishes writing the batch Weaviate was taking and stops; every
document reported as written is in the index (``report``, filled as outcomes come, says which), the rest is not,
and running it again skips what is unchanged.

Work is pipelined so the embedder — the slowest stage — is never idle waiting for Weaviate or for chunking:
while a batch is written, the next one is embedded and the one after it loaded and chunked; and a
``FirstBatch`` is embedded while Weaviate Embedded is still starting (2–3 s, mostly its own timers). Loading,
chunking and embedding run off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

import numpy as np

from retrieval.chunking import ChunkingConfig, chunk_document
from retrieval.chunks import Chunk, SentenceSpan, body_text
from retrieval.documents import Document
from retrieval.embedders import Embedder, EmbeddingError
from retrieval.embedding_memo import EmbeddingMemo
from retrieval.loaders import LoadError, iter_documents
from retrieval.sentences import split_sentences
from retrieval.stemming import stem_text
from retrieval.store import (
    ChunkStore,
    DocumentRecord,
    IndexedChunk,
    ReplaceOutcome,
)


class Status(str, Enum):
    INGESTED = "ingested"  # new document
    REPLACED = "replaced"  # a new version replaced the old one's chunks
    SKIPPED = "skipped"  # unchanged since the last ingest
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Outcome:
    source: str
    status: Status
    document_id: str | None = None
    chunks: int = 0
    message: str | None = None


@dataclass(frozen=True, slots=True)
class IngestLimits:
    max_file_bytes: int = 50_000_000
    max_document_chars: int = 5_000_000


@dataclass
class IngestReport:
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: Status) -> int:
        return sum(1 for o in self.outcomes if o.status is status)

    @property
    def chunks(self) -> int:
        return sum(o.chunks for o in self.outcomes if o.status in (Status.INGESTED, Status.REPLACED))

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status is Status.FAILED]

    def summary(self) -> dict[str, int]:
        return {s.value: self.count(s) for s in Status} | {"chunks": self.chunks}


@dataclass(frozen=True, slots=True)
class _Prepared:
    document: Document
    chunks: tuple[Chunk, ...]
    sentences: tuple[tuple[SentenceSpan, ...], ...]  # per chunk
    stemmed: tuple[str, ...]  # per chunk: its BM25 text, stemmed
    content_hash: str

    def texts(self) -> list[str]:
        """What gets embedded: each chunk (with its title and section), then each of its sentences."""
        out = [body_text(c) for c in self.chunks]
        for chunk, spans in zip(self.chunks, self.sentences):
            out.extend(chunk.text[s.start : s.end] for s in spans)
        return out


# A batch is flushed once it holds this many chunks (or documents): big enough for efficient
# embedding calls and Weaviate batches, small enough that progress moves and memory stays flat.
_BATCH_CHUNKS = 64
_BATCH_DOCUMENTS = 256


def load_paths(paths: Sequence[Path], limits: IngestLimits) -> Iterator[Document | LoadError]:
    """The documents (and load errors) under ``paths``, lazily: files are read as the ingest pulls them."""
    return iter_documents(paths, max_file_bytes=limits.max_file_bytes, max_document_chars=limits.max_document_chars)


async def ingest(
    items: Iterable[Document | LoadError] | FirstBatch,
    *,
    store: ChunkStore,
    embedder: Embedder,
    chunking: ChunkingConfig,
    on_outcome: Callable[[Outcome], None] | None = None,
    repeats_once: bool = True,
    report: IngestReport | None = None,
) -> IngestReport:
    """Index ``items`` (from ``load_paths``, or documents built in memory) and report each one's outcome.

    ``repeats_once``: a text met again in this run takes the vector computed the first time (False: every text
    is embedded, as before; for the ingest benchmark's baseline). ``report``: the report to fill as outcomes
    come (a caller that cancels the run still knows what was written). ``items`` may be a ``FirstBatch``: its
    batch is the run's first, its vectors the run's memo."""
    report = IngestReport() if report is None else report

    def record(outcome: Outcome) -> None:
        report.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    first = items if isinstance(items, FirstBatch) else None
    source = first.source if first is not None else iter(items)
    seen: dict[str, str] = {}  # document_id -> source, to catch two files claiming one id
    # A footer or a nav line repeated in this run: embedded once.
    memo = (first.memo if first is not None else EmbeddingMemo()) if repeats_once else None
    pending: asyncio.Task[list[tuple[_Prepared, ReplaceOutcome, bool]]] | None = None
    upcoming: asyncio.Task[list[_Prepared | LoadError]] | None = None
    try:
        while True:
            if first is not None:
                batch, upcoming, first = await first.take(), first.ahead, None
            else:
                batch = await (upcoming if upcoming is not None else _pull_batch(source, chunking))
                upcoming = None
            if not batch:
                break
            if upcoming is None:  # the next batch is loaded and chunked while this one is embedded (in order)
                upcoming = _pull_batch(source, chunking)
            ready: list[_Prepared] = []
            for item in batch:
                if isinstance(item, LoadError):
                    record(Outcome(item.source, Status.FAILED, message=item.message))
                    continue
                doc_id = item.document.document_id
                if doc_id in seen:
                    record(Outcome(item.document.source, Status.FAILED, doc_id,
                                   message=f"document_id '{doc_id}' is also used by {seen[doc_id]}: "
                                           "give each document its own document_id"))
                    continue
                seen[doc_id] = item.document.source
                if not item.chunks:
                    record(Outcome(item.document.source, Status.FAILED, doc_id, message="no text to index"))
                    continue
                ready.append(item)

            current = await store.current([p.document.document_id for p in ready])
            changed: list[tuple[_Prepared, bool]] = []  # (prepared, existed before)
            moved: list[DocumentRecord] = []  # unchanged, but found at another source path or source (or its first)
            for prepared in ready:
                previous = current.get(prepared.document.document_id)
                if previous is not None and previous.content_hash == prepared.content_hash:
                    found_at, found_in = prepared.document.source_path, prepared.document.source_name
                    if ((found_at is not None and found_at != previous.source_path)
                            or (found_in is not None and found_in != previous.source)):
                        moved.append(replace(previous, source_path=found_at or previous.source_path,
                                             source=found_in or previous.source))
                    record(Outcome(prepared.document.source, Status.SKIPPED, prepared.document.document_id,
                                   chunks=len(prepared.chunks)))
                else:
                    changed.append((prepared, previous is not None))
            await store.record_sources(moved)  # no re-embedding: only the registry learns where it is
            if not changed:
                continue

            texts = [t for p, _ in changed for t in p.texts()]
            try:
                vectors = await (memo.embed_documents(embedder, texts) if memo is not None
                                 else embedder.embed_documents(texts))
            except EmbeddingError as error:
                for prepared, _ in changed:
                    record(Outcome(prepared.document.source, Status.FAILED, prepared.document.document_id,
                                   message=f"embedding failed: {error}"))
                continue

            if pending is not None:
                # Shielded: a cancelled run still finishes the batch Weaviate is taking (awaited below), so no
                # document is left half written.
                written = await asyncio.shield(pending)
                pending = None
                _record_written(written, record)
            pending = asyncio.create_task(_write(store, changed, vectors))
    finally:
        # Stopped early: the batch pulled ahead was never written and is not reported (a later run indexes it).
        if upcoming is not None and not upcoming.cancel() and not upcoming.cancelled():
            upcoming.exception()  # retrieved, so asyncio does not log it; the error that stopped the run propagates
        # Also on an error above: finish (and report) what was already being written.
        if pending is not None:
            _record_written(await pending, record)
    return report


_EARLY_TEXTS = 32  # a FirstBatch embeds in slices this size: stopped at any moment, it keeps all but one


class FirstBatch:
    """An ingest's first batch, loaded and embedded before the store is open: ``embed`` runs while Weaviate starts
    and is stopped (cancelled) once it serves, keeping every slice it finished; ``ingest(first, ...)`` then writes
    the batch with those vectors (from the run's memo) and goes on with the rest.

    Only otherwise idle time is spent: if the store then says the documents are unchanged, the vectors go unused,
    but the run took no longer than the wait for Weaviate."""

    def __init__(self, items: Iterable[Document | LoadError], chunking: ChunkingConfig) -> None:
        self.source = iter(items)
        self.chunking = chunking
        self.memo = EmbeddingMemo()
        self._pulled: asyncio.Task[list[_Prepared | LoadError]] | None = None
        # The second batch, loaded and chunked while the first is embedded.
        self.ahead: asyncio.Task[list[_Prepared | LoadError]] | None = None

    def _pull(self) -> asyncio.Task[list[_Prepared | LoadError]]:
        if self._pulled is None:
            self._pulled = _pull_batch(self.source, self.chunking)
        return self._pulled

    async def embed(self, embedder: Embedder) -> None:
        # Shielded: the documents pulled from the source must reach the run even when this is stopped.
        batch = await asyncio.shield(self._pull())
        self.ahead = _pull_batch(self.source, self.chunking)
        texts = [t for p in batch if isinstance(p, _Prepared) and p.chunks for t in p.texts()]
        for start in range(0, len(texts), _EARLY_TEXTS):
            try:
                await self.memo.embed_documents(embedder, texts[start:start + _EARLY_TEXTS])
            except EmbeddingError:
                return  # the run embeds these texts again and reports the failure for each document

    async def take(self) -> list[_Prepared | LoadError]:
        """The batch (pulled now if ``embed`` never ran)."""
        return await self._pull()


def _pull_batch(items: Iterator[Document | LoadError],
                chunking: ChunkingConfig) -> asyncio.Task[list[_Prepared | LoadError]]:
    """The next batch, pulled from ``items`` in a worker thread (one pull at a time: each caller awaits the last)."""
    return asyncio.create_task(asyncio.to_thread(_next_batch, items, chunking))


def _next_batch(items: Iterator[Document | LoadError], chunking: ChunkingConfig) -> list[_Prepared | LoadError]:
    """Pull and chunk documents until a batch is full (runs in a worker thread)."""
    batch: list[_Prepared | LoadError] = []
    chunks = 0
    for item in items:
        if isinstance(item, LoadError):
            batch.append(item)
        else:
            pieces = tuple(chunk_document(item, chunking))
            spans = tuple(
                tuple(SentenceSpan(s.start, s.end) for s in split_sentences(c.text, c.language)) for c in pieces
            )
            stemmed = tuple(stem_text(body_text(c), c.language) for c in pieces)
            batch.append(_Prepared(item, pieces, spans, stemmed, item.content_hash()))
            chunks += len(pieces)
        if chunks >= _BATCH_CHUNKS or len(batch) >= _BATCH_DOCUMENTS:
            break
    return batch


async def _write(
    store: ChunkStore, changed: list[tuple[_Prepared, bool]], vectors: np.ndarray
) -> list[tuple[_Prepared, ReplaceOutcome, bool]]:
    documents = []
    row = 0
    for p, _ in changed:
        # Rows follow _Prepared.texts(): the document's chunks, then the sentences chunk by chunk.
        chunk_rows = vectors[row : row + len(p.chunks)]
        row += len(p.chunks)
        items = []
        for chunk, spans, stemmed, vector in zip(p.chunks, p.sentences, p.stemmed, chunk_rows):
            items.append(IndexedChunk(chunk, vector, spans, vectors[row : row + len(spans)], stemmed))
            row += len(spans)
        record = DocumentRecord(p.document.document_id, p.content_hash, p.document.version, p.document.title,
                                len(p.chunks), p.document.source_path, p.document.source_name)
        documents.append((record, items))
    outcomes = await store.replace_documents(documents)
    return [(p, o, existed) for (p, existed), o in zip(changed, outcomes)]


def _record_written(written: list[tuple[_Prepared, ReplaceOutcome, bool]], record: Callable[[Outcome], None]) -> None:
    for prepared, outcome, existed in written:
        doc = prepared.document
        if outcome.error is not None:
            record(Outcome(doc.source, Status.FAILED, doc.document_id, message=outcome.error))
        else:
            status = Status.REPLACED if existed else Status.INGESTED
            record(Outcome(doc.source, status, doc.document_id, chunks=len(prepared.chunks)))
