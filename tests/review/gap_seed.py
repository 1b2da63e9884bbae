"""A log of no-support questions about three gaps, for the gaps tests (desk, CLI, web page), relative to now.

    refunds  3 questions from 2 people (U1, U2), 2 in the last 7 days and 1 nine days ago; each retrieved the
             refund policy's chunk-9 first (it did not support an answer)
    sso      2 questions from 1 person (U3)
    invoices 1 question from U4 with a <script> in it
Left out of the default report: an answered question, a no-support question 60 days old. In C-other: one
no-support question about refunds (left out with --channel C-support).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from storage.exchanges import record_exchange
from storage.records import ExchangeRecord
from tests.storage.builders import exchange, retrieved

HOSTILE_GAP = "<script>alert('gap')</script> How do I export all invoices as one PDF file?"
REFUNDS = ("How do I get a refund for my annual plan?", "Can I get a refund on an annual plan?",
           "Is a refund possible for an annual plan after 30 days?")
SSO = ("How do I set up single sign-on (SSO) with Okta?", "How do I configure SSO with Okta for my team?")


@dataclass(frozen=True)
class GapLog:
    refunds: tuple[str, ...]
    sso: tuple[str, ...]
    invoices: str
    other_channel: str
    answered: str
    old: str


async def seed_gaps(sessions: async_sessionmaker[AsyncSession], now: datetime | None = None) -> GapLog:
    now = now or datetime.now(UTC)

    def gap(question: str, user: str, days: float, **overrides: Any) -> ExchangeRecord:
        return exchange(created_at=now - timedelta(days=days), outcome="no_support", question=question, user_id=user,
                        citations=(), answer_text="No support found in the documents.", **overrides)

    refund_chunks = (retrieved(1, chunk_id="chunk-9", title="Refund policy"),
                     retrieved(2, chunk_id="chunk-4", document_id="billing-faq", title="Billing FAQ"))
    refunds = [gap(REFUNDS[0], "U1", 1, retrieved=refund_chunks), gap(REFUNDS[1], "U2", 2, retrieved=refund_chunks),
               gap(REFUNDS[2], "U2", 9, retrieved=refund_chunks[:1])]
    sso = [gap(SSO[0], "U3", 3), gap(SSO[1], "U3", 4)]
    invoices = gap(HOSTILE_GAP, "U4", 5)
    other = gap("Can I get a refund for my annual plan?", "U5", 1, channel_id="C-other")
    answered = exchange(created_at=now - timedelta(days=1), question="How do I get a refund for a monthly plan?")
    old = gap("How do I get a refund for my annual plan?", "U6", 60)
    async with sessions() as session:
        for record in (*refunds, *sso, invoices, other, answered, old):
            await record_exchange(session, record)
    return GapLog(refunds=tuple(r.id for r in refunds), sso=tuple(r.id for r in sso), invoices=invoices.id,
                  other_channel=other.id, answered=answered.id, old=old.id)
