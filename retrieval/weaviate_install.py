"""The Weaviate server binary: the pinned version, where Weaviate Embedded looks for it, and building it.

Weaviate Embedded is the real Weaviate server binary, run as a child process (``retrieval.embedded_home``).
The client downloads that binary from GitHub when it is missing; machines without internet cannot, so
``install_server`` builds the same server from its Go module and puts it exactly where the client looks
for this version (``<binary_dir>/weaviate-v<version>-<sha256>``).

The pinned version lives here and nowhere else. v1.40.x (the client's own default) is not served by
the Go module proxy here, and v1.39.4 … v1.39.7 need a ``sroar`` release the proxy does not serve, so
the pin is the newest 1.39 patch that builds from the proxy alone.

Error: ``ServerInstallError`` (cannot build the binary), one line that names the cause and what to do.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from retrieval.errors import RetrievalError

WEAVIATE_VERSION = "1.39.3"
WEAVIATE_GO_PACKAGE = "github.com/weaviate/weaviate/cmd/weaviate-server"


class ServerInstallError(RetrievalError):
    """The Weaviate server binary cannot be built. The message is one line: the cause and what to do."""


def embedded_binary_path(binary_dir: Path, version: str = WEAVIATE_VERSION) -> Path:
    """Where ``weaviate.embedded`` looks for the binary of ``version`` (it names it by the tag's sha256)."""
    tag = f"v{version}"
    return binary_dir / f"weaviate-{tag}-{hashlib.sha256(tag.encode('utf-8')).hexdigest()}"


# -- installing the binary ---------------------------------------------------------------------

def install_server(binary_dir: Path, version: str = WEAVIATE_VERSION, *, go: str = "go") -> tuple[Path, bool]:
    """Build the Weaviate server with Go unless it is already there. Returns (path, built_now).

    The build goes to a temporary folder next to the target and is renamed into place, so an
    interrupted build never leaves a half-written binary where the client would run it.
    """
    target = embedded_binary_path(binary_dir, version)
    if target.exists():
        return target, False
    go_path = shutil.which(go)
    if go_path is None:
        raise ServerInstallError(
            f"the Weaviate {version} binary is missing and the Go toolchain ('{go}') was not found: "
            "install Go, or set WEAVIATE_URL to use a Weaviate server "
            "(on a machine with internet access the client downloads the binary itself)"
        )
    binary_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=binary_dir, prefix=".build-") as gobin:
        env = {**os.environ, "GOBIN": gobin, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
        command = [go_path, "install", f"{WEAVIATE_GO_PACKAGE}@v{version}"]
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        built = Path(gobin) / "weaviate-server"
        if result.returncode != 0 or not built.exists():
            last = _last_line(result.stderr) or f"exit code {result.returncode}"
            raise ServerInstallError(
                f"building Weaviate {version} failed ({' '.join(command[1:])}): {last}; "
                "check that the Go module proxy is reachable (GOPROXY), or set WEAVIATE_URL to use a server"
            )
        built.chmod(0o755)
        os.replace(built, target)
    return target, True


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
