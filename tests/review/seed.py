"""A small review log whose queue, flags and numbers can be checked by hand (built with storage's builders).

Timeline (minutes after T0), all in thread 1700000000.000100 of C-support unless said otherwise:

    0   flagged      answered, S1 + S2 kept; a lead flags S1 (open), a non-lead reacts to S2
    5   no_support   no support found (a follow-up in the same thread)
    10  error        TimeoutError, in C-other (its own thread)
    15  clean        answered, S1 kept, S2 rejected (not_found); no flags: not in the default queue
    20  dismissed    answered; a lead flagged the whole answer, then resolved it as not_a_problem
    25  pending      claimed by a Slack event, never completed
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from storage.claims import claim_event
from storage.exchanges import record_exchange
from storage.flags import add_flag, resolve_flag
from tests.storage.builders import at, citation, exchange, lease

THREAD = "1700000000.000100"


@dataclass(frozen=True)
class Seeded:
    flagged: str
    no_support: str
    error: str
    clean: str
    dismissed: str
    pending: str
    open_flag: str
    member_reaction: str
    dismissed_flag: str


async def seed_log(sessions: async_sessionmaker[AsyncSession], *, question: str | None = None) -> Seeded:
    """Write the timeline above; `question` replaces the flagged exchange's question (escaping tests)."""
    flagged = exchange(created_at=at(0), thread_ts=THREAD,
                       **({"question": question} if question is not None else {}))
    no_support = exchange(created_at=at(5), thread_ts=THREAD, outcome="no_support", citations=(),
                          question="And for monthly plans?", answer_text="No support found in the documents.",
                          timings_ms={"total": 80.0})
    error = exchange(created_at=at(10), channel_id="C-other", thread_ts="1700000100.000100", outcome="error",
                     citations=(), answer_text=None, error_class="TimeoutError", error_message="search timed out",
                     question="Where is the SLA?", timings_ms={"total": 5000.0})
    clean = exchange(created_at=at(15), thread_ts="1700000200.000100", question="Can add-ons be refunded?",
                     citations=(citation(1), citation(2, kept=False, reason="not_found")))
    dismissed = exchange(created_at=at(20), thread_ts="1700000300.000100", question="Who approves credits?")
    pending_id = str(uuid.uuid4())
    async with sessions() as session:
        for record in (flagged, no_support, error, clean, dismissed):
            await record_exchange(session, record)
        await claim_event(session, "Ev-pending", exchange_id=pending_id, created_at=at(25), source="slack",
                          lease=lease(now=25), channel_id="C-support", question="still thinking")
        open_flag = await add_flag(session, flagged.id, label="S1", user_id="U-lead", reaction="x", is_lead=True,
                                   at=at(1))
        member = await add_flag(session, flagged.id, label="S2", user_id="U-member", reaction="x", is_lead=False,
                                at=at(2))
        whole = await add_flag(session, dismissed.id, label=None, user_id="U-lead", reaction="x", is_lead=True,
                               at=at(21))
        await resolve_flag(session, whole.id, resolution="not_a_problem", note="the quote is right", by="U-lead",
                           at=at(22))
    return Seeded(
        flagged=flagged.id, no_support=no_support.id, error=error.id, clean=clean.id, dismissed=dismissed.id,
        pending=pending_id, open_flag=open_flag.id, member_reaction=member.id, dismissed_flag=whole.id,
    )
