"""The embedded Weaviate serves its own home only: REST and gRPC refuse a request without the home's key, the key
file is private, and nothing of the server listens on a non-loopback address without that key."""

from __future__ import annotations

import os
import stat
import urllib.error
import urllib.request
from pathlib import Path

import grpc
from weaviate.proto.v1 import search_get_pb2, weaviate_pb2_grpc

from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_server import WeaviateHandle


def rest_status(config: WeaviateConfig, key: str | None) -> int:
    return status_of(f"http://127.0.0.1:{config.port}/v1/schema", f"Bearer {key}" if key is not None else None)


def status_of(url: str, authorization: str | None) -> int:
    request = urllib.request.Request(url)
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket the process listens on, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].split(":")
                found.append((_address(address, width), int(port, 16)))
    return found


def _address(hex_address: str, width: int) -> str:
    if width == 8:
        return ".".join(str(int(hex_address[i : i + 2], 16)) for i in (6, 4, 2, 0))
    return "::1" if hex_address == "0" * 24 + "01000000" else ("::" if set(hex_address) == {"0"} else hex_address)


def test_rest_refuses_a_request_without_the_homes_key(weaviate: WeaviateHandle, weaviate_config: WeaviateConfig) -> None:
    key = weaviate_config.key_path.read_text(encoding="utf-8").strip()
    assert rest_status(weaviate_config, None) == 401
    assert rest_status(weaviate_config, "not-the-key") == 401
    assert rest_status(weaviate_config, key) == 200


def grpc_refusal(config: WeaviateConfig, key: str | None) -> str:
    """What the gRPC server says to a search sent with this key: its error details, "" when it answered."""
    metadata = (("authorization", f"Bearer {key}"),) if key else ()
    with grpc.insecure_channel(f"127.0.0.1:{config.grpc_port}") as channel:
        stub = weaviate_pb2_grpc.WeaviateStub(channel)
        try:
            stub.Search(search_get_pb2.SearchRequest(collection="Anything", limit=1), metadata=metadata, timeout=10)
        except grpc.RpcError as error:
            return str(error.details())  # type: ignore[attr-defined]
    return ""


def test_grpc_refuses_a_query_without_the_homes_key(weaviate: WeaviateHandle, weaviate_config: WeaviateConfig) -> None:
    key = weaviate_config.key_path.read_text(encoding="utf-8").strip()
    assert "unauthorized" in grpc_refusal(weaviate_config, None)
    assert "unauthorized" in grpc_refusal(weaviate_config, "not-the-key")
    assert "unauthorized" not in grpc_refusal(weaviate_config, key)  # past the gate (the collection may not exist)


def test_the_key_file_is_private_to_its_owner(weaviate: WeaviateHandle, weaviate_config: WeaviateConfig) -> None:
    mode = stat.S_IMODE(weaviate_config.key_path.stat().st_mode)
    assert mode == 0o600


def test_nothing_listens_beyond_loopback_without_the_key(weaviate: WeaviateHandle,
                                                         weaviate_config: WeaviateConfig) -> None:
    assert weaviate._process is not None and weaviate._process.process is not None
    pid = weaviate._process.process.pid
    sockets = listening(pid)
    assert sockets, "the server listens on nothing?"
    environment = dict(item.split("=", 1) for item in
                       Path(f"/proc/{pid}/environ").read_text(encoding="utf-8", errors="replace").split("\0") if "=" in item)
    data_port = int(environment["CLUSTER_DATA_BIND_PORT"])
    exposed = {port for address, port in sockets if address not in ("127.0.0.1", "::1")}
    # gRPC and the cluster data port cannot be bound in Weaviate 1.39: they may listen widely, only behind the key.
    assert exposed <= {weaviate_config.grpc_port, data_port}, sockets
    object_url = f"http://127.0.0.1:{data_port}/indices/Any/shards/any/objects/00000000-0000-0000-0000-000000000000"
    assert status_of(object_url, None) == 401
    assert status_of(object_url, "Basic dmVyYmF0aW06bm90LXRoZS1rZXk=") == 401  # verbatim:not-the-key
