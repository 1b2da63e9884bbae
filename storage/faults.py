"""Is a failed write an outage (try again later) or the record's own fault (set it aside)? One pure function.

The journal keeps what the database could not take *now*; what it could never take must not wait there,
or replay retries it forever and everything behind it waits too. Its rules, first match wins:

- Timeouts (ours, `asyncio.timeout`; the pool's) and `OSError` (refused, reset, unreachable, no route:
  asyncpg raises these raw while connecting) are outages.
- A driver error SQLAlchemy marked `connection_invalidated` (the connection died under it) is an outage.
- SQLite says which: its primary result code is an outage when it is about the file or the lock (busy,
  locked, read-only, I/O, full, cannot open, corrupt, no memory), and the record's fault otherwise
  (``SQLITE_ERROR``, constraint, mismatch, too big), although sqlite3 calls most of them OperationalError.
- PostgreSQL says which, through the SQLSTATE asyncpg carries: connection (08), resources (53), operator
  intervention: shutdown, restart, statement timeout (57), system I/O (58), credentials and the database's
  name (28, 3D000: a setting to fix, not the record), a lock not granted (55P03), a read-only standby after
  a fail-over (25006), and a deadlock or serialization failure (40P01, 40001) are outages. Any other SQLSTATE
  (23 constraint, 22 data, 42 a bug in our SQL) is not.
- Without either: `OperationalError` and `InterfaceError` are outages, except asyncpg's own client-side
  `DataError` (an `InterfaceError` that is also a `ValueError`: a parameter it cannot encode).
- Anything else (IntegrityError, DataError, ProgrammingError, a Python error in our code) is not.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

# SQLite primary result codes (https://sqlite.org/rescode.html) that are about the file or its lock.
SQLITE_OUTAGE_CODES = frozenset({
    5,   # SQLITE_BUSY
    6,   # SQLITE_LOCKED
    7,   # SQLITE_NOMEM
    8,   # SQLITE_READONLY
    10,  # SQLITE_IOERR
    11,  # SQLITE_CORRUPT
    13,  # SQLITE_FULL
    14,  # SQLITE_CANTOPEN
    15,  # SQLITE_PROTOCOL
    26,  # SQLITE_NOTADB
})
POSTGRES_OUTAGE_CLASSES = frozenset({"08", "28", "53", "57", "58"})
POSTGRES_OUTAGE_STATES = frozenset({"3D000", "55P03", "25006", "40001", "40P01"})


def is_outage(error: BaseException) -> bool:
    """True when the database could not take the write now and a later try should succeed (see the module)."""
    if isinstance(error, TimeoutError | PoolTimeout | OSError):
        return True
    if not isinstance(error, DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    driver_error = error.orig
    sqlite_code = getattr(driver_error, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int):
        return sqlite_code & 0xFF in SQLITE_OUTAGE_CODES  # extended codes keep the primary in the low byte
    sqlstate = getattr(driver_error, "sqlstate", None)
    if isinstance(sqlstate, str) and len(sqlstate) == 5:
        return sqlstate[:2] in POSTGRES_OUTAGE_CLASSES or sqlstate in POSTGRES_OUTAGE_STATES
    if isinstance(error, InterfaceError) and isinstance(getattr(driver_error, "__cause__", None), ValueError):
        return False
    return isinstance(error, OperationalError | InterfaceError)
