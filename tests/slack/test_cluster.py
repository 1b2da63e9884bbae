"""The bot on a real 3-node Weaviate cluster (replication factor 3, QUORUM), with two bot replicas sharing one
exchange log behind one Request URL: every question answered once, a node lost mid-traffic costs no error
reply and no exchange, and when it comes back it serves the document version written while it was down. The node
lost is the Raft leader: the others must elect a new one, and a write meanwhile retries until they have."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from bot.answer.service import AnswerDeps
from retrieval.chunking import ChunkingConfig
from retrieval.documents import Block, BlockKind, Document
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits, ingest, load_paths
from retrieval.store import ChunkStore, Replication, StoreError
from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_install import embedded_binary_path
from retrieval.weaviate_server import WeaviateHandle, connect
from storage.exchanges import list_exchanges
from storage.migrate import upgrade
from tests.cluster import Cluster, Node
from tests.conftest import DEMO_CORPUS
from tests.slack.conftest import open_database
from tests.slack.harness import ANSWER, QUESTION, started_bot
from tests.standins import SlackStandIn

COLLECTION = "ClusterDemo"
CHANNELS = ("C0SUPPORT", "C0BILLING", "C0ONBOARD")


@pytest.fixture(scope="module")
async def cluster(tmp_path_factory: pytest.TempPathFactory, weaviate_binary_dir: Path) -> AsyncIterator[Cluster]:
    nodes = Cluster(tmp_path_factory.mktemp("cluster"), embedded_binary_path(weaviate_binary_dir))
    for node in nodes.nodes:
        nodes.start(node)
    try:
        await nodes.until_ready()
        yield nodes
    finally:
        nodes.stop()


async def connected(cluster: Cluster, node: Node, tmp_path: Path) -> WeaviateHandle:
    return await connect(WeaviateConfig(url=node.url, grpc_url=node.grpc_url, api_key=cluster.key,
                                        data_dir=tmp_path / node.name, binary_dir=tmp_path, port=0, grpc_port=0))


def store_on(handle: WeaviateHandle, consistency: str = "QUORUM") -> ChunkStore:
    return ChunkStore(handle.client, COLLECTION, query_timeout_s=10,
                      replication=Replication(3, consistency))  # type: ignore[arg-type]


async def test_two_replicas_on_a_cluster_answer_through_a_lost_node_and_it_catches_up(
        cluster: Cluster, embedder: E5Embedder, answer_deps: AnswerDeps, slack: SlackStandIn,
        tmp_path: Path) -> None:
    lost = await cluster.leader()
    handles = [await connected(cluster, node, tmp_path) for node in cluster.nodes if node is not lost]
    try:
        stores = [store_on(handle) for handle in handles]
        await stores[0].open(embedder.name, embedder.dim, create=True)
        await stores[1].open(embedder.name, embedder.dim, create=False)
        report = await ingest(load_paths([DEMO_CORPUS], IngestLimits()), store=stores[0], embedder=embedder,
                              chunking=ChunkingConfig())
        assert report.failures == []
        await ingest_documents(stores[0], embedder, [lockout("30 minutes", "2026-11")])  # every node holds it
        shards = await handles[0].client.collections.use(COLLECTION).config.get()
        assert shards.replication_config.factor == 3

        # Two bot replicas behind one Request URL, each on its own node, sharing one exchange log.
        url = f"sqlite+aiosqlite:///{tmp_path / 'shared.sqlite3'}"
        await upgrade(url)
        log = await open_database(url, tmp_path / "a.jsonl")
        other_log = await open_database(log.url, tmp_path / "b.jsonl")
        try:
            async with started_bot(slack, dataclasses.replace(answer_deps, store=stores[0]), log) as bot_a, \
                    started_bot(slack, dataclasses.replace(answer_deps, store=stores[1]), other_log) as bot_b:
                asked = []
                for round_ in range(6):
                    if round_ == 2:
                        cluster.kill(lost)  # a node lost mid-traffic, and at once a new version written while
                        # the other two elect a new leader (QUORUM: 2 of 3 take it)
                        await ingest_documents(stores[0], embedder, [lockout("45 minutes", "2026-12")])
                    for index, channel in enumerate(CHANNELS):
                        bot = (bot_a, bot_b)[(round_ + index) % 2]
                        envelope = slack.envelope(slack.app_mention(channel, QUESTION))
                        # Slack delivers to one replica and, as a retry, to the other: answered once.
                        await asyncio.gather(slack.deliver_event(bot.events_url, envelope),
                                             slack.deliver_event((bot_b if bot is bot_a else bot_a).events_url,
                                                                 envelope, retry_num=1))
                        asked.append((channel, envelope["event"]["ts"]))
                replies = [await bot_a.reply(channel, ts) for channel, ts in asked]
                await bot_a.settle()
                await bot_b.settle()
            async with log.sessions() as session:
                exchanges = await list_exchanges(session, limit=100)
        finally:
            await log.engine.dispose()
            await other_log.engine.dispose()

        assert all(ANSWER in str(reply["blocks"]) for reply in replies), "an answer from every node set"
        assert all(len(slack.thread(channel, ts)) == 2 for channel, ts in asked), "each question answered once"
        assert sorted(e.outcome for e in exchanges) == ["answered"] * len(asked)

        # The lost node comes back and catches up on the version written while it was down.
        cluster.start(lost)
        await cluster.until_ready(lost)
        on_returned = await connected(cluster, lost, tmp_path)
        try:
            local = store_on(on_returned, consistency="ONE")  # what the returning node itself holds
            await local.open(embedder.name, embedder.dim, create=False)
            texts = await until_served(local, embedder, "45 minutes", not_="30 minutes")
        finally:
            await on_returned.close()
        assert any("45 minutes" in text for text in texts) and not any("30 minutes" in text for text in texts)
    finally:
        for handle in handles:
            await handle.close()


def lockout(duration: str, version: str) -> Document:
    return Document(document_id="accounts-lockout-policy", title="Lockout policy", source="inline", version=version,
                    language="en", blocks=(Block(BlockKind.PARAGRAPH,
                                                 f"After 5 failed sign-in attempts the account is locked for {duration}."),))


async def ingest_documents(store: ChunkStore, embedder: E5Embedder, documents: list[Document]) -> None:
    report = await ingest(documents, store=store, embedder=embedder, chunking=ChunkingConfig())
    assert report.failures == [], report.failures


async def until_served(store: ChunkStore, embedder: E5Embedder, words: str, *, not_: str,
                       timeout: float = 120.0) -> list[str]:
    """The lockout policy's chunk texts as the node serves them, once they hold ``words`` and not ``not_``
    (the returning node catches up by Weaviate's async replication)."""
    vector = np.asarray(await embedder.embed_query("How long is the account locked?"), dtype=np.float32)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    texts: list[str] = []
    while loop.time() < deadline:
        try:
            hits = await store.search("account locked minutes", vector, language="en", channels=(), limit=20,
                                      alpha=0.5)
        except StoreError:  # the returning node is still catching up on the schema
            hits = []
        texts = [h.chunk.text for h in hits if h.chunk.document_id == "accounts-lockout-policy"]
        if any(words in text for text in texts) and not any(not_ in text for text in texts):
            return texts
        await asyncio.sleep(1.0)
    return texts
