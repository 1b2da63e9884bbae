"""A home's Weaviate Embedded: its files, finding, starting, adopting and stopping its server, its ports.

The embedded server answers only to its home: a random key made once per home (``<home>/weaviate.key``,
mode 0600, never logged) is required on REST, gRPC and the cluster data port, and what can be bound to
loopback is (see ``_EMBEDDED_ENV``). We spawn the binary ourselves (the client's launcher only fetches it)
to control its name, ports and session.

A home owns its server. The files beside the key say which one it is and who uses it:

- ``weaviate.server.json``: the running server (pid, process start time, HTTP and gRPC ports, data path,
  version, node name). A process of the home reuses a server only when the record names a live process
  (pid and start time: pids are reused) *and* the server answers the home's key — another home's server
  refuses it. A server found running on the home's data folder without a record (an older Verbatim's) is
  adopted on the same proof, or refused: one data folder, one server. When the configured ports are held
  by anything else, the home's server starts on free ports, the record tells the home's other processes,
  and one warning names who holds the ports.
- ``weaviate.users/``: one file per connection (pid, start time). **Hand-over**: the server belongs to the
  home, not to the process that started it; ``leave`` (``WeaviateHandle.close``) stops it only when no
  other live user is left, so a process that shares it keeps its store when the starter exits. Users that
  died without closing (``kill -9``) are pruned by pid liveness. The server runs in a session of its own,
  so a Ctrl-C meant for its starter does not reach it; a server whose every user was killed is an orphan,
  adopted by the next process of the home after the same verification.
- ``weaviate.node``: the node name, fixed per home. Weaviate keeps its node name in the Raft log and as
  the owner of every shard, and the client's launcher names the node after the HTTP port, so a home
  moved to other ports never became ready. A home made before this file keeps the name its data holds
  (``Embedded_at_<port>``). (``RAFT_FORCE_ONE_NODE_RECOVERY`` is no substitute: it rewrites only the Raft
  peer set, not the shards' owner, and needs ``RAFT_ENABLE_ONE_NODE_RECOVERY`` as well.)
- ``weaviate.lock``: held (``flock``) while a process starts, adopts or stops the server.

``retrieval.weaviate_server`` connects a client to the server found here (``home_server``) and heals it.
Errors are ``StoreUnavailable``, one line that names the cause and what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import tarfile
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

from weaviate.embedded import EmbeddedOptions, EmbeddedV4

from retrieval.errors import first_line
from retrieval.processes import ProcessId, process_start_time
from retrieval.weaviate_config import NODE_FILE, StoreUnavailable, WeaviateConfig
from retrieval.weaviate_install import embedded_binary_path

log = logging.getLogger(__name__)

# What the embedded server needs to run quietly and offline: no telemetry calls, a loopback Raft
# address (the container hostname may resolve to an unreachable IPv6 address), and the Japanese
# tokenizer that the chunk schema uses. Ports, node name and key are added per start (``_server_environment``).
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
_PROBE_TIMEOUT_S = 2.0  # one readiness or key check of a server on loopback
# A graceful stop flushes the index; past this the server is killed (its write-ahead log brings the writes back at
# the next start). Short enough that `serve`'s whole shutdown fits a platform's 30 s (bot/serve.py, DRAIN_TIMEOUT_S).
_STOP_TIMEOUT_S = 10.0


# -- the home's record of its server -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """The running embedded server of a home, as written to ``<home>/weaviate.server.json``.

    Other processes of the home read it to find the server (its ports may not be the configured ones), and
    trust it only while the process it names is alive and the server answers the home's key.
    """

    pid: int
    start_time: int
    port: int
    grpc_port: int
    data_path: str
    version: str
    node: str

    @property
    def process(self) -> ProcessId:
        return ProcessId(self.pid, self.start_time)

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "start_time": self.start_time, "port": self.port,
                           "grpc_port": self.grpc_port, "data_path": self.data_path, "version": self.version,
                           "node": self.node}, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, path: Path) -> ServerRecord:
        try:
            data = json.loads(text)
            return cls(pid=int(data["pid"]), start_time=int(data["start_time"]), port=int(data["port"]),
                       grpc_port=int(data["grpc_port"]), data_path=str(data["data_path"]),
                       version=str(data["version"]), node=str(data["node"]))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise StoreUnavailable(f"{path} is not a Weaviate server record ({first_line(error)}): stop any Weaviate "
                                   "serving this home, remove the file and retry") from error


def read_server_record(config: WeaviateConfig) -> ServerRecord | None:
    try:
        text = config.server_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return ServerRecord.from_json(text, config.server_path)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a reader never sees half a file), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


def _forget_server(config: WeaviateConfig, record: ServerRecord) -> None:
    """Remove the record if it still names ``record``'s process (another process may have recorded a new one)."""
    current = read_server_record(config)
    if current is not None and current.process == record.process:
        config.server_path.unlink(missing_ok=True)


# -- the home's users of its server ------------------------------------------------------------


def register_user(config: WeaviateConfig) -> Path:
    """Enter this connection in ``<home>/weaviate.users/``: a server stops only when no live user is left."""
    me = ProcessId.current()
    config.users_path.mkdir(parents=True, exist_ok=True)
    path = config.users_path / f"{me.pid}-{me.start_time}-{secrets.token_hex(4)}"
    path.touch()
    return path


def _live_users(config: WeaviateConfig) -> list[Path]:
    """The registered users still alive; those of dead processes (``kill -9``, a crash) are removed here."""
    try:
        entries = list(config.users_path.iterdir())
    except FileNotFoundError:
        return []
    alive = []
    for entry in entries:
        pid, _, rest = entry.name.partition("-")
        start_time = rest.partition("-")[0]
        if pid.isdigit() and start_time.isdigit() and ProcessId(int(pid), int(start_time)).alive():
            alive.append(entry)
        else:
            entry.unlink(missing_ok=True)
    return alive


@contextlib.asynccontextmanager
async def home_lock(config: WeaviateConfig) -> AsyncIterator[None]:
    """Hold ``<home>/weaviate.lock`` while deciding to start, adopt or stop the home's server.

    Processes of one home take turns there, so two never start two servers, and none stops the server while
    another is joining it. It is a ``flock``: the kernel releases it when its holder dies. A start holds it
    until the server is ready, so the wait is bounded by twice the start-up timeout.
    """
    config.lock_path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(config.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 2 * config.startup_timeout_s
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if loop.time() > deadline:
                    raise StoreUnavailable(
                        f"another process of this home has held {config.lock_path} for over "
                        f"{2 * config.startup_timeout_s:.0f} s: look for a stuck verbatim process of this VERBATIM_HOME"
                    ) from None
                await asyncio.sleep(0.1)
        yield
    finally:
        os.close(descriptor)  # releases the lock


# -- Weaviate servers on this machine ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunningServer:
    """A Weaviate server process seen in /proc: what it serves and where."""

    process: ProcessId
    port: int | None
    grpc_port: int | None
    data_path: str | None
    node: str | None

    def describe(self) -> str:
        return f"the Weaviate of {self.data_path or 'an unknown folder'} (pid {self.process.pid})"


def running_servers() -> list[RunningServer]:
    """Every Weaviate server this user runs on the machine, whoever started it, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = [part.decode("utf-8", "replace") for part in (entry / "cmdline").read_bytes().split(b"\0")]
            if not Path(argv[0]).name.startswith("weaviate"):
                continue
            environ = (entry / "environ").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # it exited meanwhile, or belongs to another user (who cannot be using our home's files)
        start_time = process_start_time(int(entry.name))
        if start_time is None:
            continue
        variables = dict(item.split("=", 1) for item in environ.decode("utf-8", "replace").split("\0") if "=" in item)
        data_path = variables.get("PERSISTENCE_DATA_PATH")
        found.append(RunningServer(
            process=ProcessId(int(entry.name), start_time),
            port=_int_or_none(argv[argv.index("--port") + 1]) if "--port" in argv[:-1] else None,
            grpc_port=_int_or_none(variables.get("GRPC_PORT", "50051")),
            data_path=os.path.realpath(data_path) if data_path else None,
            node=variables.get("CLUSTER_HOSTNAME"),
        ))
    return found


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _servers_on(data_dir: Path) -> list[RunningServer]:
    data_path = os.path.realpath(data_dir)
    return [server for server in running_servers() if server.data_path == data_path]


def _port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now (Weaviate binds gRPC on every interface, so probe those)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's listeners do: TIME_WAIT is no conflict
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def _holder(port: int) -> str:
    """Who listens on ``port``, for a message: another home's Weaviate, or some other program."""
    for server in running_servers():
        if port in (server.port, server.grpc_port):
            return server.describe()
    return "another program"


def free_ports(count: int, *, consecutive: bool = False) -> list[int]:
    """``count`` ports free now (held together while chosen, so distinct); ``consecutive``: n, n+1, …"""
    for _ in range(100):
        with contextlib.ExitStack() as held:
            ports: list[int] = []
            try:
                for _index in range(count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("", ports[0] + len(ports) if consecutive and ports else 0))
                    ports.append(int(sock.getsockname()[1]))
            except (OSError, OverflowError):
                continue  # the port after a random one was taken: draw again
            return ports
    raise StoreUnavailable("no free TCP ports on this machine for Weaviate Embedded: free some, or set WEAVIATE_URL")


def _ports_to_start_on(config: WeaviateConfig, previous: ServerRecord | None) -> tuple[int, int]:
    """The HTTP and gRPC ports for a new server of this home.

    The ports of the home's last server first (processes of this home that used it are bound to them), then
    the configured ones, else free ones: with one line naming who holds the configured ports.
    """
    wanted = [(previous.port, previous.grpc_port)] if previous is not None else []
    wanted.append((config.port, config.grpc_port))
    for port, grpc_port in wanted:
        if port != grpc_port and _port_free(port) and _port_free(grpc_port):
            return port, grpc_port
    port, grpc_port = free_ports(2)
    configured = (("WEAVIATE_EMBEDDED_PORT", config.port), ("WEAVIATE_EMBEDDED_GRPC_PORT", config.grpc_port))
    held = [f"{name} {value} is held by {_holder(value)}" for name, value in configured if not _port_free(value)]
    log.warning("%s: starting this home's Weaviate Embedded on 127.0.0.1:%d (gRPC %d) instead, recorded in %s",
                "; ".join(held) or "the configured ports are taken", port, grpc_port, config.server_path)
    return port, grpc_port


# -- the node name -----------------------------------------------------------------------------

# The names a home's data may have been made under: the client launcher's, and ours (should weaviate.node be lost).
_NODE_NAME_IN_DATA = re.compile(rb"Embedded_at_[0-9]{1,5}|verbatim-[0-9a-f]{8}")


def home_node_name(config: WeaviateConfig) -> str:
    """The Weaviate node name of this home, kept in ``<home>/weaviate.node`` for good.

    Weaviate remembers its node name in the Raft log and as the owner of every shard; started under another
    name it never becomes ready. The client's launcher names the node after the HTTP port
    (``Embedded_at_<port>``), so a home moved to other ports would stop working: a home gets one name
    instead. A home made before this file existed keeps the name its data already holds.
    """
    try:
        return config.node_path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    name = _node_name_in_data(config.data_dir) or f"verbatim-{secrets.token_hex(4)}"
    _write_private(config.node_path, name + "\n")
    return name


def _node_name_in_data(data_dir: Path) -> str | None:
    """The node name an existing data folder was made under (its Raft files hold it), if any."""
    raft = data_dir / "raft"
    if not raft.is_dir():
        return None
    names: dict[bytes, int] = {}
    for path in sorted(raft.rglob("*")):
        if path.is_file():
            for match in _NODE_NAME_IN_DATA.finditer(path.read_bytes()):
                names[match.group()] = names.get(match.group(), 0) + 1
    if not names:
        return None
    if len(names) > 1:
        found = ", ".join(sorted(name.decode() for name in names))
        raise StoreUnavailable(f"the Weaviate data in {data_dir} names several nodes ({found}): write the one it was "
                               f"made under to {data_dir.parent / NODE_FILE} and retry")
    return next(iter(names)).decode()


# -- starting, verifying and stopping the server -----------------------------------------------

class _ServerProcess(subprocess.Popen[bytes]):
    """The server as our child. Once handed over it outlives us on purpose: no "still running" warning then."""

    handed_over = False

    def __del__(self) -> None:
        if not self.handed_over:
            super().__del__()


# Children this process started and left running for other processes of its home: polled so that they are
# reaped (not left as zombies) once whoever stops them has.
_handed_over: list[_ServerProcess] = []


@dataclass
class EmbeddedServer:
    """The home's server as this process knows it: its record, and the child process when we spawned it."""

    record: ServerRecord
    process: _ServerProcess | None = None

    def alive(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            return False
        return self.record.process.alive()

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()


async def _server_binary(config: WeaviateConfig) -> Path:
    """The server binary; the client downloads it from GitHub when missing (machines with internet only)."""
    path = embedded_binary_path(config.binary_dir, config.version)
    if path.exists():
        return path
    options = EmbeddedOptions(persistence_data_path=str(config.data_dir), binary_path=str(config.binary_dir),
                              version=config.version)
    try:
        with _client_log_to(config.log_path):
            await asyncio.to_thread(EmbeddedV4(options).ensure_weaviate_binary_exists)
    except (urllib.error.URLError, OSError, tarfile.TarError) as error:
        raise StoreUnavailable(
            f"cannot start Weaviate Embedded {config.version}: the server binary is missing and could not be "
            f"downloaded ({first_line(error)}); run `verbatim weaviate install` to build it with Go, "
            "or set WEAVIATE_URL"
        ) from error
    return path


@contextlib.contextmanager
def _client_log_to(path: Path) -> Iterator[None]:
    """Send the client's own log (it announces the download at INFO) to the home's log, not to our stderr."""
    path.parent.mkdir(parents=True, exist_ok=True)
    client_log = logging.getLogger("weaviate-client")
    handler = logging.FileHandler(path, encoding="utf-8")
    propagate = client_log.propagate
    client_log.addHandler(handler)
    client_log.propagate = False
    try:
        yield
    finally:
        client_log.removeHandler(handler)
        client_log.propagate = propagate
        handler.close()


def _server_environment(config: WeaviateConfig, key: str, node: str, grpc_port: int) -> dict[str, str]:
    """What the server runs with: ours overrides anything inherited (a stray GRPC_PORT must not move it)."""
    gossip_port, data_port = free_ports(2, consecutive=True)  # Weaviate needs data = gossip + 1
    raft_port, raft_rpc_port = free_ports(2, consecutive=True)  # and, on localhost, Raft RPC = Raft + 1
    return os.environ | _EMBEDDED_ENV | {
        "PERSISTENCE_DATA_PATH": str(config.data_dir),
        "QUERY_DEFAULTS_LIMIT": "20",
        "GRPC_PORT": str(grpc_port),
        "CLUSTER_IN_LOCALHOST": "true",
        "CLUSTER_GOSSIP_BIND_PORT": str(gossip_port),
        "CLUSTER_DATA_BIND_PORT": str(data_port),
        "PROFILING_PORT": str(free_ports(1)[0]),
        # One node that keeps its name whatever its ports (``home_node_name``), and bootstraps Raft alone.
        "CLUSTER_HOSTNAME": node,
        "RAFT_BOOTSTRAP_EXPECT": "1",
        "RAFT_PORT": str(raft_port),
        "RAFT_INTERNAL_RPC_PORT": str(raft_rpc_port),
        "RAFT_JOIN": f"{node}:{raft_port}",
        "AUTHENTICATION_APIKEY_ALLOWED_KEYS": key,
        # The key also guards the cluster data port, which 1.39 binds on every interface.
        "CLUSTER_BASIC_AUTH_USERNAME": "verbatim",
        "CLUSTER_BASIC_AUTH_PASSWORD": key,
    }


class _PortsTaken(StoreUnavailable):
    """Another program took a port between our check that it was free and our server binding it."""

    def __init__(self, fact: str) -> None:
        super().__init__(f"{fact}: stop that, or restart verbatim to move this home to free ports")
        self.fact = fact


_START_ATTEMPTS = 3  # a start that loses its ports to another home's server moves to free ones, this many times


async def _start_server(config: WeaviateConfig, key: str, ports: tuple[int, int], *,
                        movable: bool = True) -> EmbeddedServer:
    """Start this home's server on ``ports``, record it in the home, and wait until it serves this home's key.

    Call with the home lock held. The server runs in a session of its own, so a Ctrl-C meant for the process
    that started it does not take it from the other processes of the home.

    "The port is free" and the server binding it are two moments: another home's server starting at the same
    time may take the port in between (the check sees it free, our server then cannot bind it, and the port
    answers with the other home's server, which refuses our key). ``movable``: whoever loses that race starts
    again on free ports (one warning); not movable (``heal``, whose client is bound to these ports), it fails.
    """
    if serving := _servers_on(config.data_dir):
        raise StoreUnavailable(
            f"{serving[0].describe()} already serves {config.data_dir} and does not answer as this home's server; "
            f"one data folder takes one server: stop it (kill {serving[0].process.pid}) and retry"
        )
    node = home_node_name(config)
    binary = await _server_binary(config)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, _START_ATTEMPTS + 1):
        try:
            return await _start_on(config, key, binary, node, ports)
        except _PortsTaken as taken:
            if not movable or attempt == _START_ATTEMPTS:
                raise
            port, grpc_port = free_ports(2)
            log.warning("%s: starting this home's Weaviate Embedded on 127.0.0.1:%d (gRPC %d) instead, recorded "
                        "in %s", taken.fact, port, grpc_port, config.server_path)
            ports = (port, grpc_port)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def _start_on(config: WeaviateConfig, key: str, binary: Path, node: str,
                    ports: tuple[int, int]) -> EmbeddedServer:
    port, grpc_port = ports
    for value in (port, grpc_port):
        if not _port_free(value):
            raise _PortsTaken(f"cannot start Weaviate Embedded on port {value}: it is held by {_holder(value)}")
    command = [str(binary), "--host", "127.0.0.1", "--port", str(port), "--scheme", "http",
               "--read-timeout=600s", "--write-timeout=600s"]
    environment = _server_environment(config, key, node, grpc_port)
    try:
        # On the loop, not in a worker thread: a cancellation (SIGTERM during start-up) must never find a server
        # spawned by a thread whose result nobody reads, running with no record and no one to stop it.
        process = _spawn(command, environment, config.log_path)
    except OSError as error:
        raise StoreUnavailable(f"cannot run {binary} ({error.strerror}): run `verbatim weaviate install` "
                               "to build it again") from error
    record = ServerRecord(pid=process.pid, start_time=process_start_time(process.pid) or 0, port=port,
                          grpc_port=grpc_port, data_path=os.path.realpath(config.data_dir), version=config.version,
                          node=node)
    server = EmbeddedServer(record, process)
    _write_private(config.server_path, record.to_json())
    try:
        await _wait_until_serving(server, key, config)
    except (StoreUnavailable, asyncio.CancelledError):  # not ready, or the start was cancelled: stop it, re-raise
        await _stop(server)
        _forget_server(config, record)
        raise
    return server


def _spawn(command: list[str], environment: dict[str, str], log_path: Path) -> _ServerProcess:
    """Run the server in a session of its own; it logs JSON lines to the home's log, never into our --json output."""
    with open(log_path, "ab") as server_log:
        return _ServerProcess(command, env=environment, stdin=subprocess.DEVNULL, stdout=server_log,
                                stderr=server_log, start_new_session=True)


def _probe(port: int, key: str) -> tuple[int | None, int | None]:
    """(readiness status, status of a keyed request) of the server on ``port``; None where nothing answered."""
    base = f"http://127.0.0.1:{port}/v1"
    return status_of(f"{base}/.well-known/ready", None), status_of(f"{base}/schema", key)


def status_of(url: str, key: str | None) -> int | None:
    """The HTTP status ``url`` answers (with ``key`` as a bearer token); None when nothing answered."""
    request = urllib.request.Request(url)
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=_PROBE_TIMEOUT_S) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):  # refused, reset or timed out: not serving (yet)
        return None


def status_text(status: int | None) -> str:
    return "no answer" if status is None else f"HTTP {status}"


async def _wait_until_serving(server: EmbeddedServer, key: str, config: WeaviateConfig) -> None:
    """Until ``server`` is ready and answers this home's key: the proof that it serves this home.

    Raises ``StoreUnavailable`` when it exits, refuses the key (it is not this home's, or the key file was
    replaced) or is not ready within the start-up timeout.
    """
    record = server.record
    loop = asyncio.get_running_loop()
    deadline = loop.time() + config.startup_timeout_s
    while True:
        if not server.alive():
            code = server.exit_code()
            error = _last_server_error(config.log_path)
            if server.process is not None and (_ports_taken_from(server) or "address already in use" in error):
                raise _PortsTaken(f"Weaviate Embedded (pid {record.pid}) could not bind 127.0.0.1:{record.port} or "
                                  f"gRPC {record.grpc_port}, taken while it started ({error})")
            raise StoreUnavailable(
                f"Weaviate Embedded (pid {record.pid}) exited{f' with code {code}' if code is not None else ''} "
                f"while starting ({error}); see {config.log_path}"
            )
        ready, keyed = await asyncio.to_thread(_probe, record.port, key)
        if keyed in (401, 403) and server.process is not None and (taken := _ports_taken_from(server)):
            raise _PortsTaken(f"{taken} took 127.0.0.1:{record.port} while this home's Weaviate Embedded started")
        if keyed in (401, 403):
            raise StoreUnavailable(
                f"the Weaviate on 127.0.0.1:{record.port} (pid {record.pid}) refuses this home's key "
                f"({config.key_path}): it serves another home, or the key file was replaced; stop it "
                f"(kill {record.pid}) and retry"
            )
        if ready == 200 and keyed == 200:
            return
        if loop.time() > deadline:
            raise StoreUnavailable(
                f"Weaviate Embedded on 127.0.0.1:{record.port} (pid {record.pid}) was not ready after "
                f"{config.startup_timeout_s:.0f} s ({_last_server_error(config.log_path)}); see {config.log_path}, "
                "or raise WEAVIATE_STARTUP_TIMEOUT_S"
            )
        await asyncio.sleep(0.2)


def _ports_taken_from(server: EmbeddedServer) -> str | None:
    """Who else listens on ``server``'s HTTP or gRPC port (another home's Weaviate, another program), if anyone."""
    record = server.record
    for found in running_servers():
        if found.process != record.process and {found.port, found.grpc_port} & {record.port, record.grpc_port}:
            return found.describe()
    if not server.alive() and not (_port_free(record.port) and _port_free(record.grpc_port)):
        return "another program"
    return None


async def _stop(server: EmbeddedServer) -> None:
    """Stop the server (SIGTERM; SIGKILL if it has not exited after ``_STOP_TIMEOUT_S``), wait until it is gone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _STOP_TIMEOUT_S
    signal_sent = signal.SIGTERM
    while server.alive():
        with contextlib.suppress(ProcessLookupError):  # it exited between the check and the signal
            os.kill(server.record.pid, signal_sent)
        while server.alive() and loop.time() < deadline:
            await asyncio.sleep(0.1)
        if server.alive():
            log.warning("Weaviate Embedded (pid %d) did not stop within %.0f s: killing it",
                        server.record.pid, _STOP_TIMEOUT_S)
            signal_sent = signal.SIGKILL
            deadline = loop.time() + _STOP_TIMEOUT_S
    if server.process is not None:
        await asyncio.to_thread(server.process.wait)
    _reap_handed_over()


def _reap_handed_over() -> None:
    _handed_over[:] = [child for child in _handed_over if child.poll() is None]


# -- finding this home's server ----------------------------------------------------------------


async def home_server(config: WeaviateConfig, key: str, *, ports: tuple[int, int] | None = None) -> EmbeddedServer:
    """This home's server: the recorded one if it provably serves this home, else one found on the home's data
    folder (adopted once verified), else one started now (on ``ports``, or on ``_ports_to_start_on``).

    Call with the home lock held.
    """
    record = read_server_record(config)
    if record is not None and record.process.alive():
        server = EmbeddedServer(record)
        await _wait_until_serving(server, key, config)
        return server
    if record is not None:
        log.info("the Weaviate Embedded recorded in %s (pid %d) is gone; starting a new one", config.server_path,
                 record.pid)
        config.server_path.unlink(missing_ok=True)
    adopted = await _adopt_unrecorded(config, key)
    if adopted is not None:
        return adopted
    return await _start_server(config, key, ports or _ports_to_start_on(config, record), movable=ports is None)


async def _adopt_unrecorded(config: WeaviateConfig, key: str) -> EmbeddedServer | None:
    """A server already running on this home's data folder but not recorded (started by an older Verbatim, or
    its record lost): adopted when it answers this home's key; refused (``StoreUnavailable``) otherwise."""
    for found in _servers_on(config.data_dir):
        if found.port is None or found.grpc_port is None:
            continue
        record = ServerRecord(pid=found.process.pid, start_time=found.process.start_time, port=found.port,
                              grpc_port=found.grpc_port, data_path=found.data_path or "", version="unknown",
                              node=found.node or "")
        server = EmbeddedServer(record)
        await _wait_until_serving(server, key, config)
        _write_private(config.server_path, record.to_json())
        log.info("adopted the Weaviate Embedded already serving %s (pid %d, 127.0.0.1:%d)", config.data_dir,
                 record.pid, record.port)
        return server
    return None


# -- a connection's place among the home's users -----------------------------------------------


@dataclass
class HomeUse:
    """This connection's place in its home: the config, the key, and its entry among the server's users."""

    config: WeaviateConfig
    key: str
    user: Path


async def leave(home: HomeUse, server: EmbeddedServer | None) -> None:
    """Take this connection off the home's users; the last live user out stops the server (hand-over)."""
    async with home_lock(home.config):
        home.user.unlink(missing_ok=True)
        others = _live_users(home.config)
        record = read_server_record(home.config)
        if record is not None and (server is None or server.record.process != record.process):
            server = EmbeddedServer(record)
        if server is None:
            return
        if others:
            log.info("leaving Weaviate Embedded (pid %d) running for %d other process(es) of this home",
                     server.record.pid, len(others))
            if server.process is not None:
                server.process.handed_over = True
                _handed_over.append(server.process)
            return
        await _stop(server)
        _forget_server(home.config, server.record)


# -- the home's key and the server's log -------------------------------------------------------


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
