"""Two homes starting at the same moment on the same ports each get a Weaviate Embedded of their own (#23).

Both see the configured ports free, both spawn a server there, one server binds them; the other home's start
then meets a server that refuses its key. Whoever loses that race moves to free ports instead of failing with
"refuses this home's key … stop it and retry".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from retrieval.embedded_home import read_server_record, running_servers
from retrieval.weaviate_config import WeaviateConfig
from tests.conftest import DEMO_CORPUS, free_port


def test_two_homes_started_at_once_on_the_same_ports_both_ingest(cli_env: dict[str, str], tmp_path: Path) -> None:
    port, grpc_port = free_port(), free_port()
    base = {k: v for k, v in cli_env.items() if k not in ("WEAVIATE_URL", "WEAVIATE_GRPC_URL", "WEAVIATE_API_KEY")}
    homes = [tmp_path / "home-a", tmp_path / "home-b"]
    processes = [
        subprocess.Popen([sys.executable, "-m", "bot", "ingest", str(DEMO_CORPUS / "billing"), "--json",
                          "--workers", "1"],
                         env=base | {"VERBATIM_HOME": str(home), "WEAVIATE_EMBEDDED_PORT": str(port),
                                     "WEAVIATE_EMBEDDED_GRPC_PORT": str(grpc_port)},
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for home in homes
    ]
    try:
        done = [process.communicate(timeout=300) for process in processes]
        records = []
        for home in homes:
            config = WeaviateConfig(url=None, grpc_url=None, api_key=None, data_dir=home / "weaviate",
                                    binary_dir=Path(cli_env["WEAVIATE_BINARY_DIR"]), port=port, grpc_port=grpc_port)
            records.append(read_server_record(config))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()

    for process, (out, err) in zip(processes, done):
        assert process.returncode == 0, err[-2000:]
        assert json.loads(out)["summary"]["ingested"] == 1
    assert records == [None, None]  # each was the last user of its server, and stopped it
    # One of them moved, and said so in one line (who held the ports, or that they were taken while it started).
    moved = [err for _, err in done if "instead" in err]
    assert len(moved) == 1, [err[-1000:] for _, err in done]
    assert not [s for s in running_servers() if s.data_path and s.data_path.startswith(str(tmp_path.resolve()))]
