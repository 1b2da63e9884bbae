"""The suppressions the answer path applies, read from SQL and kept for a while (one source per app, in deps).

    SuppressionSource(sessions, max_age_s=…).current() -> tuple[Suppression, ...]

Read again when `invalidate()` was called (a flag was resolved in this process) or when the copy is older than
`max_age_s` (a flag resolved by another process: the CLI, the web desk, another replica). One reload at a time.
A database that cannot be read keeps the last copy (logged): a suppression is a refinement, and the answer
must not fail because of it. Nothing here is module-level state; the clock is injectable for tests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.answer.suppress import Suppression
from storage.errors import StorageError
from storage.records import SuppressionRecord
from storage.suppressions import in_force

log = logging.getLogger(__name__)


class SuppressionSource:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], *, max_age_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sessions = sessions
        self._max_age_s = max_age_s
        self._clock = clock
        self._loaded: tuple[Suppression, ...] = ()
        self._loaded_at: float | None = None
        self._lock = asyncio.Lock()
        self.loads = 0  # how many times SQL was read (for tests and the log)

    def invalidate(self) -> None:
        """Read SQL again before the next answer: a flag was just resolved."""
        self._loaded_at = None

    async def current(self) -> tuple[Suppression, ...]:
        if self._fresh():
            return self._loaded
        async with self._lock:
            if not self._fresh():
                await self._reload()
        return self._loaded

    def _fresh(self) -> bool:
        return self._loaded_at is not None and self._clock() - self._loaded_at < self._max_age_s

    async def _reload(self) -> None:
        try:
            async with self._sessions() as session:
                records = await in_force(session)
        except (SQLAlchemyError, StorageError, OSError) as error:
            log.warning("suppressions not reloaded, keeping the %d known: %s", len(self._loaded),
                        str(error).splitlines()[0] if str(error) else type(error).__name__)
            self._loaded_at = self._clock()
            return
        self._loaded = tuple(to_suppression(record) for record in records)
        self._loaded_at = self._clock()
        self.loads += 1


def to_suppression(record: SuppressionRecord) -> Suppression:
    return Suppression(record.id, record.chunk_id, record.content_hash, record.query, record.embedder,
                       record.query_vector)
