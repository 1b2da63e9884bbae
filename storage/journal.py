"""Nothing is lost: exchanges that could not be written to the database wait in a local journal.

The journal is an append-only JSONL file, one `ExchangeRecord` per line. Its rules:

- `append` returns only after the line is on disk (fsync). If it cannot be (full disk, unwritable path) it
  raises `JournalError` with one line saying where and why: the caller must then log the exchange loudly,
  because it exists nowhere else.
- Only an outage is journaled: `storage.faults.is_outage` says whether the database could not take a write
  *now* (down, refused, timed out, locked). A write it refused for the record itself (a constraint, a bug in
  our SQL, a value it cannot store) would be refused forever, so after `REPLAY_ATTEMPTS` tries the record is
  logged with its traceback and set aside in the dead-letter file ``<journal>.dead`` (one JSON object a line:
  the record, the error's class and message, the attempts, when), counted by `/metrics` and listed by
  `verbatim review list --errors`. Nothing is dropped either way: once the cause is fixed, `requeue` moves
  set-aside records back into the journal, in the order they were set aside (`verbatim review requeue`
  replays them at once; one refused again is set aside again).
- `replay` writes the waiting records with `record_exchange`, in order. An outage stops it, keeping that
  record and everything after it; a refused record is set aside and the replay goes on with the rest, so
  one poisoned record never blocks the ones behind it. `record_exchange` is idempotent on the exchange id,
  so a crash between writing a record and compacting the file never produces a duplicate: the record is
  simply written again (and a crash after setting one aside may list it twice in ``.dead``, never lose it).
- Several processes may share one journal. Appends and the compaction take an exclusive `flock` on
  ``<journal>.lock`` for the few milliseconds they touch the file; a replay additionally holds
  ``<journal>.replay.lock`` for its whole run, and a second replay that finds it taken returns at once
  (the first one is doing the work). Compaction removes exactly the lines this replay handled, so lines
  appended meanwhile stay. A replay runs on the event loop, so its waits on ``<journal>.lock`` and its
  fsyncs run in a worker thread (`asyncio.to_thread`): another process appending never stalls the bot.
- A line that cannot be read back as a record (a torn write after a power cut) is moved to
  ``<journal>.bad`` rather than blocking every later record.

`write_or_journal` is the one call the answer path makes: the database if it can, the journal if it is
down, the dead-letter file if it refuses the record.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
from collections import Counter
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from storage.errors import JournalError, one_line
from storage.exchanges import record_exchange
from storage.faults import is_outage
from storage.records import (
    ExchangeRecord,
    exchange_from_json,
    exchange_to_json,
    json_default,
)

logger = logging.getLogger(__name__)

JOURNAL_FORMAT = 1
JOURNAL_NAME = "journal.jsonl"  # in VERBATIM_HOME
# A refused write is tried this often before it is set aside: a second writer racing us on the same id
# (two replicas, or a late write and its replay) succeeds on the next try; a constraint never does.
REPLAY_ATTEMPTS = 3
# A database that has not taken a write in this long counts as down (the exchange is journaled); the log's
# other writers (a hand-off, `bot.handoffs`) wait no longer either.
WRITE_TIMEOUT_S = 10.0
RETRY_PAUSE_S = 0.1  # times the attempt number
DETAIL_CHARS = 500  # of the driver's message kept with a dead letter

# What the log-and-carry-on callers (claims, leases, reactions, readiness) catch. Wider than an outage
# (DBAPIError includes IntegrityError): what is journaled is decided by `is_outage`, never by this tuple.
DATABASE_DOWN = (OperationalError, DBAPIError, PoolTimeout, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What a replay did: records written, records still waiting, unreadable lines moved to `.bad`, records
    the database refused, set aside in `.dead`."""

    written: int
    remaining: int
    set_aside: int = 0
    busy: bool = False  # another process was already replaying this journal; this call did nothing
    dead_lettered: int = 0


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record the database refused, as the dead-letter file keeps it."""

    record: ExchangeRecord
    error: str  # the exception's class, e.g. IntegrityError
    detail: str  # the driver's message on one line (never the SQL's parameters)
    attempts: int
    set_aside_at: datetime


class Journal:
    """The append-only file of exchanges waiting for the database (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.replay_lock_path = self.path.with_name(self.path.name + ".replay.lock")
        self.bad_path = self.path.with_name(self.path.name + ".bad")
        self.dead_path = self.path.with_name(self.path.name + ".dead")

    @classmethod
    def in_home(cls, home: str | os.PathLike[str]) -> Journal:
        """The journal of a Verbatim home (VERBATIM_HOME): the bot, the CLI and the review desk share it."""
        return cls(Path(home) / JOURNAL_NAME)

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"

    def append(self, record: ExchangeRecord) -> None:
        """Add the record and fsync; JournalError if it cannot be made durable."""
        self._append_line(self.path, _journal_line(record), "write the journal")

    def set_aside(self, record: ExchangeRecord, error: BaseException, attempts: int) -> None:
        """Add the record to the dead-letter file and fsync; JournalError if it cannot be made durable."""
        self._append_line(self.dead_path, _dead_letter_line(record, error, attempts), "write the dead-letter file")

    def pending(self) -> int:
        """How many records are waiting."""
        return self._count(self.path)

    def waiting_ids(self) -> list[str]:
        """The ids of the exchanges waiting, oldest first (a line that does not read back has none)."""
        ids: list[str] = []
        for line in self._lines(self.path):
            try:
                ids.append(_parse(line).id)
            except (ValueError, KeyError, TypeError):
                continue  # the next replay moves it to `.bad` and logs it
        return ids

    def dead_lettered(self) -> int:
        """How many records the database refused and the dead-letter file keeps."""
        return self._count(self.dead_path)

    def _count(self, path: Path) -> int:
        return len(self._lines(path))

    def _lines(self, path: Path) -> list[bytes]:
        """The file's lines, read under the lock (none, and no lock file made, when it does not exist)."""
        if not path.exists():
            return []
        with _exclusive(self.lock_path):
            return _read_lines(path)

    def dead_letters(self) -> list[DeadLetter]:
        """The refused records, oldest first; a line that does not read back is logged and skipped."""
        letters: list[DeadLetter] = []
        for number, line in enumerate(self._lines(self.dead_path), start=1):
            try:
                letters.append(_parse_dead_letter(line))
            except (ValueError, KeyError, TypeError) as error:
                logger.error("dead-letter file %s: line %d is not readable (%s); left as it is", self.dead_path,
                             number, error)
        return letters

    def requeue(self, exchange_ids: Collection[str] | None = None) -> list[ExchangeRecord]:
        """Move set-aside records back into the journal (``None``: every one), in the dead-letter file's order and
        behind what already waits, so the next replay writes them (once the cause is fixed); the records moved.

        The journal has them (fsynced) before the dead-letter file loses them: a crash in between leaves a record
        in both, written once by id and listed until the next requeue, never in neither. A line that does not read
        back stays where it is. JournalError when either file cannot be written.
        """
        try:
            with _exclusive(self.lock_path):
                keep: list[bytes] = []
                moved: dict[str, ExchangeRecord] = {}  # by id: a letter kept twice (a crash) is requeued once
                for line in _read_lines(self.dead_path):
                    try:
                        record = _parse_dead_letter(line).record
                    except (ValueError, KeyError, TypeError):
                        keep.append(line)  # dead_letters() logs it; here it is only left alone
                        continue
                    if exchange_ids is None or record.id in exchange_ids:
                        moved.setdefault(record.id, record)
                    else:
                        keep.append(line)
                if moved:
                    _append_durably(self.path, b"".join(_journal_line(r).encode("utf-8") + b"\n"
                                                        for r in moved.values()))
                    _rewrite_durably(self.dead_path, keep)
        except OSError as error:
            raise JournalError(f"cannot requeue from {self.dead_path}: {error.strerror or error}") from error
        return list(moved.values())

    async def replay(self, session_factory: async_sessionmaker[AsyncSession], *, timeout_s: float = WRITE_TIMEOUT_S,
                     attempts: int = REPLAY_ATTEMPTS) -> ReplayResult:
        """Write waiting records to the database, oldest first, and drop them from the file.

        An outage (each write gets `timeout_s`) stops it and keeps that record and the rest; a record refused
        `attempts` times is set aside in the dead-letter file and the replay goes on.
        """
        if not await asyncio.to_thread(self.path.exists):
            return ReplayResult(written=0, remaining=0)
        # LOCK_NB never waits, so this lock is taken on the loop: taken in a thread, a cancelled caller
        # could leave it held for good.
        with _try_exclusive(self.replay_lock_path) as acquired:
            if not acquired:
                return ReplayResult(written=0, remaining=await asyncio.to_thread(self.pending), busy=True)
            snapshot = await asyncio.to_thread(self._snapshot)
            handled: list[bytes] = []
            bad: list[bytes] = []
            dead: list[bytes] = []
            written = 0
            for line in snapshot:
                try:
                    record = _parse(line)
                except (ValueError, KeyError, TypeError) as error:
                    logger.error("journal %s: a line is not a readable exchange (%s); moved to %s",
                                 self.path, error, self.bad_path)
                    bad.append(line)
                    handled.append(line)
                    continue
                failure = await _write(session_factory, record, timeout_s=timeout_s, attempts=attempts)
                if failure is None:
                    written += 1
                    handled.append(line)
                elif is_outage(failure):
                    logger.warning("journal %s: replay stopped at exchange %s: %s", self.path, record.id,
                                   type(failure).__name__)
                    break
                else:
                    logger.error("journal %s: the database refused exchange %s %d times; set aside in %s",
                                 self.path, record.id, attempts, self.dead_path, exc_info=_loggable(failure))
                    dead.append(_dead_letter_line(record, failure, attempts).encode("utf-8"))
                    handled.append(line)
            remaining = await asyncio.to_thread(self._compact, handled, bad, dead)
        return ReplayResult(written=written, remaining=remaining, set_aside=len(bad), dead_lettered=len(dead))

    def _append_line(self, path: Path, line: str, what: str) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _exclusive(self.lock_path):
                _append_durably(path, (line + "\n").encode("utf-8"))
        except OSError as error:
            raise JournalError(f"cannot {what} {path}: {error.strerror or error}") from error

    def _snapshot(self) -> list[bytes]:
        with _exclusive(self.lock_path):
            return _read_lines(self.path)

    def _compact(self, handled: list[bytes], bad: list[bytes], dead: list[bytes]) -> int:
        """Remove the handled lines (one occurrence each) and return how many remain. Atomic: temp + rename.

        The set-aside lines are on disk before the journal shrinks, so a crash in between keeps them twice,
        never nowhere.
        """
        try:
            with _exclusive(self.lock_path):
                for path, lines in ((self.bad_path, bad), (self.dead_path, dead)):
                    if lines:
                        _append_durably(path, b"".join(line + b"\n" for line in lines))
                to_remove = Counter(handled)
                keep: list[bytes] = []
                for line in _read_lines(self.path):
                    if to_remove[line] > 0:
                        to_remove[line] -= 1
                    else:
                        keep.append(line)
                _rewrite_durably(self.path, keep)
                return len(keep)
        except OSError as error:
            # The records are in the database; a journal that could not shrink only means they are
            # written again (harmlessly) by the next replay.
            raise JournalError(f"cannot compact the journal {self.path}: {error.strerror or error}") from error


async def write_or_journal(
    session_factory: async_sessionmaker[AsyncSession],
    journal: Journal,
    record: ExchangeRecord,
    *,
    timeout_s: float = WRITE_TIMEOUT_S,
    attempts: int = REPLAY_ATTEMPTS,
) -> bool:
    """Record the exchange in the database (True), or, if it cannot take it now, in the journal (False); a
    record the database refuses `attempts` times is set aside in the dead-letter file (False too).

    A database that does not answer within `timeout_s` counts as down. Raises JournalError only when the
    exchange could be kept nowhere.
    """
    failure = await _write(session_factory, record, timeout_s=timeout_s, attempts=attempts)
    if failure is None:
        return True
    if is_outage(failure):
        logger.warning("exchange %s not written to the database (%s); kept in the journal %s",
                       record.id, type(failure).__name__, journal.path)
        await asyncio.to_thread(journal.append, record)
    else:
        logger.error("the database refused exchange %s %d times; set aside in %s", record.id, attempts,
                     journal.dead_path, exc_info=_loggable(failure))
        await asyncio.to_thread(journal.set_aside, record, failure, attempts)
    return False


async def _write(session_factory: async_sessionmaker[AsyncSession], record: ExchangeRecord, *, timeout_s: float,
                 attempts: int) -> Exception | None:
    """None once the record is written; else the outage that stopped it, or the last refusal of `attempts`."""
    attempt = 1
    while True:
        try:
            async with asyncio.timeout(timeout_s), session_factory() as session:
                await record_exchange(session, record)
        except Exception as error:  # every failure goes back to the caller, which sorts it with is_outage
            if is_outage(error) or attempt >= attempts:
                return error
            logger.warning("exchange %s: the database refused it (%s), try %d of %d; trying again", record.id,
                           type(error).__name__, attempt, attempts)
        else:
            return None
        await asyncio.sleep(RETRY_PAUSE_S * attempt)
        attempt += 1


def _journal_line(record: ExchangeRecord) -> str:
    return json.dumps({"v": JOURNAL_FORMAT, "exchange": exchange_to_json(record)},
                      ensure_ascii=False, default=json_default)


def _parse(line: bytes) -> ExchangeRecord:
    data = json.loads(line)
    if data.get("v") != JOURNAL_FORMAT:
        raise ValueError(f"unknown journal format {data.get('v')!r}")
    return exchange_from_json(data["exchange"])


class RefusedWrite(Exception):
    """What the log shows of a write the database refused: the error's class and the first line of its reason."""


def _reason(error: BaseException) -> str:
    """The driver's message, first line only: PostgreSQL's DETAIL after it repeats the failing row (the question),
    and str(DBAPIError) adds the statement."""
    reason = error.orig if isinstance(error, DBAPIError) and error.orig is not None else error
    lines = str(reason).splitlines()
    return one_line(lines[0] if lines else type(reason).__name__)[:DETAIL_CHARS]


def _loggable(error: BaseException) -> tuple[type[BaseException], BaseException, TracebackType | None]:
    """exc_info for a refused write: the frames it failed in, its class and reason, none of its chained errors
    (asyncpg's carries the DETAIL)."""
    return RefusedWrite, RefusedWrite(f"{type(error).__name__}: {_reason(error)}"), error.__traceback__


def _dead_letter_line(record: ExchangeRecord, error: BaseException, attempts: int) -> str:
    return json.dumps({
        "v": JOURNAL_FORMAT, "exchange": exchange_to_json(record), "error": type(error).__name__,
        "detail": _reason(error), "attempts": attempts, "set_aside_at": datetime.now(UTC).isoformat(),
    }, ensure_ascii=False, default=json_default)


def _parse_dead_letter(line: bytes) -> DeadLetter:
    data = json.loads(line)
    if data.get("v") != JOURNAL_FORMAT:
        raise ValueError(f"unknown journal format {data.get('v')!r}")
    return DeadLetter(record=exchange_from_json(data["exchange"]), error=str(data["error"]),
                      detail=str(data["detail"]), attempts=int(data["attempts"]),
                      set_aside_at=datetime.fromisoformat(data["set_aside_at"]))


def _read_lines(path: Path) -> list[bytes]:
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return []
    return [line for line in content.split(b"\n") if line.strip()]


def _ends_without_newline(file: BinaryIO) -> bool:
    fileno = file.fileno()
    size = os.fstat(fileno).st_size
    return size > 0 and os.pread(fileno, 1, size - 1) != b"\n"


def _append_durably(path: Path, data: bytes) -> None:
    """Append and fsync, under the journal's lock (held by the caller)."""
    with open(path, "a+b") as file:
        if _ends_without_newline(file):
            data = b"\n" + data  # never glue a record onto a torn last line
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def _rewrite_durably(path: Path, lines: list[bytes]) -> None:
    """Replace the file's lines at once (temp + rename, then the folder fsynced), under the journal's lock."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as file:
        file.write(b"".join(line + b"\n" for line in lines))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def _try_exclusive(lock_path: Path) -> Iterator[bool]:
    fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
        else:
            yield True
    finally:
        os.close(fd)
