"""What the connector tests share: what a search shows after a sync."""

from __future__ import annotations

from retrieval.embedders.local import E5Embedder
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.store import ChunkStore


async def visible(store: ChunkStore, embedder: E5Embedder, query: str, channel: str | None = None) -> list[str]:
    """The document ids of the top five hits for ``query``, as seen from ``channel`` (None: public only)."""
    result = await search(query, store=store, embedder=embedder, config=SearchConfig(), channel=channel, limit=5)
    return [hit.chunk.document_id for hit in result.hits]
