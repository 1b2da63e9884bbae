"""The exchange log: exchanges, their retrieved chunks and citations, and the leads' flags.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Written out in full rather than imported from storage.models: a migration is a snapshot of the schema at
one point in time and must not change when the models do. Names follow the models' naming convention.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "exchanges",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("team_id", sa.String(), nullable=True),
        sa.Column("channel_id", sa.String(), nullable=True),
        sa.Column("user_id", sa.String(), nullable=True),
        sa.Column("thread_ts", sa.String(), nullable=True),
        sa.Column("question_ts", sa.String(), nullable=True),
        sa.Column("reply_ts", sa.String(), nullable=True),
        sa.Column("event_id", sa.String(), nullable=True),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("answer_text", sa.Text(), nullable=True),
        sa.Column("error_class", sa.String(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("timings_ms", sa.JSON(), nullable=False),
        sa.Column("route", sa.JSON(), nullable=False),
        sa.Column("prompt_version", sa.String(), nullable=True),
        sa.Column("language", sa.String(), nullable=True),
        sa.CheckConstraint("source IN ('slack', 'cli', 'eval', 'api')", name=op.f("ck_exchanges_source")),
        sa.CheckConstraint(
            "outcome IN ('pending', 'answered', 'no_support', 'error')", name=op.f("ck_exchanges_outcome")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exchanges")),
        sa.UniqueConstraint("event_id", name=op.f("uq_exchanges_event_id")),
    )
    op.create_index("ix_exchanges_created_at", "exchanges", ["created_at"])
    op.create_index("ix_exchanges_outcome_created_at", "exchanges", ["outcome", "created_at"])
    op.create_index("ix_exchanges_channel_id_created_at", "exchanges", ["channel_id", "created_at"])
    op.create_index("ix_exchanges_channel_id_thread_ts", "exchanges", ["channel_id", "thread_ts"])
    op.create_index("ix_exchanges_channel_id_reply_ts", "exchanges", ["channel_id", "reply_ts"])

    op.create_table(
        "retrieved_chunks",
        sa.Column("exchange_id", sa.String(length=36), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.String(), nullable=False),
        sa.Column("document_id", sa.String(), nullable=False),
        sa.Column("version", sa.String(), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("search_score", sa.Double(), nullable=True),
        sa.Column("rerank_score", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(
            ["exchange_id"], ["exchanges.id"], name=op.f("fk_retrieved_chunks_exchange_id_exchanges"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("exchange_id", "rank", name=op.f("pk_retrieved_chunks")),
    )

    op.create_table(
        "citations",
        sa.Column("exchange_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(), nullable=False),
        sa.Column("claim", sa.Text(), nullable=False),
        sa.Column("exact_quote", sa.Text(), nullable=False),
        sa.Column("document_id", sa.String(), nullable=False),
        sa.Column("chunk_id", sa.String(), nullable=False),
        sa.Column("version", sa.String(), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("section", sa.Text(), nullable=True),
        sa.Column("page", sa.Integer(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("kept", sa.Boolean(), nullable=False),
        sa.Column("rejection_reason", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(
            ["exchange_id"], ["exchanges.id"], name=op.f("fk_citations_exchange_id_exchanges"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("exchange_id", "position", name=op.f("pk_citations")),
    )
    op.create_index("ix_citations_document_id", "citations", ["document_id"])

    op.create_table(
        "flags",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("exchange_id", sa.String(length=36), nullable=False),
        sa.Column("label", sa.String(), nullable=True),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("reaction", sa.String(), nullable=False),
        sa.Column("is_lead", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("removed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolution", sa.String(length=32), nullable=True),
        sa.Column("resolution_note", sa.Text(), nullable=True),
        sa.Column("resolved_by", sa.String(), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "resolution IN ('confirmed_bad', 'not_a_problem', 'fixed_in_docs')", name=op.f("ck_flags_resolution")
        ),
        sa.ForeignKeyConstraint(
            ["exchange_id"], ["exchanges.id"], name=op.f("fk_flags_exchange_id_exchanges"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flags")),
    )
    op.create_index("ix_flags_exchange_id", "flags", ["exchange_id"])
    op.create_index("ix_flags_is_lead_removed_at_resolution", "flags", ["is_lead", "removed_at", "resolution"])


def downgrade() -> None:
    op.drop_table("flags")
    op.drop_table("citations")
    op.drop_table("retrieved_chunks")
    op.drop_table("exchanges")
