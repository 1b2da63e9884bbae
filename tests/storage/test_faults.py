"""What is journaled and what is set aside: an outage waits for the database, a refused record does not block."""

from __future__ import annotations

import socket
import sqlite3

import pytest
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    NoResultFound,
    OperationalError,
    ProgrammingError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout

from storage.faults import is_outage

asyncpg = pytest.importorskip("asyncpg")
PG = PGDialect_asyncpg.import_dbapi()  # the DB-API adapter SQLAlchemy wraps asyncpg's errors in


def sqlite_error(kind: type[sqlite3.Error], code: int, message: str) -> sqlite3.Error:
    """A sqlite3 error as the driver raises it, with its result code."""
    error = kind(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


def postgres_error(kind: type[Exception], driver_error: Exception) -> Exception:
    """asyncpg's error as SQLAlchemy's asyncpg adapter translates it (its class by the table, the SQLSTATE kept)."""
    for cls in type(driver_error).__mro__:
        if cls in PG._asyncpg_error_translate:
            adapted = PG._asyncpg_error_translate[cls](str(driver_error), driver_error)
            adapted.__cause__ = driver_error
            return kind("INSERT INTO exchanges ...", None, adapted)
    raise AssertionError(f"asyncpg's {type(driver_error).__name__} has no translation")


def invalidated(error: DBAPIError) -> DBAPIError:
    error.connection_invalidated = True
    return error


CASES = [
    # (what happened, the error, journaled?)
    ("our own timeout", TimeoutError(), True),
    ("the pool had no connection in time", PoolTimeout("QueuePool limit reached"), True),
    ("connection refused", ConnectionRefusedError(111, "Connect call failed"), True),
    ("asyncpg's 'Multiple exceptions' OSError", OSError("Multiple exceptions: [Errno 111] ..."), True),
    ("the host name does not resolve", socket.gaierror(-2, "Name or service not known"), True),
    ("the connection died under a statement", invalidated(DBAPIError("SELECT 1", None, Exception("gone"))), True),
    ("SQLite: database is locked", OperationalError("INSERT", None, sqlite_error(
        sqlite3.OperationalError, 5, "database is locked")), True),
    ("SQLite: unable to open database file", OperationalError("INSERT", None, sqlite_error(
        sqlite3.OperationalError, 14, "unable to open database file")), True),
    ("SQLite: disk I/O error (an extended code)", OperationalError("INSERT", None, sqlite_error(
        sqlite3.OperationalError, 10 | (4 << 8), "disk I/O error")), True),
    ("SQLite: database or disk is full", OperationalError("INSERT", None, sqlite_error(
        sqlite3.OperationalError, 13, "database or disk is full")), True),
    ("SQLite: a unique constraint", IntegrityError("INSERT", None, sqlite_error(
        sqlite3.IntegrityError, 2067, "UNIQUE constraint failed: citations.exchange_id, citations.position")), False),
    ("SQLite: a syntax error in our SQL (sqlite3 says OperationalError)", OperationalError("INSERT", None, sqlite_error(
        sqlite3.OperationalError, 1, 'near "INSRT": syntax error')), False),
    ("SQLite: a column our SQL names is missing", OperationalError("INSERT", None, sqlite_error(
        sqlite3.OperationalError, 1, "table exchanges has no column named mood")), False),
    ("PostgreSQL: shut down by the administrator", postgres_error(
        DBAPIError, asyncpg.exceptions.AdminShutdownError("terminating connection")), True),
    ("PostgreSQL: still starting up", postgres_error(
        DBAPIError, asyncpg.exceptions.CannotConnectNowError("the database system is starting up")), True),
    ("PostgreSQL: the connection was lost", postgres_error(
        InterfaceError, asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed")), True),
    ("PostgreSQL: too many connections", postgres_error(
        DBAPIError, asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients")), True),
    ("PostgreSQL: the password was rotated", postgres_error(
        ProgrammingError, asyncpg.exceptions.InvalidPasswordError("password authentication failed")), True),
    ("PostgreSQL: statement timeout", postgres_error(
        DBAPIError, asyncpg.exceptions.QueryCanceledError("canceling statement due to statement timeout")), True),
    ("PostgreSQL: a lock not granted in time", postgres_error(
        DBAPIError, asyncpg.exceptions.LockNotAvailableError("could not obtain lock")), True),
    ("PostgreSQL: a deadlock", postgres_error(
        DBAPIError, asyncpg.exceptions.DeadlockDetectedError("deadlock detected")), True),
    ("PostgreSQL: a read-only standby after a fail-over", postgres_error(
        DBAPIError, asyncpg.exceptions.ReadOnlySQLTransactionError("read-only transaction")), True),
    ("PostgreSQL: a unique constraint", postgres_error(
        IntegrityError, asyncpg.exceptions.UniqueViolationError("duplicate key value")), False),
    ("PostgreSQL: a check constraint", postgres_error(
        IntegrityError, asyncpg.exceptions.CheckViolationError("violates check constraint")), False),
    ("PostgreSQL: a value too long for its column", postgres_error(
        DBAPIError, asyncpg.exceptions.StringDataRightTruncationError("value too long")), False),
    ("PostgreSQL: a table our SQL names is missing", postgres_error(
        ProgrammingError, asyncpg.exceptions.UndefinedTableError('relation "exchanges" does not exist')), False),
    ("asyncpg cannot encode a parameter (client-side DataError)", postgres_error(
        InterfaceError, asyncpg.exceptions._base.DataError("invalid input for query argument $1")), False),
    ("a driver InterfaceError without more to go on", InterfaceError("SELECT 1", None, Exception("closed")), True),
    ("a driver OperationalError without more to go on", OperationalError("SELECT 1", None, Exception("x")), True),
    ("a DataError without more to go on", DataError("INSERT", None, Exception("bad value")), False),
    ("a bug in our code", TypeError("unsupported operand"), False),
    ("SQLAlchemy's own error, not the driver's", NoResultFound(), False),
]


@pytest.mark.parametrize(("case", "error", "journaled"), CASES, ids=[case for case, _, _ in CASES])
def test_only_an_outage_is_journaled(case: str, error: BaseException, journaled: bool) -> None:
    assert is_outage(error) is journaled, case
