"""Askers' feedback on answers: Slack's 👍 / 👎 buttons, one row per exchange and user.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-15

Leads flag answers with reactions (``flags``); everyone else can now say whether an answer helped them with
the feedback buttons under it. A 👎 puts the exchange in the review queue ("asker unhappy").
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "feedback",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("exchange_id", sa.String(36), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("positive", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["exchange_id"], ["exchanges.id"], name="fk_feedback_exchange_id_exchanges",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_feedback"),
        sa.UniqueConstraint("exchange_id", "user_id", name="uq_feedback_exchange_id_user_id"),
    )


def downgrade() -> None:
    op.drop_table("feedback")
