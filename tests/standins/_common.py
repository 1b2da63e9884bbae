"""What the stand-ins share: a local aiohttp server on a free port, a bounded wait, and scripted answers (a
status, with ``Retry-After``, queued before the real answer).

Tests talk to the stand-ins through the real SDKs over real sockets, so each stand-in is an ordinary
aiohttp application bound to 127.0.0.1 port 0 (the OS picks a free port, so tests can run in parallel and
never collide with a developer's running bot). ``serve`` is public because the bot's own HTTP server is
started the same way in tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from aiohttp import web

T = TypeVar("T")

# Errors a predicate may raise while the state it inspects is still being built (an index not there yet).
_NOT_YET = (LookupError,)


@asynccontextmanager
async def serve(app: web.Application, *, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """Serve ``app`` on ``host`` and a free port; yields the base URL ``http://host:port``.

    Handlers are cancelled when their client disconnects (``handler_cancellation``), so a scripted delay
    ends as soon as the SDK under test gives up, and shutdown waits at most one second for the rest.
    """
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, 0)
        await site.start()
        port = _port_of(runner)
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def _port_of(runner: web.AppRunner) -> int:
    """The port the OS gave the runner's only site."""
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError(f"the server has no TCP address: {runner.addresses!r}")


@dataclass(frozen=True)
class Scripted:
    """One scripted answer: ``status`` (0: the real answer), in the stand-in's own error body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    reason: str | None = None  # the error's reason, where the service's body carries one (Google's "errors")


def status(code: int, *, retry_after: float | None = None, reason: str | None = None) -> Scripted:
    return Scripted(code, {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}, reason)


def real() -> Scripted:
    """The real answer, for this one request (so that a failure can be scripted for the next page)."""
    return Scripted(0)


class Scripts:
    """The answers a test queued for a stand-in, by path prefix: each request takes the next one of its queue."""

    def __init__(self) -> None:
        self._queues: list[tuple[str, list[Scripted]]] = []

    def add(self, path: str, *responses: Scripted) -> None:
        self._queues.append((path, list(responses)))

    def next(self, path: str) -> Scripted | None:
        """The scripted answer for a request to ``path``, or ``None`` for the real one."""
        for prefix, queue in self._queues:
            if path.startswith(prefix) and queue:
                scripted = queue.pop(0)
                return None if scripted.status == 0 else scripted
        return None


async def wait_for(
    predicate: Callable[[], T | None],
    *,
    timeout: float = 10.0,
    interval: float = 0.01,
    what: str | None = None,
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    The timeout is a bound so that a broken test ends with a clear message, not a timed assertion: pick it
    generously. A predicate that raises ``LookupError`` (``IndexError``, ``KeyError``) counts as "not yet",
    so ``lambda: slack.thread(c, ts)[1]`` waits for the first reply. Other exceptions propagate at once.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        try:
            last = predicate()
        except _NOT_YET:
            last = None
        if last:
            return last
        if time.monotonic() >= deadline:
            description = what or getattr(predicate, "__name__", "condition")
            raise AssertionError(f"timed out after {timeout:g}s waiting for {description}; last value: {last!r}")
        await asyncio.sleep(interval)
