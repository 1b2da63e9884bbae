"""A Slack event's claim is a lease: who holds it and until when.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

A pending exchange used to be claimed forever by whoever inserted it; a process killed between the claim and
the reply left the question unanswered, every retry dropped as "already claimed". With an owner and an expiry
a retry or a restarted instance can take over a claim whose owner is gone or has stopped renewing it
(`storage.claims`). Rows written before this revision have neither: they count as expired.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("exchanges") as batch:
        batch.add_column(sa.Column("claimed_by", sa.String(), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("exchanges") as batch:
        batch.drop_column("lease_until")
        batch.drop_column("claimed_by")
