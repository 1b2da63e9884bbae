"""Getting a Weaviate to talk to: a server at ``WEAVIATE_URL``, or Weaviate Embedded under ``VERBATIM_HOME``.

``connect`` returns a ``WeaviateHandle``: an async client, and with Weaviate Embedded this process's place
among the users of its home's server (``retrieval.embedded_home``: found, adopted or started there).
``WeaviateHandle.close`` leaves the home, and the last live user out stops the server.

Healing: ``WeaviateHandle.heal`` restarts the home's server when it has died (on the same ports, so the
same client object reconnects), or checks that a ``WEAVIATE_URL`` server answers again; the client's gRPC
reconnect back-off is capped at a few seconds, so it reconnects by itself once the server is back.

Errors: ``StoreUnavailable`` (``retrieval.weaviate_config``: cannot start or reach the server), one line that
names the cause and what to do.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import weaviate
from weaviate.classes.init import AdditionalConfig, Auth, GrpcConfig, Timeout
from weaviate.client import WeaviateAsyncClient
from weaviate.exceptions import WeaviateBaseError

from retrieval.embedded_home import (
    EmbeddedServer,
    HomeUse,
    home_api_key,
    home_lock,
    home_server,
    leave,
    register_user,
    status_of,
    status_text,
)
from retrieval.errors import first_line
from retrieval.weaviate_config import StoreUnavailable, WeaviateConfig

log = logging.getLogger(__name__)

_GRPC_RECONNECT_MAX_MS = 2000  # the longest a lost gRPC channel waits before trying the server again


@dataclass
class WeaviateHandle:
    """A connected async client, and, with Weaviate Embedded, the home's server it uses."""

    client: WeaviateAsyncClient
    description: str  # for messages: "Weaviate Embedded 1.39.3 on 127.0.0.1:8079" / "Weaviate at https://…"
    _process: EmbeddedServer | None = None
    _home: HomeUse | None = None
    _ready_url: str | None = None  # WEAVIATE_URL's readiness endpoint (unauthenticated)
    _healing: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def close(self) -> None:
        """Close the client; stop the home's server only if no other live process of the home still uses it."""
        async with self._healing:  # not while a heal is restarting the server
            try:
                await self.client.close()
            finally:  # a client that fails to close must not keep the home's server running
                if self._home is not None:
                    home, server = self._home, self._process
                    self._home = self._process = None
                    await leave(home, server)

    async def heal(self) -> bool:
        """Bring the store back if it went away; True when a restarted server is now in use.

        Cheap while all is well (a look at /proc, or one readiness request): call it every few seconds.
        Embedded: if the home's server is gone (exited, killed), restart it on the ports this handle's client
        uses (or join the one another process of the home restarted) and reconnect the same client object.
        WEAVIATE_URL: check that the server answers; the client reconnects by itself once it is back (its gRPC
        reconnect back-off is capped at ``_GRPC_RECONNECT_MAX_MS``), so this only reports.
        Raises ``StoreUnavailable`` (one line) when the store cannot be brought back now; call it again later.
        """
        async with self._healing:
            if self._home is None:
                await self._check_remote()
                return False
            return await self._heal_embedded(self._home)

    async def _check_remote(self) -> None:
        # Not ``client.is_ready()``: it prints the connection error to stdout.
        assert self._ready_url is not None
        status = await asyncio.to_thread(status_of, self._ready_url, None)
        if status != 200:
            raise StoreUnavailable(f"{self.description} does not answer ({status_text(status)}): check that it is "
                                   "running; the client reconnects by itself once it is back")

    async def _heal_embedded(self, home: HomeUse) -> bool:
        if self._process is not None and self._process.alive():
            return False
        ports = (self._process.record.port, self._process.record.grpc_port) if self._process else None
        async with home_lock(home.config):
            server = await home_server(home.config, home.key, ports=ports)
        self._process = server
        if ports is not None and (server.record.port, server.record.grpc_port) != ports:
            raise StoreUnavailable(
                f"this home's Weaviate Embedded now runs on 127.0.0.1:{server.record.port}, but this process is "
                f"connected to port {ports[0]}: restart this process"
            )
        log.warning("Weaviate Embedded of this home had stopped: now using pid %d on 127.0.0.1:%d",
                    server.record.pid, server.record.port)
        # Fresh connections: the old gRPC channel may be waiting out its reconnect back-off.
        await self.client.close()
        try:
            await self.client.connect()
        except WeaviateBaseError as error:
            raise StoreUnavailable(f"cannot reconnect to {self.description} ({first_line(error)}); "
                                   f"see {home.config.log_path}") from error
        return True


def _additional_config() -> AdditionalConfig:
    """Client timeouts, and a gRPC channel that retries a lost server every few seconds, not every two minutes."""
    grpc_options = [("grpc.initial_reconnect_backoff_ms", 250), ("grpc.min_reconnect_backoff_ms", 250),
                    ("grpc.max_reconnect_backoff_ms", _GRPC_RECONNECT_MAX_MS)]
    return AdditionalConfig(timeout=Timeout(init=10, query=30, insert=120),
                            grpc_config=GrpcConfig(channel_options=grpc_options))


async def connect(config: WeaviateConfig) -> WeaviateHandle:
    """Connect to ``config.url``, or to this home's Weaviate Embedded (started when none serves the home).

    Raises ``StoreUnavailable``.
    """
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
        additional_config=_additional_config(),
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
    ready_url = f"{http.scheme}://{http.netloc}{http.path.rstrip('/')}/v1/.well-known/ready"
    return WeaviateHandle(client=client, description=where, _ready_url=ready_url)


async def _connect_embedded(config: WeaviateConfig) -> WeaviateHandle:
    key = home_api_key(config.key_path)
    async with home_lock(config):
        server = await home_server(config, key)
        user = register_user(config)
    record = server.record
    where = f"Weaviate Embedded {config.version} on 127.0.0.1:{record.port}"
    client = weaviate.use_async_with_local(
        host="127.0.0.1",
        port=record.port,
        grpc_port=record.grpc_port,
        auth_credentials=Auth.api_key(key),
        additional_config=_additional_config(),
        skip_init_checks=True,
    )
    handle = WeaviateHandle(client=client, description=where, _process=server,
                            _home=HomeUse(config=config, key=key, user=user))
    connected = False
    try:
        await client.connect()
        connected = True
    except WeaviateBaseError as error:
        raise StoreUnavailable(f"cannot connect to {where} ({first_line(error)}); see {config.log_path}") from error
    finally:  # failed, or cancelled (SIGTERM during start-up): leave the home, stopping its server if we were the last
        if not connected:
            await handle.close()
    return handle
