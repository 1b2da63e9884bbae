"""What can go wrong in storage, as one small hierarchy, so callers catch our errors and not driver ones.

    StorageError
    ├── InvalidDatabaseURL   the URL does not parse, or names a driver that is not installed
    ├── DatabaseUnavailable  the database does not answer (down, refused, wrong credentials, unreadable file)
    ├── SchemaMissing        it answers but holds no Verbatim tables: `alembic upgrade head` was never run
    ├── SchemaOutdated       it answers but sits at another Alembic revision than this code needs
    ├── UnknownExchange      no exchange has that id
    ├── UnknownFlag          no flag has that id
    └── JournalError         the local journal cannot be written (full disk, unwritable path)

Every message is one line a person can act on, and never contains a database password: URLs are shown
through `mask_url` (SQLAlchemy's ``render_as_string(hide_password=True)``) and driver messages are scrubbed.
The CLI turns these into one line and a non-zero exit; nothing here prints or exits.
"""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError


class StorageError(Exception):
    """Base of every error raised on purpose by `storage`."""


class InvalidDatabaseURL(StorageError):
    """The database URL cannot be used at all (does not parse, or its driver is missing)."""


class DatabaseUnavailable(StorageError):
    """The database did not accept a connection."""


class SchemaMissing(StorageError):
    """The database has none of Verbatim's tables."""


class SchemaOutdated(StorageError):
    """The database's Alembic revision is not the one this code was written for."""


class UnknownExchange(StorageError, LookupError):
    """An exchange id that is not in the log."""


class UnknownFlag(StorageError, LookupError):
    """A flag id that is not in the log."""


class JournalError(StorageError):
    """The local journal could not be written, so an exchange may be lost unless the caller keeps it."""


def mask_url(url: str | URL) -> str:
    """The URL as it may appear in a message or a log line: the password replaced by ``***``."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "<a database URL that does not parse>"
    return parsed.render_as_string(hide_password=True)


def one_line(text: str, *, secret: str | None = None) -> str:
    """A driver message squeezed to one line, with `secret` (a password) cut out wherever it appears."""
    if secret:
        text = text.replace(secret, "***")
    return " ".join(text.split())
