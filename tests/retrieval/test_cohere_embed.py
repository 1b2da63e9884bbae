"""Cohere Embed, switched on by COHERE_API_KEY, against a local stand-in of Cohere's API."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.runtime.retrieval import build_cohere, build_embedder
from bot.settings import Settings
from retrieval.chunking import ChunkingConfig
from retrieval.embedders import Embedder
from retrieval.ingest import IngestLimits, Status, ingest, load_paths
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.store import ChunkStore, IndexMismatch
from retrieval.weaviate_server import WeaviateHandle
from tests.conftest import DEMO_CORPUS
from tests.standins.cohere import CohereStandIn, status


@asynccontextmanager
async def cohere_embedder(settings: Settings) -> AsyncIterator[Embedder]:
    """Cohere Embed on a client of its own, closed with the block (as ``open_retrieval`` closes the bot's)."""
    client = build_cohere(settings)
    assert client is not None
    async with client:
        yield build_embedder(settings, client)


def cohere_settings(api: CohereStandIn) -> Settings:
    return Settings(cohere_api_key=SecretStr(api.api_key), cohere_base_url=api.base_url, _env_file=None)  # type: ignore[call-arg]


async def test_a_cohere_key_switches_ingest_and_search_to_cohere_embed(weaviate: WeaviateHandle) -> None:
    async with CohereStandIn() as api:
        settings = cohere_settings(api)
        assert settings.embedder_name == "cohere"
        async with cohere_embedder(settings) as embedder:
            store = ChunkStore(weaviate.client, f"Cohere{uuid.uuid4().hex[:8]}")
            await store.open(embedder.name, embedder.dim, create=True)
            try:
                report = await ingest(load_paths([DEMO_CORPUS / "billing"], IngestLimits()), store=store, embedder=embedder,
                                      chunking=ChunkingConfig())
                assert report.count(Status.INGESTED) == 1
                inputs = {r["input_type"] for r in api.embed_requests}
                assert inputs == {"search_document"} and all(r["model"] == "embed-v4.0" for r in api.embed_requests)
                assert embedder.dim == 1536  # Embed v4's default size, which the stand-in returns too

                result = await search("refund processing fee", store=store, embedder=embedder, config=SearchConfig(), limit=1)
                assert result.hits[0].chunk.document_id == "billing-refunds"
                assert api.embed_requests[-1]["input_type"] == "search_query"

                # The index remembers its embedder: the local model is refused on it.
                with pytest.raises(IndexMismatch, match="cohere:embed-v4.0"):
                    await ChunkStore(weaviate.client, store.name).open("e5-small-q4", 384, create=False)
            finally:
                await store.drop()


async def test_cohere_embed_failing_fails_the_batch_with_a_clear_message(weaviate: WeaviateHandle, tmp_path: Path) -> None:
    async with CohereStandIn() as api:
        settings = cohere_settings(api)
        async with cohere_embedder(settings) as embedder:
            store = ChunkStore(weaviate.client, f"Cohere{uuid.uuid4().hex[:8]}")
            await store.open(embedder.name, embedder.dim, create=True)
            api.script_embed(status(500))
            try:
                report = await ingest(load_paths([DEMO_CORPUS / "accounts"], IngestLimits()), store=store, embedder=embedder,
                                      chunking=ChunkingConfig())
                assert [f.message for f in report.failures] == ["embedding failed: Cohere Embed answered HTTP 500"]
                assert api.api_key not in repr(report)
            finally:
                await store.drop()
