"""Weaviate, the Cohere client and the embedders, from settings (the package's docstring maps the root)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import cohere

from bot.settings import Settings
from retrieval.embedders import Embedder
from retrieval.embedders.cohere_embed import CohereEmbedder
from retrieval.embedders.local import E5Embedder, UseEmbedder
from retrieval.store import ChunkStore, Replication
from retrieval.weaviate_server import WeaviateHandle, connect


@dataclass
class Retrieval:
    settings: Settings
    weaviate: WeaviateHandle
    store: ChunkStore
    embedder: Embedder
    cohere: cohere.AsyncClientV2 | None


def build_cohere(settings: Settings) -> cohere.AsyncClientV2 | None:
    if settings.cohere_api_key is None:
        return None
    return cohere.AsyncClientV2(
        api_key=settings.cohere_api_key.get_secret_value(),
        base_url=settings.cohere_base_url or "https://api.cohere.com",
        timeout=settings.cohere_timeout_s,
        max_retries=0,  # our callers decide what a failure means (fallback, error line)
    )


def build_embedder(settings: Settings, cohere_client: cohere.AsyncClientV2 | None,
                   threads: int | None = None, query_threads: int | None = None) -> Embedder:
    """The configured embedder; ``threads`` caps the cores a local one computes on (default: all it may use),
    ``query_threads`` those e5 embeds questions on (default: ``threads``)."""
    name = settings.embedder_name
    if name == "cohere":
        if cohere_client is None:
            raise ValueError("VERBATIM_EMBEDDER=cohere needs COHERE_API_KEY")
        return CohereEmbedder(cohere_client, settings.cohere_embed_model)
    if name == "use":
        return UseEmbedder(threads=threads or 2)
    return E5Embedder(threads=threads, query_threads=query_threads, cache_dir=settings.verbatim_model_cache)


@asynccontextmanager
async def open_retrieval(settings: Settings, *, create: bool = False, rebuild: bool = False,
                         embed_threads: int | None = None, query_threads: int | None = None,
                         embeds: bool = True,
                         while_starting: Callable[[Embedder], Coroutine[object, object, None]] | None = None,
                         ) -> AsyncIterator[Retrieval]:
    """Connect to Weaviate and open the chunk collection; ``create`` makes it when missing (ingest). ``embeds``:
    the caller will embed, so a local model starts loading now; False for registry-only commands.
    ``while_starting(embedder)``: work to do while Weaviate starts, stopped (cancelled) once the collection is
    open."""
    async with AsyncExitStack() as stack:
        cohere_client = build_cohere(settings)
        if cohere_client is not None:  # closed last: the embedder, reranker and composer share it
            await stack.enter_async_context(cohere_client)
        embedder = build_embedder(settings, cohere_client, embed_threads, query_threads)
        stack.push_async_callback(embedder.aclose)
        if embeds and isinstance(embedder, E5Embedder):  # its second of loading runs while Weaviate starts (3 s)
            embedder.preload()
        # The work runs until the collection is open (connecting, and a rebuild's drop, take 3-4 s of idle cores).
        work = asyncio.create_task(while_starting(embedder)) if while_starting is not None else None
        try:
            handle = await connect(settings.weaviate_config())
            stack.push_async_callback(handle.close)
            store = ChunkStore(handle.client, settings.verbatim_collection,
                               query_timeout_s=settings.weaviate_query_timeout_s,
                               replication=Replication(settings.weaviate_replication_factor,
                                                       settings.weaviate_consistency))
            if rebuild:
                await store.drop()
            await store.open(embedder.name, embedder.dim, ja_tokenization=settings.verbatim_ja_tokenization,
                             create=create)
        finally:
            if work is not None:
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work  # its own errors are raised: the work keeps what it finished, never fails quietly
        yield Retrieval(settings=settings, weaviate=handle, store=store, embedder=embedder, cohere=cohere_client)


@asynccontextmanager
async def open_gaps_embedder(settings: Settings, reuse: Embedder | None = None) -> AsyncIterator[E5Embedder]:
    """The local e5 that embeds no-support questions for the gaps: ``reuse`` when it is one (one model in the
    process), else its own, which loads on first use (in its own thread) and is closed here."""
    if isinstance(reuse, E5Embedder):
        yield reuse
        return
    embedder = E5Embedder(cache_dir=settings.verbatim_model_cache)
    try:
        yield embedder
    finally:
        await embedder.aclose()
