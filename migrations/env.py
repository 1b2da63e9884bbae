"""Alembic environment for the exchange log: the async recipe, on SQLite and PostgreSQL alike.

Which database (first match wins): `alembic -x url=…`, the `sqlalchemy.url` option (set by
`storage.migrate.alembic_config(url)`), Verbatim's settings (DATABASE_URL, else the SQLite file in
VERBATIM_HOME). A program that already holds a connection can pass it as `config.attributes["connection"]`
(Alembic's "connection sharing" cookbook recipe) and no engine is made here.

SQLite cannot ALTER most things, so migrations run in batch mode there (`render_as_batch`); column types are
compared, so `alembic check` catches a changed type as well as a missing column.
"""

from __future__ import annotations

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection
from sqlalchemy.pool import NullPool

from storage.db import create_engine, ensure_sqlite_directory, parse_url
from storage.models import Base

config = context.config

if config.config_file_name is not None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def database_url() -> str:
    """The URL to migrate (see the module docstring for the order)."""
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from bot.settings import (
        Settings,  # only when no URL was given: storage itself never imports bot
    )

    return Settings().database_url_value()


def configure(**options: object) -> None:
    context.configure(target_metadata=target_metadata, compare_type=True, **options)


def run_migrations_offline() -> None:
    """`alembic upgrade head --sql`: print the SQL instead of running it."""
    url = parse_url(database_url())
    configure(url=url, literal_binds=True, dialect_opts={"paramstyle": "named"},
              render_as_batch=url.get_backend_name() == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


def do_run_migrations(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # A batch migration copies a table and drops the old one; with foreign keys on, SQLite's DROP TABLE deletes
        # the child rows first (ON DELETE CASCADE). Alembic's batch documentation: switch them off meanwhile.
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()
    configure(connection=connection, render_as_batch=sqlite)
    try:
        with context.begin_transaction():
            context.run_migrations()
    finally:
        if sqlite:
            connection.commit()
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")
            connection.commit()


async def run_async_migrations() -> None:
    url = database_url()
    ensure_sqlite_directory(url)
    engine = create_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(do_run_migrations)
    finally:
        await engine.dispose()


def run_migrations_online() -> None:
    shared = config.attributes.get("connection")
    if shared is not None:
        do_run_migrations(shared)
    else:
        asyncio.run(run_async_migrations())


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
