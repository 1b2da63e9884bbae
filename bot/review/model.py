"""The review of one exchange: what the log holds, joined with what the index holds now. Pure: no I/O.

A lead's questions about a citation, and where each answer comes from:

- what did the bot quote, for which claim, from which document version?   the log (`CitationRecord`)
- where is that quote in the document's text?                           the chunk text (index) + `quotes`
- is that version still the one indexed, or is the citation stale?      the document registry (index)
- what did verification reject, and why?                                the log (`kept`, `rejection_reason`)
- who flagged it, and was it resolved?                                  the log (`FlagRecord`)

Version states, decided by `version_state` (table-tested):

    index unreadable                               -> unknown
    the document is no longer indexed              -> removed (`verbatim sync` or `documents remove` took it out)
    another version is indexed now                 -> stale
    same version label, but the cited chunk is gone -> stale (the text changed without a new version label)
    otherwise                                      -> current
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from bot.review.lookup import IndexView
from bot.review.quotes import DEFAULT_CONTEXT_CHARS, Excerpt, excerpt, locate_quote
from bot.review.suppressed import suppressed_line
from retrieval.chunks import Chunk
from retrieval.store import DocumentRecord
from bot.review.formatting import moment
from storage.records import (
    CitationRecord,
    ExchangeRecord,
    FlagRecord,
    HandoffRecord,
    PrivateReplyRecord,
    exchange_to_json,
)


class VersionState(StrEnum):
    CURRENT = "current"
    STALE = "stale"
    REMOVED = "removed"
    UNKNOWN = "unknown"


NOTE_CHUNK_GONE = "the text of this chunk is no longer in the index"
NOTE_QUOTE_NOT_IN_CHUNK = "the quote does not occur in this chunk's text"


@dataclass(frozen=True, slots=True)
class CitationView:
    """One citation as a lead reviews it. `note` says why there is no `excerpt` (None when the index is down)."""

    citation: CitationRecord
    state: VersionState
    indexed_version: str | None
    excerpt: Excerpt | None
    note: str | None
    flags: tuple[FlagRecord, ...]  # lead flags still on the reply that name this citation


@dataclass(frozen=True, slots=True)
class Handling:
    """What people did with the exchange in Slack beyond flags and votes: the hand-off to a person, and (a
    private-first channel) the reply only the asker saw and whether they shared it."""

    handoff: HandoffRecord | None = None
    private_reply: PrivateReplyRecord | None = None


def handling_lines(handling: Handling) -> tuple[str, ...]:
    """One line each for the review (``show`` and the desk): who handed it off and when; who saw it privately and
    whether it was shared. Pure."""
    lines: list[str] = []
    handoff, private = handling.handoff, handling.private_reply
    if handoff is not None:
        post = f" (hand-off message {handoff.message_ts})" if handoff.message_ts else " (hand-off message not noted)"
        lines.append(f"Handed off to a person by {handoff.user_id} at {moment(handoff.created_at)}{post}")
    if private is not None:
        shown = f"Shown to the asker {private.user_id} only (private first)"
        if private.shared_at is not None:
            lines.append(f"{shown}; shared in the thread by {private.shared_by} at {moment(private.shared_at)}")
        else:
            lines.append(f"{shown}; not shared in the thread")
    return tuple(lines)


@dataclass(frozen=True, slots=True)
class ExchangeReview:
    """An exchange with its citations placed in their chunks, its flags, and why the index said nothing."""

    exchange: ExchangeRecord
    kept: tuple[CitationView, ...]
    rejected: tuple[CitationView, ...]
    flags: tuple[FlagRecord, ...]  # every reaction recorded, oldest first
    index_unavailable: str | None
    handling: Handling = Handling()

    @property
    def lead_flags(self) -> tuple[FlagRecord, ...]:
        """Lead reactions still on the reply: the flags that count."""
        return tuple(flag for flag in self.flags if flag.is_flag)

    @property
    def open_flags(self) -> tuple[FlagRecord, ...]:
        """Flags nobody has resolved yet: what `resolve` without --flag closes."""
        return tuple(flag for flag in self.lead_flags if flag.resolution is None)

    @property
    def stale(self) -> bool:
        """Whether any kept citation quotes a version that is no longer the indexed one."""
        return any(view.state is VersionState.STALE for view in self.kept)

    @property
    def removed(self) -> bool:
        """Whether any kept citation quotes a document that is no longer indexed at all."""
        return any(view.state is VersionState.REMOVED for view in self.kept)


def version_state(
    cited_version: str | None, indexed: DocumentRecord | None, chunk_stored: bool, *, index_read: bool
) -> VersionState:
    """Whether a citation's version is still the indexed one (see the table in the module docstring)."""
    if not index_read:
        return VersionState.UNKNOWN
    if indexed is None:
        return VersionState.REMOVED
    if indexed.version != cited_version or not chunk_stored:
        return VersionState.STALE
    return VersionState.CURRENT


def build_review(
    exchange: ExchangeRecord,
    flags: tuple[FlagRecord, ...] | list[FlagRecord],
    index: IndexView,
    *,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
    handling: Handling = Handling(),
) -> ExchangeReview:
    """Join the log's record of an exchange with what the index holds now."""
    views = [
        _citation_view(citation, flags, index.chunks, index.current, context_chars)
        for citation in exchange.citations
    ]
    return ExchangeReview(
        exchange=exchange,
        kept=tuple(view for view in views if view.citation.kept),
        rejected=tuple(view for view in views if not view.citation.kept),
        flags=tuple(flags),
        index_unavailable=index.unavailable,
        handling=handling,
    )


def _citation_view(
    citation: CitationRecord,
    flags: tuple[FlagRecord, ...] | list[FlagRecord],
    chunks: Mapping[str, Chunk] | None,
    current: Mapping[str, DocumentRecord] | None,
    context_chars: int,
) -> CitationView:
    index_read = chunks is not None and current is not None
    chunk = chunks.get(citation.chunk_id) if chunks is not None else None
    indexed = current.get(citation.document_id) if current is not None else None
    found = None if chunk is None else locate_quote(chunk.text, citation.exact_quote)
    if not index_read:
        note = None
    elif chunk is None:
        note = NOTE_CHUNK_GONE
    elif found is None:
        note = NOTE_QUOTE_NOT_IN_CHUNK
    else:
        note = None
    return CitationView(
        citation=citation,
        state=version_state(citation.version, indexed, chunk is not None, index_read=index_read),
        indexed_version=indexed.version if indexed is not None else None,
        excerpt=None if chunk is None or found is None else excerpt(chunk.text, found, context_chars),
        note=note,
        flags=tuple(flag for flag in flags if flag.is_flag and flag.label == citation.label),
    )


def flag_to_json(flag: FlagRecord) -> dict[str, Any]:
    """A flag as JSON-ready data (times as ISO 8601)."""
    return {
        "id": flag.id, "label": flag.label, "user_id": flag.user_id, "reaction": flag.reaction,
        "is_lead": flag.is_lead, "counts": flag.is_flag, "created_at": flag.created_at.isoformat(),
        "removed_at": _iso(flag.removed_at), "resolution": flag.resolution, "resolution_note": flag.resolution_note,
        "resolved_by": flag.resolved_by, "resolved_at": _iso(flag.resolved_at),
    }


def review_to_json(review: ExchangeReview) -> dict[str, Any]:
    """`show --json`: the exchange as logged, each citation with its place in the chunk and its version state."""
    data = exchange_to_json(review.exchange)
    data["citations"] = [_citation_to_json(view) for view in (*review.kept, *review.rejected)]
    data["citations"].sort(key=lambda item: item["position"])
    data["flags"] = [flag_to_json(flag) for flag in review.flags]
    data["chunk_text_unavailable"] = review.index_unavailable
    data["stale"] = review.stale
    data["removed"] = review.removed
    data["suppressed_line"] = suppressed_line(review.exchange)
    handoff, private = review.handling.handoff, review.handling.private_reply
    data["handoff"] = None if handoff is None else {
        "user_id": handoff.user_id, "at": _iso(handoff.created_at), "message_ts": handoff.message_ts}
    data["private_reply"] = None if private is None else {
        "user_id": private.user_id, "message_ts": private.message_ts, "shared_by": private.shared_by,
        "shared_at": _iso(private.shared_at), "shared_ts": private.shared_ts}
    return data


def _citation_to_json(view: CitationView) -> dict[str, Any]:
    data = asdict(view.citation)
    data["version_state"] = view.state.value
    data["indexed_version"] = view.indexed_version
    data["in_chunk"] = None if view.excerpt is None else {
        "before": view.excerpt.before, "quote": view.excerpt.quote, "after": view.excerpt.after,
        "cut_before": view.excerpt.cut_before, "cut_after": view.excerpt.cut_after, "exact": view.excerpt.exact,
    }
    data["note"] = view.note
    data["flag_ids"] = [flag.id for flag in view.flags]
    return data


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
