"""A real 3-node Weaviate cluster on loopback, from the same server binary as Weaviate Embedded.

Each node is its own process with its own data folder and ports (HTTP, gRPC, gossip + data, Raft + Raft RPC),
joined with CLUSTER_JOIN (gossip), RAFT_JOIN and RAFT_BOOTSTRAP_EXPECT=3, as Weaviate's own local multi-node
set-up does, behind one API key. ``kill``/``start`` one node to test what happens while it is down and after it
comes back. Used by the cluster tests and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.embedded_home import free_ports
from tests.conftest import free_port

NODES = 3


@dataclass
class Node:
    name: str
    data: Path
    http: int
    grpc: int
    gossip: int
    raft: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http}"

    @property
    def grpc_url(self) -> str:
        return f"http://127.0.0.1:{self.grpc}"


@dataclass
class Cluster:
    folder: Path
    binary: Path
    key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        for index in range(NODES):
            self.nodes.append(Node(f"node{index + 1}", self.folder / f"node{index + 1}", free_port(), free_port(),
                                   free_ports(2, consecutive=True)[0], free_ports(2, consecutive=True)[0]))

    def _environment(self, node: Node) -> dict[str, str]:
        first = self.nodes[0]
        return os.environ | {
            "PERSISTENCE_DATA_PATH": str(node.data),
            "DISABLE_TELEMETRY": "true",
            "LOG_LEVEL": "warning",
            "ENABLE_MODULES": "",
            "ENABLE_TOKENIZER_KAGOME_JA": "true",
            "QUERY_DEFAULTS_LIMIT": "20",
            "GRPC_PORT": str(node.grpc),
            "CLUSTER_HOSTNAME": node.name,
            "CLUSTER_IN_LOCALHOST": "true",
            "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
            "CLUSTER_BIND_ADDR": "127.0.0.1",
            "CLUSTER_GOSSIP_BIND_PORT": str(node.gossip),
            "CLUSTER_DATA_BIND_PORT": str(node.gossip + 1),
            "CLUSTER_JOIN": f"127.0.0.1:{first.gossip}",
            "RAFT_PORT": str(node.raft),
            "RAFT_INTERNAL_RPC_PORT": str(node.raft + 1),
            "RAFT_JOIN": ",".join(f"{n.name}:{n.raft}" for n in self.nodes),
            "RAFT_BOOTSTRAP_EXPECT": str(NODES),
            "RAFT_TIMEOUTS_MULTIPLIER": "1",
            "GO_PROFILING_DISABLE": "true",
            "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "false",
            "AUTHENTICATION_APIKEY_ENABLED": "true",
            "AUTHENTICATION_APIKEY_USERS": "verbatim",
            "AUTHENTICATION_APIKEY_ALLOWED_KEYS": self.key,
            "CLUSTER_BASIC_AUTH_USERNAME": "verbatim",
            "CLUSTER_BASIC_AUTH_PASSWORD": self.key,
        }

    def start(self, node: Node) -> None:
        node.data.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / f"{node.name}.log", "ab")  # noqa: SIM115 - the child holds it
        node.process = subprocess.Popen(
            [str(self.binary), "--host", "127.0.0.1", "--port", str(node.http), "--scheme", "http",
             "--read-timeout=600s", "--write-timeout=600s"],
            env=self._environment(node), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()

    def kill(self, node: Node) -> None:
        """SIGKILL: a node lost, no goodbye to the others."""
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(signal.SIGKILL)
            node.process.wait()
        node.process = None

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(30)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    node.process.wait()
                node.process = None

    async def until_ready(self, *nodes: Node, timeout: float = 120.0) -> None:
        """Wait until each node answers ready and sees the whole cluster healthy."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        pending = list(nodes or self.nodes)
        while pending and loop.time() < deadline:
            pending = [n for n in pending if not await asyncio.to_thread(self._healthy, n)]
            if pending:
                await asyncio.sleep(0.5)
        if pending:
            raise AssertionError(f"Weaviate nodes {[n.name for n in pending]} not ready within {timeout:.0f} s; "
                                 f"see {self.folder}/*.log")

    async def leader(self, timeout: float = 60.0) -> Node:
        """The node that leads the schema's Raft group (the hardest one to lose), once the nodes have elected one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            named = await asyncio.to_thread(self._leader_names)
            leader = next((n for n in self.nodes if n.name in named), None)
            if leader is not None:
                return leader
            await asyncio.sleep(0.5)
        raise AssertionError(f"no Raft leader elected within {timeout:.0f} s; see {self.folder}/*.log")

    def _leader_names(self) -> set[str]:
        first = next(n for n in self.nodes if n.process is not None)
        statistics = self._get(first, "/v1/cluster/statistics", "statistics")
        return {str(s.get("leaderId")) for s in statistics or () if s.get("leaderId")}

    def _healthy(self, node: Node) -> bool:
        if node.process is None or node.process.poll() is not None:
            raise AssertionError(f"{node.name} is not running; see {self.folder / (node.name + '.log')}")
        nodes = self._get(node, "/v1/nodes", "nodes", timeout=2)
        return nodes is not None and len(nodes) == NODES and all(n.get("status") == "HEALTHY" for n in nodes)

    def _get(self, node: Node, path: str, key: str, timeout: float = 5) -> list[dict[str, object]] | None:
        """``key`` of the JSON a node answers on ``path`` (an empty list when absent), None when it does not answer."""
        request = urllib.request.Request(f"{node.url}{path}", headers={"Authorization": f"Bearer {self.key}"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read()).get(key) or []
        except (urllib.error.URLError, OSError, ValueError):
            return None
