"""The plain data that crosses the storage boundary: frozen dataclasses in, frozen dataclasses out.

No ORM object leaves `storage`, so callers never trigger a lazy load on a closed session and the rest of
the code does not depend on SQLAlchemy. Records check their closed vocabularies and their times when they
are built, so a bad value fails where it is made, not later inside a transaction (or in the journal).

Every record is JSON-ready through `dataclasses.asdict` plus ISO-8601 for datetimes and dates;
`exchange_to_json` / `exchange_from_json` are that round trip for the journal.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any, Literal, get_args

Source = Literal["slack", "cli", "eval", "api"]
# not_answered: a help channel's unprompted question the bot stayed silent on (too little support to speak).
Outcome = Literal["pending", "answered", "no_support", "error", "not_answered"]
Resolution = Literal["confirmed_bad", "not_a_problem", "fixed_in_docs"]

SOURCES: tuple[str, ...] = get_args(Source)
OUTCOMES: tuple[str, ...] = get_args(Outcome)
RESOLUTIONS: tuple[str, ...] = get_args(Resolution)


def require_choice(name: str, value: str | None, choices: tuple[str, ...]) -> None:
    """Raise ValueError naming the field and the allowed values when `value` is not one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def require_aware(name: str, value: datetime | None) -> None:
    """Raise ValueError for a naive datetime: storage keeps UTC and will not guess a zone."""
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ValueError(f"{name} must be timezone-aware (UTC), got the naive {value.isoformat()}")


def require_uuid(name: str, value: str) -> None:
    """Raise ValueError unless `value` is a UUID in its canonical text form."""
    try:
        canonical = str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"{name} must be a UUID string, got {value!r}") from None
    if canonical != value:
        raise ValueError(f"{name} must be a lower-case hyphenated UUID, got {value!r}")


INT32_MAX = 2**31 - 1  # PostgreSQL INTEGER: a larger rank or page could never be written


def require_number(name: str, value: object, *, optional: bool = True) -> None:
    """Raise ValueError unless `value` is a finite int/float (or None when optional): NaN is not valid JSON."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def require_int32(name: str, value: int | None, *, optional: bool = False) -> None:
    """Raise ValueError unless `value` is an int in 0..2**31-1 (or None when optional)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        raise ValueError(f"{name} must be a whole number from 0 to {INT32_MAX}, got {value!r}")


@dataclass(frozen=True, slots=True)
class RetrievedRecord:
    """One search result of an exchange: which chunk of which version, at which rank, with which scores."""

    rank: int
    chunk_id: str
    document_id: str
    version: str | None = None
    title: str | None = None
    search_score: float | None = None
    rerank_score: float | None = None

    def __post_init__(self) -> None:
        require_int32("rank", self.rank)
        require_number("search_score", self.search_score)
        require_number("rerank_score", self.rerank_score)


@dataclass(frozen=True, slots=True)
class CitationRecord:
    """One composed claim and its quote; `kept` is False when verification rejected it (with the reason)."""

    position: int
    label: str
    claim: str
    exact_quote: str
    document_id: str
    chunk_id: str
    kept: bool
    version: str | None = None
    title: str | None = None
    section: str | None = None
    page: int | None = None
    url: str | None = None
    rejection_reason: str | None = None

    def __post_init__(self) -> None:
        require_int32("position", self.position)
        require_int32("page", self.page, optional=True)


@dataclass(frozen=True, slots=True)
class ExchangeRecord:
    """Everything recorded about one question: who asked where, what was searched, quoted and answered.

    `timings_ms` holds the stage timings (search, rerank, compose, verify, total); `route` holds the
    embedder, reranker and composer with their model names.
    """

    id: str
    created_at: datetime
    source: Source
    question: str
    outcome: Outcome
    team_id: str | None = None
    channel_id: str | None = None
    user_id: str | None = None
    thread_ts: str | None = None
    question_ts: str | None = None
    reply_ts: str | None = None
    event_id: str | None = None
    query: str | None = None
    answer_text: str | None = None
    error_class: str | None = None
    error_message: str | None = None
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    route: Mapping[str, Any] = field(default_factory=dict)
    prompt_version: str | None = None
    language: str | None = None
    retrieved: tuple[RetrievedRecord, ...] = ()
    citations: tuple[CitationRecord, ...] = ()

    def __post_init__(self) -> None:
        require_uuid("exchange id", self.id)
        require_aware("created_at", self.created_at)
        require_choice("source", self.source, SOURCES)
        require_choice("outcome", self.outcome, OUTCOMES)
        for stage, milliseconds in self.timings_ms.items():
            require_number(f"timings_ms[{stage!r}]", milliseconds, optional=False)
        # Lists are accepted (JSON gives lists) but kept as tuples, so the record stays immutable.
        object.__setattr__(self, "retrieved", tuple(self.retrieved))
        object.__setattr__(self, "citations", tuple(self.citations))
        ranks = [chunk.rank for chunk in self.retrieved]
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"exchange {self.id}: retrieved chunks repeat a rank: {sorted(ranks)}")
        positions = [citation.position for citation in self.citations]
        if len(set(positions)) != len(positions):
            raise ValueError(f"exchange {self.id}: citations repeat a position: {sorted(positions)}")

    @property
    def total_ms(self) -> float | None:
        """The end-to-end time, when it was measured."""
        value = self.timings_ms.get("total")
        return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class FeedbackRecord:
    """One user's 👍 (``positive``) or 👎 on an answer, as last clicked."""

    exchange_id: str
    user_id: str
    positive: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class HandoffRecord:
    """An "Ask a person" click on an answer: who asked for a person, when, and the post that brought one in."""

    exchange_id: str
    user_id: str
    created_at: datetime
    message_ts: str | None = None  # the hand-off message in the thread, once posted

    def __post_init__(self) -> None:
        require_aware("created_at", self.created_at)


@dataclass(frozen=True, slots=True)
class PrivateReplyRecord:
    """A reply shown to the asker only (a private-first channel): what they saw, and whether they shared it."""

    exchange_id: str
    channel_id: str
    user_id: str  # the asker
    message_ts: str  # the ephemeral message
    message: dict[str, Any]  # {"text": …, "blocks": […]}, as posted
    created_at: datetime
    shared_by: str | None = None
    shared_at: datetime | None = None
    shared_ts: str | None = None  # the reply in the thread, once posted

    def __post_init__(self) -> None:
        require_aware("created_at", self.created_at)
        require_aware("shared_at", self.shared_at)


@dataclass(frozen=True, slots=True)
class FlagRecord:
    """A reaction on the bot's reply. It counts as a flag only when `is_lead` and not removed."""

    id: str
    exchange_id: str
    label: str | None  # None: the whole answer; "S1", "S2", ...: one citation
    user_id: str
    reaction: str
    is_lead: bool
    created_at: datetime
    removed_at: datetime | None = None
    resolution: Resolution | None = None
    resolution_note: str | None = None
    resolved_by: str | None = None
    resolved_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        """The reaction is still on the message."""
        return self.removed_at is None

    @property
    def is_flag(self) -> bool:
        """A lead's reaction that is still on the message: what the review queue and the stats count."""
        return self.is_lead and self.removed_at is None


@dataclass(frozen=True, slots=True)
class ExchangeSummary:
    """One line of the review queue: enough to pick an exchange without loading its chunks and quotes."""

    id: str
    created_at: datetime
    source: Source
    outcome: Outcome
    question: str
    channel_id: str | None
    user_id: str | None
    thread_ts: str | None
    reply_ts: str | None
    error_class: str | None
    total_ms: float | None
    kept_citations: int
    rejected_citations: int
    lead_flags: int  # lead reactions still on the reply
    unresolved_lead_flags: int  # of those, the ones nobody has resolved yet
    unhappy: int = 0  # 👎 clicks on the answer (feedback buttons): "asker unhappy"
    handed_off: bool = False  # someone clicked "Ask a person" under the reply


@dataclass(frozen=True, slots=True, kw_only=True)
class Metrics:
    """The numbers a support lead tracks over a set of exchanges. Rates are None when nothing was counted."""

    exchanges: int
    pending: int
    answered: int
    no_support: int
    error: int
    no_support_rate: float | None  # no_support / completed exchanges (answered + no_support + error)
    flagged_answers: int  # exchanges with a lead flag still on the reply, not resolved as not_a_problem
    flag_rate: float | None  # flagged_answers / completed exchanges
    quotes: int
    rejected_quotes: int
    rejected_quote_rate: float | None  # rejected_quotes / quotes
    wrong_citations: int
    wrong_citation_rate: float | None  # (rejected or flagged quotes) / quotes; see storage.stats
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    helpful: int = 0  # 👍 clicks (feedback buttons, one per user and answer)
    unhelpful: int = 0  # 👎 clicks
    unhappy_rate: float | None = None  # unhelpful / (helpful + unhelpful)
    not_answered: int = 0  # a help channel's questions the bot stayed silent on
    questions: int = 0  # completed exchanges, the silent ones included: answered + no_support + error + not_answered
    handed_off: int = 0  # exchanges someone clicked "Ask a person" under
    handoff_rate: float | None = None  # handed_off / questions
    deflected: int = 0  # answered, and neither handed off nor given a 👎
    deflection_rate: float | None = None  # deflected / questions


@dataclass(frozen=True, slots=True, kw_only=True)
class DayStats(Metrics):
    """Metrics of one UTC day."""

    day: date


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelStats(Metrics):
    """Metrics of one channel over a period (None: exchanges outside Slack channels, e.g. the CLI)."""

    channel_id: str | None


def json_default(value: object) -> str:
    """`json.dumps(default=...)` for records: datetimes and dates as ISO 8601."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def exchange_to_json(record: ExchangeRecord) -> dict[str, Any]:
    """The record as JSON-ready data (datetimes as ISO 8601 text)."""
    data = asdict(record)
    data["created_at"] = record.created_at.isoformat()
    return data


def exchange_from_json(data: Mapping[str, Any]) -> ExchangeRecord:
    """The inverse of `exchange_to_json`; raises ValueError/TypeError/KeyError on data that does not fit."""
    fields = dict(data)
    fields["created_at"] = datetime.fromisoformat(fields["created_at"])
    fields["retrieved"] = tuple(RetrievedRecord(**item) for item in fields.get("retrieved", ()))
    fields["citations"] = tuple(CitationRecord(**item) for item in fields.get("citations", ()))
    return ExchangeRecord(**fields)


@dataclass(frozen=True, slots=True)
class SuppressionRecord:
    """A chunk a lead confirmed bad for one question, with the question's text and query vector.

    `query_vector` is None when no embedder was at hand when the flag was resolved: then only the same
    question (its text, normalised) is matched. `lifted_at` is set when the flag's verdict changed since.
    """

    id: str
    flag_id: str
    exchange_id: str
    chunk_id: str
    document_id: str
    version: str | None
    content_hash: str | None
    question: str
    query: str
    embedder: str | None
    query_vector: tuple[float, ...] | None
    created_by: str
    created_at: datetime
    lifted_at: datetime | None = None

    def __post_init__(self) -> None:
        require_uuid("suppression id", self.id)
        require_aware("created_at", self.created_at)
        require_aware("lifted_at", self.lifted_at)
        if self.query_vector is not None:
            object.__setattr__(self, "query_vector", tuple(float(x) for x in self.query_vector))
            if not all(math.isfinite(x) for x in self.query_vector):
                raise ValueError(f"suppression {self.id}: the query vector holds a value that is not finite")
