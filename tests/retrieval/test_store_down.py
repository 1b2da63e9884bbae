"""A store that dies: the next search ends in our bounded StoreError (so the asker gets an error reply after the
store's query timeout, not after the Weaviate client's minute of retries), and readiness says so. The review
desk's reads fail the same way, with retrieval's own error, never with Weaviate's exceptions."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from retrieval.store import ChunkStore, StoreError
from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_server import WeaviateHandle, connect
from tests.conftest import free_port


@pytest.fixture
async def doomed(tmp_path: Path, weaviate_binary_dir: Path) -> AsyncIterator[tuple[WeaviateHandle, ChunkStore]]:
    """An embedded server of its own (another home, other ports), with an empty collection, to be killed."""
    config = WeaviateConfig(url=None, grpc_url=None, api_key=None, data_dir=tmp_path / "home" / "weaviate",
                            binary_dir=weaviate_binary_dir, port=free_port(), grpc_port=free_port())
    handle = await connect(config)
    store = ChunkStore(handle.client, "Doomed", query_timeout_s=1.5)
    await store.open("e5-test", 4, create=True)
    try:
        yield handle, store
    finally:
        await handle.close()


async def test_a_killed_store_fails_the_search_at_its_timeout_and_is_not_ready(
        doomed: tuple[WeaviateHandle, ChunkStore]) -> None:
    handle, store = doomed
    assert await store.ready()
    assert await store.search("refunds", np.ones(4, dtype=np.float32), language="en", channels=(), limit=5,
                              alpha=0.5) == []
    assert handle._process is not None and handle._process.process is not None
    os.kill(handle._process.process.pid, signal.SIGKILL)
    handle._process.process.wait()
    with pytest.raises(StoreError, match="did not answer the search within 1.5 s"):
        await store.search("refunds", np.ones(4, dtype=np.float32), language="en", channels=(), limit=5, alpha=0.5)
    with pytest.raises(StoreError, match="did not answer the sentence search within 1.5 s"):
        await store.sentence_hits(np.ones(4, dtype=np.float32), ["a-chunk"])
    assert not await store.ready()
    with pytest.raises(StoreError, match="did not answer the chunk read within 1.5 s"):
        await store.get_chunks(["a-chunk"])  # the review desk's read: its one line, not Weaviate's exception
    with pytest.raises(StoreError, match="did not answer the chunk count within 1.5 s"):
        await store.count()
