"""``InFlight``: the tasks doing a user's work right now (answering, recording a flag or a click), so a clean
shutdown can let them finish (post their reply, log their exchange) before the clients they use are closed.

Shared by the Slack edge and the HTTP API (``/healthz`` reports how many): one count for the whole server.
Holding the task also keeps a strong reference to it, which Bolt's fire-and-forget listener tasks otherwise lack.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager


class InFlight:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()

    @contextmanager
    def track(self) -> Iterator[None]:
        """Count the current task as answering until the block ends."""
        task = asyncio.current_task()
        if task is None:
            yield
            return
        self._tasks.add(task)
        try:
            yield
        finally:
            self._tasks.discard(task)

    def __len__(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for the answers in flight; returns how many were still running after it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        current = asyncio.current_task()
        while pending := {t for t in self._tasks if t is not current and not t.done()}:
            left = deadline - loop.time()
            if left <= 0:
                return len(pending)
            await asyncio.wait(pending, timeout=left)  # answers that started meanwhile are waited for too
        return 0
