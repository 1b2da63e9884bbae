"""The one entry point of the answer path: answer a question and record the exchange, for every front end.

    ask(question, deps, recorder, origin, limits=…, deliver=…) -> Asked
      answer   bot.answer.service.answer, within the front end's time limit and answer slots
      deliver  the front end's own delivery, when it has one (Slack posts in the thread and says where)
      record   the exchange — answered, no support, or error — through the recorder: the SQL log, or the
               journal while the database is down (nothing is lost)

Slack mentions and follow-ups, ``/api/ask``, ``verbatim ask`` and ``verbatim eval`` each parse their input, call
``ask`` and render what it returns; none builds an exchange record or keeps its own list of expected errors
(``ANSWER_ERRORS``: retrieval's one error root and a timeout; anything else is a bug and propagates). The
recorder's observer (the metrics) hears what happened as typed values — the error's ``ErrorCause``, the
``Fallback``s taken — never parsed back out of the record.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.answer.exchange import SlackContext, answered_record, failed_record
from bot.answer.service import ANSWER_ERRORS, AnswerDeps, AnswerResult, answer
from bot.answer.types import ErrorCause, Fallback, Question
from retrieval.embedders import EmbeddingError
from retrieval.store import StoreError
from retrieval.weaviate_config import StoreUnavailable
from storage.errors import JournalError
from storage.journal import Journal, write_or_journal
from storage.records import ExchangeRecord, Source

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a question came from: the front end, the exchange's id and time, and Slack's ids if any."""

    source: Source
    exchange_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    slack: SlackContext = field(default_factory=SlackContext)


@dataclass(frozen=True, slots=True)
class Limits:
    """How long one answer may take, and the slots answers share (None: no limit)."""

    timeout_s: float | None = None
    slots: asyncio.Semaphore | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """What the front end's delivery did: where the reply went, or why it could not go."""

    reply_ts: str | None = None
    error: BaseException | None = None
    silent: bool = False  # nothing was posted on purpose (a help channel's question without support)


Deliver = Callable[[AnswerResult | None, BaseException | None], Awaitable[Delivery]]


@dataclass(frozen=True, slots=True)
class Asked:
    """The outcome of one question: the answer (or the error the asker was told about) and its record."""

    result: AnswerResult | None
    error: BaseException | None
    record: ExchangeRecord
    recorded: bool  # False only when neither the database nor the journal could take it (logged)

    @property
    def exchange_id(self) -> str:
        return self.record.id


@dataclass(frozen=True, slots=True)
class Recorded:
    """What the observer hears of one exchange once it is kept (or could not be kept anywhere)."""

    record: ExchangeRecord
    in_database: bool  # False: in the journal, or nowhere
    cause: ErrorCause | None = None  # an error exchange's
    fallbacks: tuple[Fallback, ...] = ()


Observer = Callable[[Recorded], None]


def cause_of(error: BaseException) -> ErrorCause:
    """The cause of an error the answer path expected (``ANSWER_ERRORS``) or a bug (``OTHER``)."""
    if isinstance(error, (StoreError, StoreUnavailable)):
        return ErrorCause.STORE
    if isinstance(error, EmbeddingError):
        return ErrorCause.EMBEDDER
    if isinstance(error, TimeoutError):
        return ErrorCause.TIMEOUT
    return ErrorCause.OTHER


class Recorder:
    """Writes exchange records to the SQL log, or to the journal while the database is down.

    ``observe`` (the server's metrics) hears of every record once it is kept, or could not be kept anywhere.
    """

    def __init__(self, sessions: async_sessionmaker[AsyncSession], journal: Journal,
                 observe: Observer | None = None) -> None:
        self._sessions = sessions
        self._journal = journal
        self._observe = observe

    async def __call__(self, record: ExchangeRecord, *, cause: ErrorCause | None = None,
                       fallbacks: tuple[Fallback, ...] = ()) -> bool:
        kept = True
        try:
            in_database = await write_or_journal(self._sessions, self._journal, record)
        except JournalError as error:
            log.error("exchange %s (%s, %s) could not be logged anywhere: %s", record.id, record.source,
                      record.outcome, error)
            kept = in_database = False
        if self._observe is not None:
            self._observe(Recorded(record, in_database, cause, fallbacks))
        return kept


async def ask(question: Question, deps: AnswerDeps, recorder: Recorder, origin: Origin, *,
              limits: Limits = Limits(), deliver: Deliver | None = None) -> Asked:
    """Answer ``question``, deliver it when the front end delivers, and record the exchange."""
    result: AnswerResult | None = None
    error: BaseException | None = None
    slots: AbstractAsyncContextManager[object] = limits.slots if limits.slots is not None else nullcontext()
    try:
        async with slots:
            result = await asyncio.wait_for(answer(question, deps), limits.timeout_s)
    except ANSWER_ERRORS as failure:
        log.error("answering %s exchange %s failed: %s: %s", origin.source, origin.exchange_id,
                  type(failure).__name__, failure)
        error = failure
    slack = origin.slack
    cause = cause_of(error) if error is not None else None
    if deliver is not None:
        delivered = await deliver(result, error)
        slack = replace(slack, reply_ts=delivered.reply_ts)
        if error is None and delivered.error is not None:
            error, cause = delivered.error, ErrorCause.DELIVERY
    if error is not None:
        record = failed_record(question, error, exchange_id=origin.exchange_id, created_at=origin.created_at,
                               source=origin.source, language=question.language,
                               timings_ms=result.timings_ms if result is not None else None, slack=slack)
    else:
        assert result is not None
        record = answered_record(result, exchange_id=origin.exchange_id, created_at=origin.created_at,
                                 source=origin.source, slack=slack)
        if deliver is not None and delivered.silent:
            record = replace(record, outcome="not_answered")
    fallbacks = result.route.fallbacks if result is not None else ()
    return Asked(result, error, record, await recorder(record, cause=cause, fallbacks=fallbacks))


async def record_failure(question: Question, error: BaseException, recorder: Recorder, origin: Origin) -> Asked:
    """Record a question that a bug interrupted before ``ask`` could (the asker was told of an error)."""
    record = failed_record(question, error, exchange_id=origin.exchange_id, created_at=origin.created_at,
                           source=origin.source, language=question.language, slack=origin.slack)
    return Asked(None, error, record, await recorder(record, cause=cause_of(error)))
