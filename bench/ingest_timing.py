"""Timing an ingest two ways on the same documents, for the throughput benches: the embedder alone on exactly the
texts an ingest embeds, and ``retrieval.ingest.ingest`` end to end into a fresh collection."""

from __future__ import annotations

import time
from collections.abc import Sequence

from retrieval.chunking import ChunkingConfig, chunk_document
from retrieval.chunks import body_text
from retrieval.documents import Document
from retrieval.embedders import Embedder
from retrieval.ingest import IngestReport, ingest
from retrieval.sentences import split_sentences
from retrieval.store import ChunkStore
from retrieval.weaviate_server import WeaviateHandle


def embedded_texts(documents: Sequence[Document], chunking: ChunkingConfig) -> tuple[int, list[str]]:
    """How many chunks, and the texts an ingest embeds: every chunk (with title and section), then its sentences."""
    chunks = [c for d in documents for c in chunk_document(d, chunking)]
    return len(chunks), [body_text(c) for c in chunks] + [
        s.text for c in chunks for s in split_sentences(c.text, c.language)]


async def time_bare(embedder: Embedder, texts: Sequence[str]) -> float:
    """Seconds the embedder takes on ``texts`` in batches of 64, its model loaded first."""
    await embedder.embed_documents(list(texts[:8]))
    started = time.perf_counter()
    for start in range(0, len(texts), 64):
        await embedder.embed_documents(list(texts[start : start + 64]))
    return time.perf_counter() - started


async def time_ingest(handle: WeaviateHandle, collection: str, documents: Sequence[Document], embedder: Embedder,
                      chunking: ChunkingConfig, *, repeats_once: bool = True) -> tuple[IngestReport, float]:
    """An ingest end to end into a fresh ``collection`` (dropped after), and its seconds."""
    await embedder.embed_documents(["load the model before timing"])
    store = ChunkStore(handle.client, collection)
    await store.drop()
    await store.open(embedder.name, embedder.dim, create=True)
    started = time.perf_counter()
    report = await ingest(documents, store=store, embedder=embedder, chunking=chunking, repeats_once=repeats_once)
    seconds = time.perf_counter() - started
    await store.drop()
    return report, seconds
