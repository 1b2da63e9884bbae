"""A citation a lead confirmed bad is remembered for its question: the suppressions table.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

One row per (flagged exchange, chunk) that a lead resolved as ``confirmed_bad``: the chunk with its document,
version and content hash (a new version of the document clears it), the question as asked and searched with
its query vector (JSON: 384 floats for e5, the same text on SQLite and PostgreSQL), and who resolved it when.
The answer path reads the rows still in force (`storage.suppressions`) and never quotes that chunk again for
the same or a near-duplicate question.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "suppressions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("flag_id", sa.String(length=36), nullable=False),
        sa.Column("exchange_id", sa.String(length=36), nullable=False),
        sa.Column("chunk_id", sa.String(), nullable=False),
        sa.Column("document_id", sa.String(), nullable=False),
        sa.Column("version", sa.String(), nullable=True),
        sa.Column("content_hash", sa.String(), nullable=True),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("embedder", sa.String(), nullable=True),
        sa.Column("query_vector", sa.JSON(), nullable=True),
        sa.Column("created_by", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["exchange_id"], ["exchanges.id"], name=op.f("fk_suppressions_exchange_id_exchanges"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["flag_id"], ["flags.id"], name=op.f("fk_suppressions_flag_id_flags"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_suppressions")),
        sa.UniqueConstraint("flag_id", "chunk_id", name=op.f("uq_suppressions_flag_id_chunk_id")),
    )
    op.create_index("ix_suppressions_chunk_id", "suppressions", ["chunk_id"])
    op.create_index("ix_suppressions_lifted_at", "suppressions", ["lifted_at"])


def downgrade() -> None:
    op.drop_index("ix_suppressions_lifted_at", table_name="suppressions")
    op.drop_index("ix_suppressions_chunk_id", table_name="suppressions")
    op.drop_table("suppressions")
