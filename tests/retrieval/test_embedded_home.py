"""A home owns its embedded Weaviate: real servers, two homes at once, other processes, ``kill -9``.

- a second home on the same ports gets a server of its own on free ports (and says who held them); the
  home's other processes find that server through the home's record;
- the server outlives the process that started it while another process of the home uses it (hand-over),
  a user killed with ``kill -9`` is pruned, and the last user out stops the server;
- an orphan (its starter killed) is adopted once it answers the home's key, never reused otherwise, and a
  data folder never gets a second server;
- a home moved to other ports keeps its documents, also one made by the client's launcher (``Embedded_at_<port>``);
- ``heal()`` restarts a killed embedded server, and a ``WEAVIATE_URL`` client serves again once its server is back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path

import pytest
from weaviate.embedded import EmbeddedOptions, EmbeddedV4

from retrieval.chunks import Chunk
from retrieval.embedded_home import (
    _EMBEDDED_ENV,
    home_api_key,
    read_server_record,
    running_servers,
)
from retrieval.processes import ProcessId
from retrieval.store import ChunkStore, DocumentRecord, IndexedChunk, StoreError
from retrieval.weaviate_config import StoreUnavailable, WeaviateConfig
from retrieval.weaviate_server import WeaviateHandle, connect
from tests.conftest import REPO, free_port

COLLECTION = "Home"


def home(tmp_path: Path, name: str, binary_dir: Path, port: int, grpc_port: int) -> WeaviateConfig:
    return WeaviateConfig(url=None, grpc_url=None, api_key=None, data_dir=tmp_path / name / "weaviate",
                          binary_dir=binary_dir, port=port, grpc_port=grpc_port)


@pytest.fixture(autouse=True)
def no_server_left(tmp_path: Path) -> Iterator[None]:
    """Whatever a test leaves running on its homes (it failed half-way) is killed after it."""
    yield
    for server in running_servers():
        if server.data_path is not None and server.data_path.startswith(str(tmp_path.resolve())):
            os.kill(server.process.pid, signal.SIGKILL)


def server_pid(handle: WeaviateHandle) -> int:
    assert handle._process is not None
    return handle._process.record.pid


def alive(pid: int) -> bool:
    return any(server.process.pid == pid for server in running_servers())


async def store_of(handle: WeaviateHandle) -> ChunkStore:
    store = ChunkStore(handle.client, COLLECTION, query_timeout_s=5)
    await store.open("test-4d", 4, create=True)
    return store


async def put(store: ChunkStore, document_id: str, text: str) -> None:
    chunk = Chunk(chunk_id=str(uuid.uuid5(uuid.NAMESPACE_URL, document_id)), document_id=document_id, version="1",
                  content_hash="h", ordinal=0, title=document_id, section=None, page=None, url=None,
                  updated_at=None, visibility=None, language="en", text=text)
    outcomes = await store.replace_documents([(DocumentRecord(document_id, "h", "1", document_id, 1),
                                               [IndexedChunk(chunk, [1.0, 0.0, 0.0, 0.0])])])
    assert [outcome.error for outcome in outcomes] == [None]


async def found(store: ChunkStore, word: str) -> list[str]:
    hits = await store.search(word, None, language="en", channels=(), limit=5, alpha=0.5, mode="bm25")
    return [hit.chunk.document_id for hit in hits]


def spawn_home_user(config: WeaviateConfig) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.retrieval.home_user", str(config.data_dir), str(config.binary_dir),
         str(config.port), str(config.grpc_port)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@asynccontextmanager
async def other_process(config: WeaviateConfig) -> AsyncIterator[tuple[subprocess.Popen[str], int]]:
    """Another process of ``config``'s home, connected: (the process, the pid of the server it uses)."""
    process = await asyncio.to_thread(spawn_home_user, config)
    try:
        assert process.stdout is not None
        line = await asyncio.to_thread(process.stdout.readline)
        assert line, "the other process failed to connect (see its stderr above)"
        yield process, int(json.loads(line)["pid"])
    finally:
        with process:  # waits, and closes its pipes
            if process.poll() is None:
                process.kill()


def close_process(process: subprocess.Popen[str]) -> int:
    assert process.stdin is not None
    process.stdin.write("close\n")
    process.stdin.flush()
    return process.wait(timeout=120)


def kill_process(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait()


# -- 1. a home owns its server ------------------------------------------------------------------


async def test_a_second_home_on_the_same_ports_gets_a_server_of_its_own(
        tmp_path: Path, weaviate_binary_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    port, grpc_port = free_port(), free_port()
    config_a = home(tmp_path, "a", weaviate_binary_dir, port, grpc_port)
    config_b = home(tmp_path, "b", weaviate_binary_dir, port, grpc_port)
    a = await connect(config_a)
    with caplog.at_level(logging.WARNING, logger="retrieval.embedded_home"):
        b = await connect(config_b)
    try:
        assert server_pid(b) != server_pid(a)
        record_b = read_server_record(config_b)
        assert record_b is not None and record_b.pid == server_pid(b) and record_b.port != port
        assert f"WEAVIATE_EMBEDDED_PORT {port} is held by the Weaviate of {config_a.data_dir}" in caplog.text
        store_a, store_b = await store_of(a), await store_of(b)
        await put(store_a, "a-secret", "alpha payroll")
        await put(store_b, "b-secret", "bravo payroll")
        assert await found(store_a, "payroll") == ["a-secret"]
        assert await found(store_b, "payroll") == ["b-secret"]
        # Another process of home b, configured with the same ports, finds b's server through the record.
        b_again = await connect(config_b)
        try:
            assert server_pid(b_again) == server_pid(b)
            assert await found(await store_of(b_again), "payroll") == ["b-secret"]
        finally:
            await b_again.close()
    finally:
        await b.close()
        await a.close()


async def test_ports_held_by_another_program_move_the_home_to_free_ones(
        tmp_path: Path, weaviate_binary_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with ExitStack() as held:
        ports = []
        for _ in range(2):
            listener = held.enter_context(socket.socket())
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            ports.append(int(listener.getsockname()[1]))
        config = home(tmp_path, "h", weaviate_binary_dir, ports[0], ports[1])
        with caplog.at_level(logging.WARNING, logger="retrieval.embedded_home"):
            handle = await connect(config)
        try:
            assert f"WEAVIATE_EMBEDDED_PORT {ports[0]} is held by another program" in caplog.text
            assert handle._process is not None and handle._process.record.port not in ports
            store = await store_of(handle)
            await put(store, "doc", "charlie refunds")
            assert await found(store, "refunds") == ["doc"]
        finally:
            await handle.close()


# -- 2. hand-over -------------------------------------------------------------------------------


async def test_the_server_outlives_its_starter_while_another_process_uses_it(
        tmp_path: Path, weaviate_binary_dir: Path) -> None:
    config = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    async with other_process(config) as (starter, started_pid):
        handle = await connect(config)
        try:
            assert server_pid(handle) == started_pid
            store = await store_of(handle)
            await put(store, "doc", "delta invoices")
            assert close_process(starter) == 0
            assert alive(started_pid)
            assert await found(store, "invoices") == ["doc"]
        finally:
            await handle.close()
    assert not alive(started_pid)  # the last user out stopped it
    assert read_server_record(config) is None


async def test_a_user_killed_with_kill_9_is_pruned_and_the_last_user_stops_the_server(
        tmp_path: Path, weaviate_binary_dir: Path) -> None:
    config = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    async with other_process(config) as (starter, started_pid):
        handle = await connect(config)
        try:
            kill_process(starter)
            store = await store_of(handle)
            await put(store, "doc", "echo receipts")
            assert await found(store, "receipts") == ["doc"]
        finally:
            await handle.close()
    assert not alive(started_pid)
    assert list(config.users_path.iterdir()) == []


# -- 3. orphans, and one server per data folder --------------------------------------------------


async def test_an_orphan_of_the_home_is_adopted_once_it_answers_the_homes_key(
        tmp_path: Path, weaviate_binary_dir: Path) -> None:
    config = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    async with other_process(config) as (starter, orphan_pid):
        kill_process(starter)
    assert alive(orphan_pid)
    handle = await connect(config)
    try:
        assert server_pid(handle) == orphan_pid
        store = await store_of(handle)
        await put(store, "doc", "foxtrot budget")
        assert await found(store, "budget") == ["doc"]
    finally:
        await handle.close()
    assert not alive(orphan_pid)


async def test_a_server_that_refuses_the_homes_key_is_never_reused(tmp_path: Path, weaviate_binary_dir: Path) -> None:
    config = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    async with other_process(config) as (starter, orphan_pid):
        kill_process(starter)
    config.key_path.unlink()  # the home's key changed: the orphan no longer proves it serves this home
    with pytest.raises(StoreUnavailable, match=rf"\(pid {orphan_pid}\) refuses this home's key.*kill {orphan_pid}"):
        await connect(config)
    assert alive(orphan_pid)


def start_like_the_client_launcher(config: WeaviateConfig, key: str) -> EmbeddedV4:
    """A server on ``config``'s data folder started the way Verbatim did before homes owned their servers
    (the client's launcher: node ``Embedded_at_<port>``, no record in the home)."""
    options = EmbeddedOptions(persistence_data_path=str(config.data_dir), binary_path=str(config.binary_dir),
                              version=config.version, port=config.port, hostname="127.0.0.1",
                              grpc_port=config.grpc_port,
                              additional_env_vars=_EMBEDDED_ENV | {"AUTHENTICATION_APIKEY_ALLOWED_KEYS": key,
                                                                   "CLUSTER_BASIC_AUTH_USERNAME": "verbatim",
                                                                   "CLUSTER_BASIC_AUTH_PASSWORD": key})
    server = EmbeddedV4(options)
    server.start()  # returns once the HTTP port listens
    return server


async def test_a_data_folder_served_by_a_foreign_server_gets_no_second_one(
        tmp_path: Path, weaviate_binary_dir: Path) -> None:
    foreign = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    server = await asyncio.to_thread(start_like_the_client_launcher, foreign, "not-this-homes-key")
    assert server.process is not None
    pid = server.process.pid
    try:
        ours = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
        with pytest.raises(StoreUnavailable, match=rf"\(pid {pid}\) refuses this home's key"):
            await connect(ours)
        assert [s.process.pid for s in running_servers() if s.data_path == str(ours.data_dir.resolve())] == [pid]
    finally:
        server.stop()


# -- 4. other ports -----------------------------------------------------------------------------


async def test_a_home_started_on_other_ports_keeps_its_documents(tmp_path: Path, weaviate_binary_dir: Path) -> None:
    first = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    handle = await connect(first)
    try:
        await put(await store_of(handle), "doc", "golf contracts")
    finally:
        await handle.close()
    moved = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    handle = await connect(moved)
    try:
        assert handle._process is not None and handle._process.record.port == moved.port
        assert await found(await store_of(handle), "contracts") == ["doc"]
    finally:
        await handle.close()


async def test_a_home_made_by_the_client_launcher_is_adopted_and_moves_ports_under_its_old_node_name(
        tmp_path: Path, weaviate_binary_dir: Path) -> None:
    old = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    server = await asyncio.to_thread(start_like_the_client_launcher, old, home_api_key(old.key_path))
    assert server.process is not None
    pid = server.process.pid
    try:
        handle = await connect(old)  # adopted: it runs on the home's data folder and answers the home's key
        try:
            assert server_pid(handle) == pid
            await put(await store_of(handle), "doc", "hotel leases")
        finally:
            await handle.close()  # the last user stops it, adopted or not
        assert not alive(pid)
    finally:
        server.stop()
    moved = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    handle = await connect(moved)
    try:
        assert moved.node_path.read_text(encoding="utf-8").strip() == f"Embedded_at_{old.port}"
        assert await found(await store_of(handle), "leases") == ["doc"]
    finally:
        await handle.close()


# -- 5. healing ---------------------------------------------------------------------------------


async def test_heal_restarts_a_killed_embedded_server(tmp_path: Path, weaviate_binary_dir: Path) -> None:
    config = home(tmp_path, "h", weaviate_binary_dir, free_port(), free_port())
    handle = await connect(config)
    try:
        store = await store_of(handle)
        await put(store, "doc", "india payroll")
        assert await handle.heal() is False
        assert handle._process is not None and handle._process.process is not None
        killed = handle._process.process
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        with pytest.raises(StoreError):
            await found(store, "payroll")
        began = time.monotonic()
        assert await handle.heal() is True
        assert await found(store, "payroll") == ["doc"]  # the same store and client object
        print(f"embedded: search back {time.monotonic() - began:.1f} s after heal() began")
        assert server_pid(handle) != killed.pid
        assert await handle.heal() is False
    finally:
        await handle.close()


async def test_a_url_client_serves_again_once_its_server_is_back(tmp_path: Path, weaviate_binary_dir: Path) -> None:
    served = home(tmp_path, "served", weaviate_binary_dir, free_port(), free_port())
    server = await connect(served)
    remote = WeaviateConfig(url=f"http://127.0.0.1:{served.port}", grpc_url=f"http://127.0.0.1:{served.grpc_port}",
                            api_key=home_api_key(served.key_path), data_dir=tmp_path / "remote" / "weaviate",
                            binary_dir=weaviate_binary_dir, port=free_port(), grpc_port=free_port())
    client = await connect(remote)
    try:
        store = await store_of(client)
        await put(store, "doc", "juliet pensions")
        assert await client.heal() is False
        assert server._process is not None and server._process.process is not None
        os.kill(server._process.process.pid, signal.SIGKILL)
        server._process.process.wait()
        with pytest.raises(StoreUnavailable, match="does not answer"):
            await client.heal()
        assert await server.heal() is True  # the server comes back (on the same ports)
        began = time.monotonic()
        answers: list[str] = []
        while not answers and time.monotonic() - began < 60:
            try:
                await client.heal()
                answers = await found(store, "pensions")
            except (StoreUnavailable, StoreError):
                await asyncio.sleep(0.5)
        assert answers == ["doc"], "the URL client did not serve again within a minute of its server's return"
        print(f"remote: search back {time.monotonic() - began:.1f} s after the server was ready")
    finally:
        await client.close()
        await server.close()


def test_a_process_id_names_one_process() -> None:
    me = ProcessId.current()
    assert me.alive()
    assert not ProcessId(me.pid, me.start_time + 1).alive()
