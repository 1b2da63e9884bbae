"""Nothing is lost: exchanges that could not be written to the database wait in a local journal.

The journal is an append-only JSONL file, one `ExchangeRecord` per line. Its rules:

- `append` returns only after the line is on disk (fsync). If it cannot be (full disk, unwritable path) it
  raises `JournalError` with one line saying where and why: the caller must then log the exchange loudly,
  because it exists nowhere else.
- `replay` writes the waiting records with `record_exchange`, in order, and stops at the first database
  failure, keeping that record and everything after it. `record_exchange` is idempotent on the exchange id,
  so a crash between writing a record and compacting the file never produces a duplicate: the record is
  simply written again.
- Several processes may share one journal. Appends and the compaction take an exclusive `flock` on
  ``<journal>.lock`` for the few milliseconds they touch the file; a replay additionally holds
  ``<journal>.replay.lock`` for its whole run, and a second replay that finds it taken returns at once
  (the first one is doing the work). Compaction removes exactly the lines this replay handled, so lines
  appended meanwhile stay.
- A line that cannot be read back as a record (a torn write after a power cut) is moved to
  ``<journal>.bad`` rather than blocking every later record.

`write_or_journal` is the one call the answer path makes: the database if it can, the journal if not.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from storage.errors import JournalError
from storage.exchanges import record_exchange
from storage.records import (
    ExchangeRecord,
    exchange_from_json,
    exchange_to_json,
    json_default,
)

logger = logging.getLogger(__name__)

JOURNAL_FORMAT = 1

# What "the database could not take it right now" looks like; anything else is a bug and propagates.
DATABASE_DOWN = (OperationalError, DBAPIError, PoolTimeout, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What a replay did: records written, records still waiting, unreadable lines moved to `.bad`."""

    written: int
    remaining: int
    set_aside: int = 0
    busy: bool = False  # another process was already replaying this journal; this call did nothing


class Journal:
    """The append-only file of exchanges waiting for the database (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.replay_lock_path = self.path.with_name(self.path.name + ".replay.lock")
        self.bad_path = self.path.with_name(self.path.name + ".bad")

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"

    def append(self, record: ExchangeRecord) -> None:
        """Add the record and fsync; JournalError if it cannot be made durable."""
        line = json.dumps({"v": JOURNAL_FORMAT, "exchange": exchange_to_json(record)},
                          ensure_ascii=False, default=json_default)
        data = (line + "\n").encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _exclusive(self.lock_path), open(self.path, "a+b") as file:
                if _ends_without_newline(file):
                    data = b"\n" + data  # never glue a record onto a torn last line
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
        except OSError as error:
            raise JournalError(f"cannot write the journal {self.path}: {error.strerror or error}") from error

    def pending(self) -> int:
        """How many records are waiting."""
        if not self.path.exists():
            return 0
        with _exclusive(self.lock_path):
            return len(self._read_lines())

    async def replay(self, session_factory: async_sessionmaker[AsyncSession], *, timeout_s: float = 10.0) -> ReplayResult:
        """Write waiting records to the database, oldest first, and drop them from the file.

        Stops at the first database failure (each write gets `timeout_s`) and keeps that record and the rest.
        """
        if not self.path.exists():
            return ReplayResult(written=0, remaining=0)
        with _try_exclusive(self.replay_lock_path) as acquired:
            if not acquired:
                return ReplayResult(written=0, remaining=self.pending(), busy=True)
            with _exclusive(self.lock_path):
                snapshot = self._read_lines()
            handled: list[bytes] = []
            bad: list[bytes] = []
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
                try:
                    async with asyncio.timeout(timeout_s), session_factory() as session:
                        await record_exchange(session, record)
                except DATABASE_DOWN as error:
                    logger.warning("journal %s: replay stopped at exchange %s: %s", self.path, record.id,
                                   type(error).__name__)
                    break
                written += 1
                handled.append(line)
            remaining = self._compact(handled, bad)
        return ReplayResult(written=written, remaining=remaining, set_aside=len(bad))

    def _read_lines(self) -> list[bytes]:
        try:
            content = self.path.read_bytes()
        except FileNotFoundError:
            return []
        return [line for line in content.split(b"\n") if line.strip()]

    def _compact(self, handled: list[bytes], bad: list[bytes]) -> int:
        """Remove the handled lines (one occurrence each) and return how many remain. Atomic: temp + rename."""
        try:
            with _exclusive(self.lock_path):
                if bad:
                    with open(self.bad_path, "ab") as file:
                        file.write(b"".join(line + b"\n" for line in bad))
                        file.flush()
                        os.fsync(file.fileno())
                to_remove = Counter(handled)
                keep: list[bytes] = []
                for line in self._read_lines():
                    if to_remove[line] > 0:
                        to_remove[line] -= 1
                    else:
                        keep.append(line)
                temporary = self.path.with_name(self.path.name + ".tmp")
                with open(temporary, "wb") as file:
                    file.write(b"".join(line + b"\n" for line in keep))
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, self.path)
                _fsync_directory(self.path.parent)
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
    timeout_s: float = 10.0,
) -> bool:
    """Record the exchange in the database (True), or, if the database cannot take it now, in the journal (False).

    A database that does not answer within `timeout_s` counts as down. Raises JournalError only when both
    the database and the journal failed.
    """
    try:
        async with asyncio.timeout(timeout_s), session_factory() as session:
            await record_exchange(session, record)
    except DATABASE_DOWN as error:
        logger.warning("exchange %s not written to the database (%s); kept in the journal %s",
                       record.id, type(error).__name__, journal.path)
        await asyncio.to_thread(journal.append, record)
        return False
    return True


def _parse(line: bytes) -> ExchangeRecord:
    data = json.loads(line)
    if data.get("v") != JOURNAL_FORMAT:
        raise ValueError(f"unknown journal format {data.get('v')!r}")
    return exchange_from_json(data["exchange"])


def _ends_without_newline(file: BinaryIO) -> bool:
    fileno = file.fileno()
    size = os.fstat(fileno).st_size
    return size > 0 and os.pread(fileno, 1, size - 1) != b"\n"


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
