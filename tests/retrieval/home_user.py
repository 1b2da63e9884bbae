"""Another process of a home, for the tests: connects to the home's Weaviate Embedded, prints the server it uses as
one JSON line, then closes when a line arrives on stdin (or is killed before).

    python -m tests.retrieval.home_user DATA_DIR BINARY_DIR PORT GRPC_PORT
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_server import connect


async def main(data_dir: str, binary_dir: str, port: str, grpc_port: str) -> None:
    config = WeaviateConfig(url=None, grpc_url=None, api_key=None, data_dir=Path(data_dir),
                            binary_dir=Path(binary_dir), port=int(port), grpc_port=int(grpc_port))
    handle = await connect(config)
    assert handle._process is not None
    record = handle._process.record
    print(json.dumps({"pid": record.pid, "port": record.port, "grpc_port": record.grpc_port}), flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    await handle.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
