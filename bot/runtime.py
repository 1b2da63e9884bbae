"""The composition root: builds the clients once from settings, hands them out, and closes them.

Nothing else in the code base constructs a Weaviate client, a Cohere client or an embedder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import cohere

from bot.settings import Settings
from retrieval.embedders import Embedder
from retrieval.embedders.cohere_embed import CohereEmbedder
from retrieval.embedders.local import E5Embedder, UseEmbedder
from retrieval.store import ChunkStore
from retrieval.weaviate_server import WeaviateHandle, connect


@dataclass
class Retrieval:
    settings: Settings
    weaviate: WeaviateHandle
    store: ChunkStore
    embedder: Embedder


def build_cohere(settings: Settings) -> cohere.AsyncClientV2 | None:
    if settings.cohere_api_key is None:
        return None
    return cohere.AsyncClientV2(
        api_key=settings.cohere_api_key.get_secret_value(),
        base_url=settings.cohere_base_url or "https://api.cohere.com",
        timeout=settings.cohere_timeout_s,
        max_retries=0,  # our callers decide what a failure means (fallback, error line)
    )


def build_embedder(settings: Settings, cohere_client: cohere.AsyncClientV2 | None) -> Embedder:
    name = settings.embedder_name
    if name == "cohere":
        if cohere_client is None:
            raise ValueError("VERBATIM_EMBEDDER=cohere needs COHERE_API_KEY")
        return CohereEmbedder(cohere_client, settings.cohere_embed_model)
    if name == "use":
        return UseEmbedder()
    return E5Embedder()


@asynccontextmanager
async def open_retrieval(settings: Settings, *, create: bool = False, rebuild: bool = False) -> AsyncIterator[Retrieval]:
    """Connect to Weaviate and open the chunk collection; ``create`` makes it when missing (ingest)."""
    async with AsyncExitStack() as stack:
        cohere_client = build_cohere(settings)
        embedder = build_embedder(settings, cohere_client)
        stack.push_async_callback(embedder.aclose)
        handle = await connect(settings.weaviate_config())
        stack.push_async_callback(handle.close)
        store = ChunkStore(handle.client, settings.verbatim_collection)
        if rebuild:
            await store.drop()
        await store.open(embedder.name, embedder.dim, ja_tokenization=settings.verbatim_ja_tokenization, create=create)
        yield Retrieval(settings=settings, weaviate=handle, store=store, embedder=embedder)
