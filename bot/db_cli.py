"""``verbatim db upgrade`` / ``verbatim db check``: the exchange log's schema, from an installed package.

The Alembic migrations ship inside the package (``migrations/``, found by ``storage.migrate``), so an image or a
``pip install`` needs no checkout and no ``alembic.ini``. Both commands use DATABASE_URL (else the SQLite file
in VERBATIM_HOME), print one line, and exit 1 with one line naming the database (never its password) and what
to do when it cannot be reached or is not at this version's revision.
"""

from __future__ import annotations

import click
from sqlalchemy.exc import DBAPIError

from bot.cli_support import async_command, load_settings
from bot.runtime.storage import open_log
from storage import migrate
from storage.db import parse_url, unavailable
from storage.errors import StorageError, mask_url

_run = async_command({StorageError: 1})


@click.group("db")
def db() -> None:
    """The exchange log's schema (Alembic migrations shipped inside the package)."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="The Alembic revision to upgrade to.")
@_run
async def upgrade_command(revision: str) -> None:
    """Create the exchange log's tables, or bring them to this version (safe to run on every release)."""
    url = load_settings().database_url_value()
    parsed = parse_url(url)
    try:
        await migrate.upgrade(url, revision)
    except (DBAPIError, OSError, TimeoutError) as error:
        raise unavailable(parsed, error) from error
    reached = migrate.head_revision() if revision == "head" else revision
    click.echo(f"the database {mask_url(parsed)} is at revision {reached}")


@db.command("check")
@_run
async def check_command() -> None:
    """Exit 0 when the exchange log answers and is at this version's revision, else 1 saying what to run."""
    settings = load_settings()
    async with open_log(settings):  # connects and checks the revision, or says what to run
        pass
    click.echo(f"the database {mask_url(settings.database_url_value())} is at revision {migrate.head_revision()}, "
               "as this version needs")
