"""Shared fixtures: one real Weaviate (Weaviate Embedded) per test session, the real local embedder.

The server runs from the binary that `verbatim weaviate install` builds (`make test` runs it first).
Each test that writes gets its own collection, so tests never see each other's documents.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from retrieval.embedders.local import E5Embedder
from retrieval.encoder.runtime import E5Encoder
from retrieval.store import ChunkStore
from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_install import embedded_binary_path
from retrieval.weaviate_server import WeaviateHandle, connect

REPO = Path(__file__).resolve().parent.parent
DEMO_CORPUS = REPO / "demo" / "corpus"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def weaviate_binary_dir() -> Path:
    binary_dir = Path(os.environ.get("WEAVIATE_BINARY_DIR", "~/.cache/weaviate-embedded")).expanduser()
    if not embedded_binary_path(binary_dir).exists():
        pytest.fail(f"the Weaviate server is not installed in {binary_dir}: run `verbatim weaviate install` "
                    "(or `make test`, which does)", pytrace=False)
    return binary_dir


@pytest.fixture(scope="session")
def weaviate_config(tmp_path_factory: pytest.TempPathFactory, weaviate_binary_dir: Path) -> WeaviateConfig:
    home = tmp_path_factory.mktemp("verbatim-home")
    return WeaviateConfig(url=None, grpc_url=None, api_key=None, data_dir=home / "weaviate",
                          binary_dir=weaviate_binary_dir, port=free_port(), grpc_port=free_port())


@pytest.fixture(scope="session")
async def weaviate(weaviate_config: WeaviateConfig) -> AsyncIterator[WeaviateHandle]:
    handle = await connect(weaviate_config)
    try:
        yield handle
    finally:
        await handle.close()


@pytest.fixture(scope="session")
async def embedder() -> AsyncIterator[E5Embedder]:
    model = E5Embedder()
    try:
        yield model
    finally:
        await model.aclose()


@pytest.fixture(scope="session")
def encoder() -> Iterator[E5Encoder]:
    """The shipped e5 graph itself (no embedder around it), for the encoder's and the judge's tests."""
    shipped = E5Encoder(threads=2)
    yield shipped
    shipped.close()


@pytest.fixture
async def store(weaviate: WeaviateHandle, embedder: E5Embedder) -> AsyncIterator[ChunkStore]:
    """An empty chunk collection of this test's own."""
    chunk_store = ChunkStore(weaviate.client, f"Test{uuid.uuid4().hex[:12]}")
    await chunk_store.open(embedder.name, embedder.dim, create=True)
    try:
        yield chunk_store
    finally:
        await chunk_store.drop()


@pytest.fixture(scope="session")
async def demo_store(weaviate: WeaviateHandle, embedder: E5Embedder) -> AsyncIterator[ChunkStore]:
    """The demo corpus, ingested once for the tests that only read it."""
    from retrieval.chunking import ChunkingConfig
    from retrieval.ingest import IngestLimits, ingest, load_paths

    chunk_store = ChunkStore(weaviate.client, "DemoCorpus")
    await chunk_store.open(embedder.name, embedder.dim, create=True)
    report = await ingest(load_paths([DEMO_CORPUS], IngestLimits()), store=chunk_store, embedder=embedder,
                          chunking=ChunkingConfig())
    assert report.failures == [], report.failures
    try:
        yield chunk_store
    finally:
        await chunk_store.drop()


@pytest.fixture
def cli_env(tmp_path: Path, weaviate_config: WeaviateConfig, weaviate: WeaviateHandle) -> Iterator[dict[str, str]]:
    """Environment for running `verbatim` as a subprocess against the session's Weaviate (via WEAVIATE_URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEAVIATE_", "VERBATIM_", "COHERE_", "SLACK_", "DATABASE_"))}
    env.update({
        "VERBATIM_HOME": str(tmp_path / "home"),
        "WEAVIATE_URL": f"http://127.0.0.1:{weaviate_config.port}",
        "WEAVIATE_GRPC_URL": f"http://127.0.0.1:{weaviate_config.grpc_port}",
        # The session's embedded server answers only to its home's key, as any keyed server would.
        "WEAVIATE_API_KEY": weaviate_config.key_path.read_text(encoding="utf-8").strip(),
        "VERBATIM_COLLECTION": f"Cli{uuid.uuid4().hex[:12]}",
        "WEAVIATE_BINARY_DIR": str(weaviate_config.binary_dir),
    })
    yield env
