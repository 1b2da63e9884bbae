"""Exchange records for tests, complete enough that a round trip through the database checks every field."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from storage.claims import Lease
from storage.records import CitationRecord, ExchangeRecord, RetrievedRecord

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(minutes: float = 0, *, days: int = 0) -> datetime:
    """A moment relative to T0, so tests read as a timeline."""
    return T0 + timedelta(days=days, minutes=minutes)


def lease(owner: str = "host-a/100/1", *, now: float = 0, for_s: float = 30) -> Lease:
    """A claim held by ``owner`` from ``now`` (minutes after T0) for ``for_s`` seconds."""
    start = at(now)
    return Lease(owner, start + timedelta(seconds=for_s), start)


def citation(position: int, *, kept: bool = True, reason: str | None = None, **overrides: Any) -> CitationRecord:
    base = CitationRecord(
        position=position, label=f"S{position}", claim=f"Claim {position} about refunds.",
        exact_quote=f"Annual plans can be refunded within {position * 10} days.", document_id="refund-policy",
        chunk_id=f"chunk-{position}", kept=kept, version="2026-01", title="Refund policy", section="Annual plans",
        page=position, url="https://docs.example.com/refunds", rejection_reason=None if kept else (reason or "not_found"),
    )
    return replace(base, **overrides)


def retrieved(rank: int, **overrides: Any) -> RetrievedRecord:
    base = RetrievedRecord(
        rank=rank, chunk_id=f"chunk-{rank}", document_id="refund-policy", version="2026-01", title="Refund policy",
        search_score=1.0 / rank, rerank_score=0.9 / rank,
    )
    return replace(base, **overrides)


def exchange(**overrides: Any) -> ExchangeRecord:
    """An answered Slack exchange with three retrieved chunks and two kept citations, unless overridden."""
    base = ExchangeRecord(
        id=str(uuid.uuid4()), created_at=T0, source="slack", question="How long do I have to request a refund?",
        outcome="answered", team_id="T1", channel_id="C-support", user_id="U-asker", thread_ts="1700000000.000100",
        question_ts="1700000000.000100", reply_ts="1700000001.000200", event_id=f"Ev{uuid.uuid4().hex[:10]}",
        query="refund window annual plan", answer_text="Within 10 days [S1], or 20 days for teams [S2].",
        timings_ms={"search": 12.5, "rerank": 30.0, "compose": 5.0, "verify": 1.0, "total": 48.5},
        route={"embedder": "e5", "embed_model": "multilingual-e5-small", "reranker": "local",
               "composer": "extractive"},
        prompt_version="compose-v1", language="en",
        retrieved=(retrieved(1), retrieved(2), retrieved(3, document_id="billing-faq", version=None)),
        citations=(citation(1), citation(2)),
    )
    return replace(base, **overrides)
