"""Private-first help channels: the private_replies table.

Revision ID: 0006
Revises: 0005
Create Date: 2027-01-20

In a channel with ``private_first``, an answer is shown to the asker only (an ephemeral message, which Slack
keeps nowhere we can read back): one row per exchange keeps that message as they saw it, so **Share in thread**
can post it as the bot's reply (from any replica, after a restart) and records who shared it, when, and the post.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "private_replies",
        sa.Column("exchange_id", sa.String(length=36), nullable=False),
        sa.Column("channel_id", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("message_ts", sa.String(), nullable=False),
        sa.Column("message", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("shared_by", sa.String(), nullable=True),
        sa.Column("shared_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("shared_ts", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["exchange_id"], ["exchanges.id"], name="fk_private_replies_exchange_id_exchanges",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("exchange_id", name="pk_private_replies"),
    )
    op.create_index("ix_private_replies_channel_id_message_ts", "private_replies", ["channel_id", "message_ts"])


def downgrade() -> None:
    op.drop_index("ix_private_replies_channel_id_message_ts", table_name="private_replies")
    op.drop_table("private_replies")
