"""Getting a Weaviate to talk to: a server at ``WEAVIATE_URL``, or Weaviate Embedded under ``VERBATIM_HOME``.

Weaviate Embedded is the real Weaviate server binary, started as a child process by the Python
client's ``EmbeddedV4``. The client downloads that binary from GitHub when it is missing; machines
without internet cannot, so ``install_server`` builds the same server from its Go module and puts it
exactly where the client looks for this version (``<binary_dir>/weaviate-v<version>-<sha256>``).

The pinned version lives here and nowhere else. v1.40.x (the client's own default) is not served by
the Go module proxy here, and v1.39.4 … v1.39.7 need a ``sroar`` release the proxy does not serve, so
the pin is the newest 1.39 patch that builds from the proxy alone.

The embedded server answers only to its home: a random key made once per home (``<home>/weaviate.key``,
mode 0600, never logged) is required on REST, gRPC and the cluster data port, and what can be bound to
loopback is (see ``_EMBEDDED_ENV``).

Errors: ``StoreUnavailable`` (cannot start or reach the server) and ``ServerInstallError`` (cannot
build the binary). Both carry one line that names the cause and what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import weaviate
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.client import WeaviateAsyncClient
from weaviate.embedded import EmbeddedOptions, EmbeddedV4
from weaviate.exceptions import WeaviateBaseError

from retrieval.errors import RetrievalError, first_line

WEAVIATE_VERSION = "1.39.3"
WEAVIATE_GO_PACKAGE = "github.com/weaviate/weaviate/cmd/weaviate-server"

# What the embedded server needs to run quietly and offline: no telemetry calls, a loopback Raft
# address (the container hostname may resolve to an unreachable IPv6 address), and the Japanese
# tokenizer that the chunk schema uses.
_EMBEDDED_ENV = {
    "DISABLE_TELEMETRY": "true",
    "LOG_LEVEL": "warning",
    "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
    "ENABLE_TOKENIZER_KAGOME_JA": "true",
    "ENABLE_MODULES": "",
    # One node, no network between peers: the production multiplier (5) only delays the first election.
    "RAFT_TIMEOUTS_MULTIPLIER": "1",
    # Closed to everyone but this home: the home's key is required on REST and gRPC, and (as basic auth) on
    # the cluster data port; gRPC and the data port cannot be bound to loopback in 1.39, so the key is what
    # keeps them shut. Gossip and Raft listen on loopback only, and the Go profiling server is off.
    "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "false",
    "AUTHENTICATION_APIKEY_ENABLED": "true",
    "AUTHENTICATION_APIKEY_USERS": "verbatim",
    "CLUSTER_BIND_ADDR": "127.0.0.1",
    "GO_PROFILING_DISABLE": "true",
}
API_KEY_FILE = "weaviate.key"


class StoreUnavailable(RetrievalError):
    """Weaviate cannot be started or reached. The message is one line: the cause and what to do."""


class ServerInstallError(RetrievalError):
    """The Weaviate server binary cannot be built. The message is one line: the cause and what to do."""


@dataclass(frozen=True, slots=True)
class WeaviateConfig:
    url: str | None
    grpc_url: str | None
    api_key: str | None
    data_dir: Path
    binary_dir: Path
    port: int
    grpc_port: int
    version: str = WEAVIATE_VERSION
    startup_timeout_s: float = 60.0

    @property
    def embedded(self) -> bool:
        return self.url is None

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "weaviate.log"

    @property
    def key_path(self) -> Path:
        """The embedded server's API key, one per home (beside its data folder)."""
        return self.data_dir.parent / API_KEY_FILE


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


# -- running / reaching it ---------------------------------------------------------------------


@contextlib.contextmanager
def _child_output_to(path: Path) -> Iterator[None]:
    """Point this process's stdout/stderr at ``path`` while a child is spawned.

    The embedded server inherits our file descriptors and logs JSON to them; sending that to a log
    file keeps ``--json`` output clean. Only the spawn is wrapped, so the window is milliseconds.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as log:
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


class _EmbeddedProcess(EmbeddedV4):
    """``EmbeddedV4`` whose start returns right after the spawn; we wait for readiness asynchronously."""

    def __init__(self, options: EmbeddedOptions, log_path: Path) -> None:
        super().__init__(options)
        self._log_path = log_path

    def wait_till_listening(self) -> None:  # the client's version blocks for up to 30 s
        return None

    def start(self) -> None:
        with _child_output_to(self._log_path):
            super().start()

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()


@dataclass
class WeaviateHandle:
    """A connected async client, and the embedded server process when we started one."""

    client: WeaviateAsyncClient
    description: str  # for messages: "Weaviate Embedded 1.39.3 on 127.0.0.1:8079" / "Weaviate at https://…"
    _process: _EmbeddedProcess | None = None

    async def close(self) -> None:
        await self.client.close()
        if self._process is not None:
            await asyncio.to_thread(self._process.stop)
            self._process = None


async def connect(config: WeaviateConfig) -> WeaviateHandle:
    """Connect to ``config.url``, or start (or reuse) Weaviate Embedded. Raises ``StoreUnavailable``."""
    if config.url is not None:
        return await _connect_remote(config)
    return await _connect_embedded(config)


async def _connect_remote(config: WeaviateConfig) -> WeaviateHandle:
    assert config.url is not None
    http = urlsplit(config.url if "://" in config.url else f"http://{config.url}")
    if not http.hostname:
        raise StoreUnavailable(f"WEAVIATE_URL={config.url!r} is not a URL: set it like http://localhost:8080")
    secure = http.scheme == "https"
    grpc = urlsplit(config.grpc_url) if config.grpc_url else None
    client = weaviate.use_async_with_custom(
        http_host=http.hostname,
        http_port=http.port or (443 if secure else 80),
        http_secure=secure,
        grpc_host=(grpc.hostname if grpc and grpc.hostname else http.hostname),
        grpc_port=(grpc.port if grpc and grpc.port else 50051),
        grpc_secure=(grpc.scheme == "https") if grpc else secure,
        auth_credentials=Auth.api_key(config.api_key) if config.api_key else None,
        additional_config=AdditionalConfig(timeout=Timeout(init=10, query=30, insert=120)),
    )
    where = f"Weaviate at {http.scheme}://{http.hostname}{':' + str(http.port) if http.port else ''}"
    try:
        await client.connect()
    except WeaviateBaseError as error:
        await client.close()
        raise StoreUnavailable(
            f"cannot reach {where} ({first_line(error)}): check WEAVIATE_URL, WEAVIATE_GRPC_URL and "
            "WEAVIATE_API_KEY, and that the server is running"
        ) from error
    return WeaviateHandle(client=client, description=where)


def home_api_key(path: Path) -> str:
    """The home's key for its embedded server: made at random the first time, kept in a 0600 file, never logged."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    key = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process of this home made it first
        return path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise StoreUnavailable(f"cannot write the Weaviate key file {path} ({error.strerror}): check the folder "
                               "VERBATIM_HOME points to") from error
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    return key


async def _connect_embedded(config: WeaviateConfig) -> WeaviateHandle:
    key = home_api_key(config.key_path)
    options = EmbeddedOptions(
        persistence_data_path=str(config.data_dir),
        binary_path=str(config.binary_dir),
        version=config.version,
        port=config.port,
        hostname="127.0.0.1",
        grpc_port=config.grpc_port,
        # The key also guards the cluster data port, which 1.39 binds on every interface.
        additional_env_vars=_EMBEDDED_ENV | {"AUTHENTICATION_APIKEY_ALLOWED_KEYS": key,
                                             "CLUSTER_BASIC_AUTH_USERNAME": "verbatim",
                                             "CLUSTER_BASIC_AUTH_PASSWORD": key},
    )
    where = f"Weaviate Embedded {config.version} on 127.0.0.1:{config.port}"
    process = _EmbeddedProcess(options, config.log_path)
    started: _EmbeddedProcess | None = None
    if not process.is_listening():
        try:
            await asyncio.to_thread(process.start)
        except (urllib.error.URLError, OSError) as error:
            raise StoreUnavailable(
                f"cannot start {where}: the server binary is missing and could not be downloaded "
                f"({first_line(error)}); run `verbatim weaviate install` to build it with Go, or set WEAVIATE_URL"
            ) from error
        except WeaviateBaseError as error:
            raise StoreUnavailable(f"cannot start {where}: {first_line(error)}; see {config.log_path}") from error
        started = process
    # else: another Verbatim process already runs the embedded server on these ports; share it.

    client = weaviate.use_async_with_local(
        host="127.0.0.1",
        port=config.port,
        grpc_port=config.grpc_port,
        auth_credentials=Auth.api_key(key),
        additional_config=AdditionalConfig(timeout=Timeout(init=10, query=30, insert=120)),
        skip_init_checks=True,
    )
    try:
        await _wait_until_ready(client, started, config)
    except StoreUnavailable:
        await client.close()
        if started is not None:
            await asyncio.to_thread(started.stop)
        raise
    return WeaviateHandle(client=client, description=where, _process=started)


async def _wait_until_ready(client: WeaviateAsyncClient, process: _EmbeddedProcess | None, config: WeaviateConfig) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + config.startup_timeout_s
    last_error = "not ready"
    while loop.time() < deadline:
        if process is not None and (code := process.exit_code()) is not None:
            raise StoreUnavailable(
                f"Weaviate Embedded exited with code {code} while starting ({_last_server_error(config.log_path)}); "
                f"see {config.log_path}"
            )
        try:
            if not client.is_connected():
                await client.connect()
            if await client.is_ready():
                return
        except WeaviateBaseError as error:
            last_error = first_line(error)
        await asyncio.sleep(0.2)
    raise StoreUnavailable(
        f"Weaviate Embedded on 127.0.0.1:{config.port} was not ready after {config.startup_timeout_s:.0f} s "
        f"({last_error}); see {config.log_path}, or raise WEAVIATE_STARTUP_TIMEOUT_S"
    )


def _last_server_error(log_path: Path) -> str:
    """The last error the server logged (it logs JSON lines), for a one-line start-up message."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-200:]
    except OSError:
        return "no log"
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("level") in {"error", "fatal", "panic"}:
            detail = entry.get("error") or ""
            return f"{entry.get('msg', '')}{': ' + str(detail) if detail else ''}"
    return "no error logged"

