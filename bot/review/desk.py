"""What a lead does at the review desk, once, for both the terminal and the web page.

Each operation takes the session factory built at start-up (one short session per operation, so the page
never holds a transaction open while it waits on the index) and, where it needs chunk text, a `ChunkLookup`.
Errors are storage's (`UnknownExchange`, `UnknownFlag`, database failures) or the desk's (`NothingToResolve`);
the CLI and the web page decide how each one reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.review.clustering import DEFAULT_THRESHOLD, cluster
from bot.review.errors import NothingToResolve
from bot.review.export import PriorTurn, eval_question
from bot.review.gaps import GapsReport, build_topics, gap_question, in_order
from bot.review.learning import Learning, learn
from bot.review.lookup import DEFAULT_TIMEOUT_S, ChunkLookup, read_index
from bot.review.model import ExchangeReview, Handling, build_review
from bot.review.queries import review_queue
from bot.review.quotes import DEFAULT_CONTEXT_CHARS
from bot.review.suppressed import SuppressedChunk, by_chunk
from storage.errors import UnknownExchange
from storage.exchanges import get_exchange, thread_turns, with_outcome
from storage.flags import flags_for, resolve_flag
from storage.handoffs import handoff_for
from storage.private_replies import private_reply_for
from storage.records import ExchangeRecord, FlagRecord, Resolution, SuppressionRecord
from storage.suppressions import for_exchanges, in_force

Sessions = async_sessionmaker[AsyncSession]


class QuestionEmbedder(Protocol):
    """What coverage gaps need of an embedder (the local e5's `embed_queries`): runs off the event loop."""

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


async def read_exchange(sessions: Sessions, exchange_id: str) -> tuple[ExchangeRecord, list[FlagRecord]]:
    """The exchange and every reaction on its reply; UnknownExchange when the log has no such id."""
    async with sessions() as session:
        record = await get_exchange(session, exchange_id)
        if record is None:
            raise UnknownExchange(f"no exchange with id {exchange_id!r}")
        return record, await flags_for(session, exchange_id)


async def read_handling(sessions: Sessions, exchange_id: str) -> Handling:
    """The exchange's hand-off and private reply, as far as it has them."""
    async with sessions() as session:
        return Handling(await handoff_for(session, exchange_id), await private_reply_for(session, exchange_id))


async def review_exchange(
    record: ExchangeRecord,
    flags: list[FlagRecord],
    lookup: ChunkLookup,
    *,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    handling: Handling = Handling(),
) -> ExchangeReview:
    """The exchange with each quote placed in its chunk and each cited version checked against the index."""
    index = await read_index(
        lookup,
        [citation.chunk_id for citation in record.citations],
        [citation.document_id for citation in record.citations],
        timeout_s=timeout_s,
    )
    return build_review(record, flags, index, context_chars=context_chars, handling=handling)


async def resolve_flags(
    sessions: Sessions,
    exchange_id: str,
    *,
    flag_id: str | None,
    resolution: Resolution,
    note: str | None,
    by: str,
    at: datetime,
    learning: Learning | None = None,
) -> list[FlagRecord]:
    """Resolve one flag of the exchange, or (without `flag_id`) every open one; returns them resolved.

    A `confirmed_bad` verdict is remembered for the question (`bot.review.learning`): its chunk is not quoted
    again for it; `learning` says where the content hash and the query vector come from.

    An open flag is a lead's reaction still on the reply that nobody has resolved. A named flag may be resolved
    again (the new verdict replaces the old). Raises UnknownExchange, or NothingToResolve when the exchange has
    no open flag / the named flag is not one of its reactions.
    """
    async with sessions() as session:
        record = await get_exchange(session, exchange_id)
        if record is None:
            raise UnknownExchange(f"no exchange with id {exchange_id!r}")
        flags = await flags_for(session, exchange_id)
    if flag_id is not None:
        targets = [flag for flag in flags if flag.id == flag_id]
        if not targets:
            raise NothingToResolve(f"flag {flag_id} is not a reaction on exchange {exchange_id}")
    else:
        targets = [flag for flag in flags if flag.is_flag and flag.resolution is None]
        if not targets:
            raise NothingToResolve(f"exchange {exchange_id} has no open flags to resolve")
    resolved: list[FlagRecord] = []
    for flag in targets:
        async with sessions() as session:
            resolved.append(await resolve_flag(session, flag.id, resolution=resolution, note=note, by=by, at=at))
    await learn(sessions, record, resolved, learning or Learning(), at=at)
    return resolved


async def suppressions_of(sessions: Sessions, exchange_id: str) -> list[SuppressionRecord]:
    """The suppressions in force made from this exchange's flags."""
    async with sessions() as session:
        return [s for s in await for_exchanges(session, [exchange_id]) if s.lifted_at is None]


async def suppressed_chunks(sessions: Sessions, lookup: ChunkLookup, *, min_questions: int = 1,
                            timeout_s: float = DEFAULT_TIMEOUT_S) -> list[SuppressedChunk]:
    """Chunks in force confirmed bad for at least ``min_questions`` different questions, with their state now."""
    async with sessions() as session:
        rows = await in_force(session)
    index = await read_index(lookup, [], [row.document_id for row in rows], timeout_s=timeout_s)
    return by_chunk(rows, index.current, min_questions=min_questions)


async def export_questions(
    sessions: Sessions,
    *,
    flagged: bool = True,
    no_support: bool = False,
    errors: bool = False,
    channel_id: str | None = None,
    since: datetime | None = None,
    limit: int = 1_000_000,
) -> list[dict[str, Any]]:
    """Eval question lines for the selected exchanges, oldest first (a stable order for a regression file).

    A flagged exchange whose every counting flag a lead resolved as `not_a_problem` is left out: someone looked
    and found the answer fine, so it is no regression case (the stats do not count it either).
    """
    lines: list[dict[str, Any]] = []
    async with sessions() as session:
        queue = await review_queue(
            session, flagged=flagged, no_support=no_support, errors=errors, channel_id=channel_id, since=since,
            limit=limit,
        )
        for summary in reversed(queue):
            chosen_for_outcome = (no_support and summary.outcome == "no_support") or (
                errors and summary.outcome == "error"
            )
            if not chosen_for_outcome and await _dismissed(session, summary.id):
                continue
            turns = await prior_turns(session, channel_id=summary.channel_id, thread_ts=summary.thread_ts,
                                      before=summary.created_at, exclude_id=summary.id)
            lines.append(eval_question(summary, turns))
    return lines


async def prior_turns(session: AsyncSession, *, channel_id: str | None, thread_ts: str | None, before: datetime,
                      exclude_id: str, limit: int = 20) -> list[PriorTurn]:
    """The finished turns of an exchange's thread asked before it, oldest first (none outside a Slack thread).

    The thread's history comes from ``storage.exchanges.thread_turns``, the same query the Slack edge uses."""
    if channel_id is None or thread_ts is None:
        return []
    turns = await thread_turns(session, channel_id, thread_ts, limit, before=before, exclude_id=exclude_id)
    return [PriorTurn(turn.question, turn.answer_text) for turn in turns]


async def _dismissed(session: AsyncSession, exchange_id: str) -> bool:
    """Every lead flag still on the reply was resolved as not_a_problem."""
    flags = [flag for flag in await flags_for(session, exchange_id) if flag.is_flag]
    return bool(flags) and all(flag.resolution == "not_a_problem" for flag in flags)


async def coverage_gaps(sessions: Sessions, embedder: QuestionEmbedder, *, since: datetime | None,
                        channel_id: str | None, now: datetime, threshold: float = DEFAULT_THRESHOLD,
                        limit: int = 5000) -> GapsReport:
    """The no-support questions of the window grouped into topics (`bot.review.gaps`), most people first.

    The questions are embedded at review time (the embedder's worker thread, not the event loop) and
    clustered in a worker thread too: a month of questions takes a few seconds, and the desk keeps answering.
    """
    async with sessions() as session:
        records = await with_outcome(session, "no_support", since=since, channel_id=channel_id, limit=limit)
        # A help channel's question the bot stayed silent on is a gap too (no support to speak with).
        records += await with_outcome(session, "not_answered", since=since, channel_id=channel_id, limit=limit)
    questions = in_order([gap_question(record) for record in records])
    vectors = await embedder.embed_queries([question.text for question in questions])
    groups = await asyncio.to_thread(cluster, vectors, threshold)
    topics = await asyncio.to_thread(build_topics, questions, groups, now=now)
    return GapsReport(since=since, channel_id=channel_id, now=now, questions=len(questions), threshold=threshold,
                      topics=tuple(topics))
