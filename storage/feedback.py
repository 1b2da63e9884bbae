"""Askers' feedback on answers: Slack's 👍 / 👎 buttons, one current vote per exchange and user.

Unlike a lead's flag (``storage.flags``), feedback is anyone's opinion of whether the answer helped: it is
counted in the stats (``helpful`` / ``unhelpful``) and a 👎 puts the exchange in the review queue as "asker
unhappy". A later click by the same user replaces the earlier one; a click delivered twice changes nothing.
Writes for one exchange are serialised on its row, as flags are, so two deliveries of one click leave one row.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.flags import lock_exchange
from storage.models import Feedback
from storage.records import FeedbackRecord, require_aware


async def record_feedback(session: AsyncSession, exchange_id: str, *, user_id: str, positive: bool,
                          at: datetime) -> FeedbackRecord:
    """Record ``user_id``'s vote on the exchange (replacing theirs, if any); commits. ``UnknownExchange`` if none."""
    require_aware("at", at)
    await lock_exchange(session, exchange_id)
    row = await session.scalar(select(Feedback).where(Feedback.exchange_id == exchange_id,
                                                      Feedback.user_id == user_id))
    if row is None:
        row = Feedback(id=str(uuid.uuid4()), exchange_id=exchange_id, user_id=user_id, positive=positive,
                       created_at=at, updated_at=at)
        session.add(row)
    elif row.positive != positive:
        row.positive, row.updated_at = positive, at
    record = _to_record(row)
    await session.commit()
    return record


async def feedback_for(session: AsyncSession, exchange_id: str) -> list[FeedbackRecord]:
    """Every user's current vote on the exchange, oldest first."""
    rows = await session.scalars(select(Feedback).where(Feedback.exchange_id == exchange_id)
                                 .order_by(Feedback.created_at, Feedback.user_id))
    return [_to_record(row) for row in rows]


def _to_record(row: Feedback) -> FeedbackRecord:
    return FeedbackRecord(row.exchange_id, row.user_id, row.positive, row.created_at, row.updated_at)
