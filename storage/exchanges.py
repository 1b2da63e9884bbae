"""Writing and reading exchanges: claim a Slack event, record what happened, find it again for review.

Every function takes an `AsyncSession` made by the caller's one session factory; none builds an engine.
Each write is one unit of work and commits before it returns, so what it promises (a claimed event, a
recorded exchange) holds for every other process and replica from then on. If a write raises, the session
is left rolled back or must be discarded (closing it is enough).

How the pieces fit the bot's path:

    claim_event      (storage.claims) when the Slack event arrives: a 'pending' row holding the unique event_id
                     with a lease; a claim left behind by a dead instance is taken over there.
    record_exchange  when the reply is posted: completes that row (or inserts it, for the CLI and eval)
                     with its retrieved chunks and citations. Idempotent on the exchange id, which is what
                     lets the journal replay a record after a crash without ever duplicating it.
    find_by_reply    a reaction arrives on the bot's reply message: which exchange was that?
    thread_turns     a follow-up in a thread: the earlier turns, to make the question standalone.
    list_exchanges   the review queue.
    with_outcome     every exchange of one outcome in a window, with its retrieved chunks (`review gaps`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, delete, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from storage.models import Citation, Exchange, Feedback, Flag, Handoff, PrivateReply, RetrievedChunk
from storage.records import (
    OUTCOMES,
    CitationRecord,
    ExchangeRecord,
    ExchangeSummary,
    RetrievedRecord,
    require_aware,
    require_choice,
)

logger = logging.getLogger(__name__)

EXCHANGE_FIELDS = (
    "created_at", "source", "team_id", "channel_id", "user_id", "thread_ts", "question_ts", "reply_ts",
    "question", "query", "outcome", "answer_text", "error_class", "error_message", "prompt_version", "language",
)
CITATION_TEXT_FIELDS = (
    "label", "claim", "exact_quote", "document_id", "chunk_id", "version", "title", "section", "url",
    "rejection_reason",
)


async def record_exchange(session: AsyncSession, record: ExchangeRecord) -> None:
    """Write the exchange with its retrieved chunks and citations, replacing whatever was stored under its id.

    Writing the same record twice leaves one exchange with one set of children. If another exchange already
    holds the record's event id (two replicas both answered while the database was down, and both journaled),
    this one is kept without the event id: both replies were really posted, so both belong in the log.
    """
    event_id = record.event_id
    if event_id is not None:
        holder = await session.scalar(select(Exchange.id).where(Exchange.event_id == event_id))
        if holder is not None and holder != record.id:
            logger.warning("exchange %s answered event %s already answered by exchange %s; stored without the "
                           "event id", record.id, event_id, holder)
            event_id = None
    row = await session.get(Exchange, record.id, populate_existing=True)
    if row is None:
        session.add(new_exchange(record, event_id))
    else:
        # A record without an event id (built after the claim) must not erase the claim's.
        _copy_fields(row, record, event_id if event_id is not None else row.event_id)
        await session.execute(delete(RetrievedChunk).where(RetrievedChunk.exchange_id == record.id))
        await session.execute(delete(Citation).where(Citation.exchange_id == record.id))
    session.add_all(_retrieved_rows(record))
    session.add_all(_citation_rows(record))
    await session.commit()


async def get_exchange(session: AsyncSession, exchange_id: str) -> ExchangeRecord | None:
    """The exchange with its retrieved chunks (by rank) and citations (by position), or None."""
    row = await session.scalar(_with_children(select(Exchange).where(Exchange.id == exchange_id)))
    return None if row is None else to_record(row)


async def find_by_reply(session: AsyncSession, channel_id: str, reply_ts: str) -> ExchangeRecord | None:
    """The exchange whose reply is the Slack message `reply_ts` in `channel_id` (reactions land there): its
    posted reply, or the ephemeral one a private-first channel showed the asker (its buttons' clicks carry that)."""
    shown_privately = select(PrivateReply.exchange_id).where(PrivateReply.channel_id == channel_id,
                                                             PrivateReply.message_ts == reply_ts)
    statement = (
        select(Exchange)
        .where(Exchange.channel_id == channel_id,
               or_(Exchange.reply_ts == reply_ts, Exchange.id.in_(shown_privately)))
        .order_by(Exchange.created_at.desc())
        .limit(1)
    )
    row = await session.scalar(_with_children(statement))
    return None if row is None else to_record(row)


async def thread_turns(session: AsyncSession, channel_id: str, thread_ts: str, limit: int = 10, *,
                       before: datetime | None = None, exclude_id: str | None = None) -> list[ExchangeRecord]:
    """The last `limit` finished turns of a Slack thread, oldest first; with `before`, only the turns asked
    before then (what an old exchange's thread held when it was asked), `exclude_id` left out.

    Pending exchanges (claimed, not yet answered: usually the question being answered right now) are left
    out; answered, no-support and error turns are all returned, with their outcome, for the caller to use.
    The one query for a thread's history: the Slack edge's follow-ups and the review desk's export use it.
    """
    _require_limit(limit)
    conditions = [Exchange.channel_id == channel_id, Exchange.thread_ts == thread_ts, Exchange.outcome != "pending"]
    if before is not None:
        require_aware("before", before)
        conditions.append(Exchange.created_at < before)
    if exclude_id is not None:
        conditions.append(Exchange.id != exclude_id)
    statement = (
        select(Exchange)
        .where(*conditions)
        .order_by(Exchange.created_at.desc(), Exchange.id.desc())
        .limit(limit)
    )
    rows = (await session.scalars(_with_children(statement))).all()
    return [to_record(row) for row in reversed(rows)]


async def exchange_exists(session: AsyncSession, exchange_id: str) -> bool:
    """Whether the log holds an exchange with this id (without loading its children)."""
    return await session.scalar(select(Exchange.id).where(Exchange.id == exchange_id)) is not None


async def list_exchanges(
    session: AsyncSession,
    *,
    flagged: bool | None = None,
    outcome: str | None = None,
    channel_id: str | None = None,
    since: datetime | None = None,
    before: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
    unhappy: bool | None = None,
    handed_off: bool | None = None,
) -> list[ExchangeSummary]:
    """The review queue, newest first (``since`` inclusive, ``before`` exclusive).

    `flagged=True`: exchanges with at least one lead flag still on the reply (resolved or not; the summary
    says how many are unresolved); `False`: exchanges without one; None: both. `unhappy=True`: exchanges
    someone gave a 👎 (feedback buttons); `False`: none did; None: both. `handed_off`: likewise for an
    "Ask a person" click.
    """
    if outcome is not None:
        require_choice("outcome", outcome, OUTCOMES)
    require_aware("since", since)
    require_aware("before", before)
    _require_limit(limit)
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, got {offset}")

    is_flag = and_(Flag.exchange_id == Exchange.id, Flag.is_lead, Flag.removed_at.is_(None))
    is_unhappy = and_(Feedback.exchange_id == Exchange.id, ~Feedback.positive)
    statement = select(
        Exchange.id, Exchange.created_at, Exchange.source, Exchange.outcome, Exchange.question,
        Exchange.channel_id, Exchange.user_id, Exchange.thread_ts, Exchange.reply_ts, Exchange.error_class,
        Exchange.timings_ms,
        _count(Citation, and_(Citation.exchange_id == Exchange.id, Citation.kept)).label("kept"),
        _count(Citation, and_(Citation.exchange_id == Exchange.id, ~Citation.kept)).label("rejected"),
        _count(Flag, is_flag).label("lead_flags"),
        _count(Flag, and_(is_flag, Flag.resolution.is_(None))).label("unresolved"),
        _count(Feedback, is_unhappy).label("unhappy"),
        _count(Handoff, Handoff.exchange_id == Exchange.id).label("handoffs"),
    )
    if flagged is not None:
        has_flag = exists().where(is_flag)
        statement = statement.where(has_flag if flagged else ~has_flag)
    if unhappy is not None:
        has_thumbs_down = exists().where(is_unhappy)
        statement = statement.where(has_thumbs_down if unhappy else ~has_thumbs_down)
    if handed_off is not None:
        has_handoff = exists().where(Handoff.exchange_id == Exchange.id)
        statement = statement.where(has_handoff if handed_off else ~has_handoff)
    if outcome is not None:
        statement = statement.where(Exchange.outcome == outcome)
    if channel_id is not None:
        statement = statement.where(Exchange.channel_id == channel_id)
    if since is not None:
        statement = statement.where(Exchange.created_at >= since)
    if before is not None:
        statement = statement.where(Exchange.created_at < before)
    statement = statement.order_by(Exchange.created_at.desc(), Exchange.id.desc()).limit(limit).offset(offset)

    return [
        ExchangeSummary(
            id=row.id, created_at=row.created_at, source=row.source, outcome=row.outcome, question=row.question,
            channel_id=row.channel_id, user_id=row.user_id, thread_ts=row.thread_ts, reply_ts=row.reply_ts,
            error_class=row.error_class, total_ms=_total_ms(row.timings_ms), kept_citations=row.kept,
            rejected_citations=row.rejected, lead_flags=row.lead_flags, unresolved_lead_flags=row.unresolved,
            unhappy=row.unhappy, handed_off=bool(row.handoffs),
        )
        for row in await session.execute(statement)
    ]


async def with_outcome(
    session: AsyncSession,
    outcome: str,
    *,
    since: datetime | None = None,
    channel_id: str | None = None,
    limit: int = 5000,
) -> list[ExchangeRecord]:
    """Exchanges with this outcome (``since`` inclusive, one channel if given), oldest first, ties by id, with
    their retrieved chunks and citations: the newest `limit` of them."""
    require_choice("outcome", outcome, OUTCOMES)
    require_aware("since", since)
    _require_limit(limit)
    conditions = [Exchange.outcome == outcome]
    if since is not None:
        conditions.append(Exchange.created_at >= since)
    if channel_id is not None:
        conditions.append(Exchange.channel_id == channel_id)
    statement = (select(Exchange).where(*conditions).order_by(Exchange.created_at.desc(), Exchange.id.desc())
                 .limit(limit))
    rows = (await session.scalars(_with_children(statement))).all()
    return [to_record(row) for row in reversed(rows)]


def _count(model: type[Citation | Flag | Feedback], condition: ColumnElement[bool]) -> Any:
    return select(func.count()).select_from(model).where(condition).correlate(Exchange).scalar_subquery()


def _require_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"limit must be 1 or more, got {limit}")


def _total_ms(timings: dict[str, Any] | None) -> float | None:
    value = (timings or {}).get("total")
    return None if value is None else float(value)


def _with_children(statement: Select[tuple[Exchange]]) -> Select[tuple[Exchange]]:
    return statement.options(
        selectinload(Exchange.retrieved), selectinload(Exchange.citations)
    ).execution_options(populate_existing=True)


def new_exchange(record: ExchangeRecord, event_id: str | None) -> Exchange:
    row = Exchange(id=record.id)
    _copy_fields(row, record, event_id)
    return row


def _storable(value: Any) -> Any:
    """PostgreSQL text cannot hold U+0000 (PDF extraction can produce it): store U+FFFD in its place, on
    every database so both agree. A write that could never succeed would otherwise block the journal."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


def _copy_fields(row: Exchange, record: ExchangeRecord, event_id: str | None) -> None:
    for name in EXCHANGE_FIELDS:
        setattr(row, name, _storable(getattr(record, name)))
    row.event_id = event_id
    row.timings_ms = dict(record.timings_ms)
    row.route = dict(record.route)


def _retrieved_rows(record: ExchangeRecord) -> list[RetrievedChunk]:
    return [
        RetrievedChunk(
            exchange_id=record.id, rank=chunk.rank, chunk_id=_storable(chunk.chunk_id),
            document_id=_storable(chunk.document_id), version=_storable(chunk.version), title=_storable(chunk.title),
            search_score=chunk.search_score, rerank_score=chunk.rerank_score,
        )
        for chunk in record.retrieved
    ]


def _citation_rows(record: ExchangeRecord) -> list[Citation]:
    return [
        Citation(
            exchange_id=record.id, position=citation.position, kept=citation.kept, page=citation.page,
            **{name: _storable(getattr(citation, name)) for name in CITATION_TEXT_FIELDS},
        )
        for citation in record.citations
    ]


def to_record(row: Exchange, *, children: bool = True) -> ExchangeRecord:
    """The frozen record of a row; ``children=False`` for a row loaded without its chunks and citations."""
    return ExchangeRecord(
        id=row.id,
        event_id=row.event_id,
        timings_ms=dict(row.timings_ms),
        route=dict(row.route),
        retrieved=tuple(
            RetrievedRecord(
                rank=chunk.rank, chunk_id=chunk.chunk_id, document_id=chunk.document_id, version=chunk.version,
                title=chunk.title, search_score=chunk.search_score, rerank_score=chunk.rerank_score,
            )
            for chunk in (row.retrieved if children else ())
        ),
        citations=tuple(
            CitationRecord(
                position=c.position, label=c.label, claim=c.claim, exact_quote=c.exact_quote,
                document_id=c.document_id, chunk_id=c.chunk_id, kept=c.kept, version=c.version, title=c.title,
                section=c.section, page=c.page, url=c.url, rejection_reason=c.rejection_reason,
            )
            for c in (row.citations if children else ())
        ),
        **{name: getattr(row, name) for name in EXCHANGE_FIELDS},
    )
