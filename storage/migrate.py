"""Alembic from code: the revision this code needs, and `alembic upgrade` for a given URL.

`alembic upgrade head` (the release step) is how a database is created or upgraded. This module lets the
start-up check name the expected revision, and lets tests and an embedded set-up run the very same
migrations through Alembic's API, so the migrations are what gets tested, not `metadata.create_all`.

The migrations folder sits next to this package (both in a checkout and in an installed wheel).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config for our migrations; with `url`, that database instead of the settings' one."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        # ConfigParser interpolates "%": a percent-encoded password must be doubled to survive.
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision() -> str:
    """The revision this code's models correspond to."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no Alembic revisions found in {MIGRATIONS_DIR}")
    return head


def known_revisions() -> set[str]:
    """Every revision id this code ships."""
    return {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


async def upgrade(url: str, revision: str = "head") -> None:
    """Run `alembic upgrade REVISION` against `url`.

    In a worker thread: the async env.py starts its own event loop, which cannot nest in the caller's.
    """
    await asyncio.to_thread(command.upgrade, alembic_config(url), revision)


async def stamp(url: str, revision: str) -> None:
    """Run `alembic stamp REVISION` against `url` (record a revision without running migrations)."""
    await asyncio.to_thread(command.stamp, alembic_config(url), revision)
