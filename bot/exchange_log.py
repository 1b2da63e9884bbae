"""The exchange log as the front ends are handed it: one session factory and its journal, built once by
``bot.runtime``, and the one way its outages reach them.

The Slack edge never opens a session: it calls the small services over this log (``bot.claims`` for the
questions it takes, ``bot.verdicts`` for flags and votes, ``ExchangeLog.thread_history`` for a thread's earlier
turns), and a database that is down or too slow reaches it as ``LogUnavailable`` — one exception of ours, naming
the driver's error class for the log line, never the driver's exception itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.answer.ask import Observer, Recorder
from bot.answer.types import Turn
from storage.exchanges import thread_turns
from storage.faults import is_outage
from storage.journal import DATABASE_DOWN, Journal
from storage.records import ExchangeRecord


class LogUnavailable(Exception):
    """The exchange log did not answer (down, refused, too slow); ``cause`` is the driver's error class."""

    def __init__(self, operation: str, cause: BaseException) -> None:
        super().__init__(f"the exchange log is unavailable for the {operation} ({type(cause).__name__})")
        self.cause = type(cause).__name__


@contextmanager
def reached(operation: str) -> Iterator[None]:
    """Run a call on the log; an outage (``storage.faults.is_outage``, the journal's rule) becomes
    ``LogUnavailable``. Any other database error — a constraint violated, a bug in our SQL — goes on as itself,
    with its traceback: telling the user "the log is down, try later" would hide it for good."""
    try:
        yield
    except DATABASE_DOWN as error:
        if not is_outage(error):
            raise
        raise LogUnavailable(operation, error) from error


@dataclass(frozen=True, slots=True)
class ExchangeLog:
    sessions: async_sessionmaker[AsyncSession]
    journal: Journal  # where exchanges wait while the database is down

    def recorder(self, observe: Observer | None = None) -> Recorder:
        """The one writer of exchange records for this log (the SQL log, or the journal while it is down)."""
        return Recorder(self.sessions, self.journal, observe)

    async def thread_history(self, channel: str, thread_ts: str, limit: int) -> tuple[Turn, ...]:
        """The earlier turns of a Slack thread the bot answered in (each question, then the bot's answer text);
        empty when it answered nothing there: a help channel's question the bot kept silent on (``not_answered``)
        makes no thread the bot's. ``LogUnavailable`` when the log cannot tell."""
        with reached("thread history"):
            async with self.sessions() as session:
                records = await thread_turns(session, channel, thread_ts, limit=limit)
        if all(record.outcome == "not_answered" for record in records):
            return ()
        return turns_of(records)


def turns_of(records: list[ExchangeRecord]) -> tuple[Turn, ...]:
    """Each logged exchange as the asker's turn and, when the bot answered, the bot's turn."""
    turns: list[Turn] = []
    for record in records:
        turns.append(Turn("user", record.question))
        if record.outcome in ("answered", "no_support") and record.answer_text:
            turns.append(Turn("assistant", record.answer_text))
    return tuple(turns)
