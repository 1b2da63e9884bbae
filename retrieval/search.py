"""A query in, scored chunks out: detect the query's language, embed it, run hybrid search."""

from __future__ import annotations

import time
from dataclasses import dataclass

from retrieval.chunks import ScoredChunk
from retrieval.embedders import Embedder
from retrieval.language import detect_language
from retrieval.search_config import SearchConfig
from retrieval.store import ChunkStore, SearchMode


@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    language: str
    hits: list[ScoredChunk]
    embed_ms: float
    search_ms: float


async def search(
    query: str,
    *,
    store: ChunkStore,
    embedder: Embedder,
    config: SearchConfig,
    channel: str | None = None,
    limit: int | None = None,
    mode: SearchMode = "hybrid",
) -> SearchResult:
    language = detect_language(query)
    started = time.perf_counter()
    vector = None if mode == "bm25" else await embedder.embed_query(query)
    embedded = time.perf_counter()
    hits = await store.search(
        query, vector, language=language, channels=(channel,) if channel else (), limit=limit or config.limit,
        alpha=config.alpha_for(language), mode=mode,
    )
    done = time.perf_counter()
    return SearchResult(query, language, hits, (embedded - started) * 1000, (done - embedded) * 1000)
