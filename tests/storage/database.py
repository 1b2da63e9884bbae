"""The handle storage tests get from the `db` fixture."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker


@dataclass(frozen=True)
class Database:
    """A migrated database of this test's own: its URL, the engine and the session factory built from it."""

    kind: str
    url: str
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
