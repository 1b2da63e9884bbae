"""Help channels: the ``not_answered`` outcome and the hand-offs table.

Revision ID: 0005
Revises: 0004
Create Date: 2027-01-10

In a help channel's every-question mode the bot stays silent on a question it cannot support and records the
exchange as ``not_answered`` (the gaps page counts it); an "Ask a person" click is one ``handoffs`` row per
exchange (unique: a second click or a redelivered one never posts again), with who clicked, when, and the post.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BEFORE = "outcome IN ('pending', 'answered', 'no_support', 'error')"
_AFTER = "outcome IN ('pending', 'answered', 'no_support', 'error', 'not_answered')"


def upgrade() -> None:
    with op.batch_alter_table("exchanges") as batch:  # SQLite: the table is copied with the new constraint
        batch.drop_constraint(op.f("ck_exchanges_outcome"), type_="check")
        batch.create_check_constraint(op.f("ck_exchanges_outcome"), _AFTER)
    op.create_table(
        "handoffs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("exchange_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("message_ts", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["exchange_id"], ["exchanges.id"], name="fk_handoffs_exchange_id_exchanges",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_handoffs"),
        sa.UniqueConstraint("exchange_id", name="uq_handoffs_exchange_id"),
    )


def downgrade() -> None:
    op.drop_table("handoffs")
    op.execute(sa.text("DELETE FROM exchanges WHERE outcome = 'not_answered'"))
    with op.batch_alter_table("exchanges") as batch:
        batch.drop_constraint(op.f("ck_exchanges_outcome"), type_="check")
        batch.create_check_constraint(op.f("ck_exchanges_outcome"), _BEFORE)
