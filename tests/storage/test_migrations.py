"""Alembic creates the schema the models describe, and a stale, empty or unreachable database is named clearly."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection

from storage.db import check_schema, create_engine
from storage.errors import DatabaseUnavailable, SchemaMissing, SchemaOutdated
from storage.migrate import alembic_config, head_revision, stamp, upgrade
from storage.models import Base
from tests.storage.database import Database


def _diffs(connection: Connection) -> list[object]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_migrating_an_empty_database_gives_exactly_the_models_schema(empty_database_url: str) -> None:
    """`alembic upgrade head` on an empty database, then nothing left for autogenerate to find (`alembic check`)."""
    await upgrade(empty_database_url)
    engine = create_engine(empty_database_url)
    try:
        async with engine.connect() as connection:
            assert await connection.run_sync(_diffs) == []
        await check_schema(engine)
    finally:
        await engine.dispose()
    # The CLI's own `alembic check`, through env.py with the URL: raises when models and migrations drift.
    await asyncio.to_thread(command.check, alembic_config(empty_database_url))


async def test_downgrade_to_base_and_upgrade_again_leaves_a_working_schema(db: Database) -> None:
    """The first revision can be rolled back and re-applied (how a botched release is undone)."""
    await asyncio.to_thread(command.downgrade, alembic_config(db.url), "base")
    with pytest.raises(SchemaMissing):
        await check_schema(db.engine)
    await upgrade(db.url)
    await check_schema(db.engine)


async def test_an_empty_database_says_to_run_alembic_upgrade(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url)
    try:
        with pytest.raises(SchemaMissing) as caught:
            await check_schema(engine)
    finally:
        await engine.dispose()
    message = str(caught.value)
    assert "has no Verbatim tables: run `verbatim db upgrade`" in message
    assert "\n" not in message


async def test_a_database_at_an_older_revision_says_which_revision_and_what_to_run(db: Database) -> None:
    """A database left at a revision this code does not expect (simulated by rewriting alembic_version)."""
    version = sa.table("alembic_version", sa.column("version_num"))
    async with db.engine.begin() as connection:
        await connection.execute(sa.update(version).values(version_num="0000_older"))
    with pytest.raises(SchemaOutdated) as caught:
        await check_schema(db.engine)
    message = str(caught.value)
    assert f"is at revision 0000_older but this version needs {head_revision()}: run `verbatim db upgrade`" in message
    assert "\n" not in message


async def test_tables_without_a_revision_are_reported_as_outdated_not_missing(db: Database) -> None:
    """Tables made outside Alembic (no alembic_version row) are not mistaken for an empty database."""
    await stamp(db.url, "base")
    with pytest.raises(SchemaOutdated, match=r"is at revision \(none\) but this version needs"):
        await check_schema(db.engine)


async def test_a_database_that_does_not_connect_is_named_without_its_password(down_url: str) -> None:
    engine = create_engine(down_url, connect_timeout_s=5)
    try:
        with pytest.raises(DatabaseUnavailable) as caught:
            await check_schema(engine)
    finally:
        await engine.dispose()
    message = str(caught.value)
    assert message.startswith("cannot connect to the database ")
    assert "not-the-password" not in message
    assert "\n" not in message
    if "@" in down_url:
        assert "postgres:***@127.0.0.1" in message


async def test_the_help_channels_revision_keeps_every_exchange_and_its_feedback(empty_database_url: str) -> None:
    """0005 rebuilds the exchanges table on SQLite (a new outcome in its CHECK): nothing under it is lost."""
    await upgrade(empty_database_url, "0004")
    engine = create_engine(empty_database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(sa.text(
                "INSERT INTO exchanges (id, created_at, source, question, outcome, timings_ms, route) "
                "VALUES ('5d1f5c2e-0000-4000-8000-000000000001', '2026-12-01 10:00:00+00:00', 'slack', 'q', "
                "'answered', '{}', '{}')"))
            await connection.execute(sa.text(
                "INSERT INTO feedback (id, exchange_id, user_id, positive, created_at, updated_at) VALUES "
                "('5d1f5c2e-0000-4000-8000-0000000000f1', '5d1f5c2e-0000-4000-8000-000000000001', 'U0ASKER', "
                "true, '2026-12-01 10:01:00+00:00', '2026-12-01 10:01:00+00:00')"))
        await upgrade(empty_database_url)
        async with engine.connect() as connection:
            counts = [(await connection.execute(sa.text(f"SELECT count(*) FROM {table}"))).scalar_one()
                      for table in ("exchanges", "feedback")]
        assert counts == [1, 1]
    finally:
        await engine.dispose()
