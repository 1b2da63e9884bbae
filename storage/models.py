"""The exchange log's tables, as SQLAlchemy 2 typed models that run unchanged on SQLite and PostgreSQL.

Why it looks the way it does:

- One row per exchange (a question and what the bot did with it), with its retrieved chunks and its
  citations as child rows keyed by (exchange, rank/position), so a lead can replay exactly what was searched
  and quoted. Flags are separate rows with their own history: a reaction taken back keeps its row
  (``removed_at``), and a resolution never deletes anything.
- Primary keys are UUID strings (made by the caller), so an exchange has its id before it reaches the
  database: the journal can keep it, and writing it twice is recognisable.
- Times are timezone-aware and stored as UTC (`UTCDateTime`): SQLite has no time zones, so naive values are
  refused on the way in and UTC is attached on the way out; string order then equals time order.
- Closed vocabularies (source, outcome, resolution) are CHECK constraints here and checked again, with a
  readable error, in `storage.records`.
- Constraint and index names come from the naming convention, so Alembic can find them again
  (`alembic check`, batch mode on SQLite). The first migration spells out the same names.

No ORM object leaves the `storage` package: the functions return the frozen records of `storage.records`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    column,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from storage.records import OUTCOMES, RESOLUTIONS, SOURCES

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_N_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

UUID_LENGTH = 36


class UTCDateTime(TypeDecorator[datetime]):
    """An aware datetime, stored as UTC on every database and returned aware (UTC).

    Naive datetimes are refused: guessing their zone is how logs end up an hour off.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()} given to storage: pass an aware datetime (UTC)")
        utc = value.astimezone(UTC)
        # SQLite stores the wall-clock digits only: keep them in UTC so that text order is time order.
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base of the exchange log; its metadata is what `alembic check` compares with the database."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        float: Double(),
    }


class Exchange(Base):
    """One question and what became of it (answered, no support, error, or still pending)."""

    __tablename__ = "exchanges"
    __table_args__ = (
        CheckConstraint(column("source").in_(SOURCES), name="source"),
        CheckConstraint(column("outcome").in_(OUTCOMES), name="outcome"),
        Index("ix_exchanges_created_at", "created_at"),
        Index("ix_exchanges_outcome_created_at", "outcome", "created_at"),
        Index("ix_exchanges_channel_id_created_at", "channel_id", "created_at"),
        Index("ix_exchanges_channel_id_thread_ts", "channel_id", "thread_ts"),
        Index("ix_exchanges_channel_id_reply_ts", "channel_id", "reply_ts"),
    )

    id: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    created_at: Mapped[datetime]
    source: Mapped[str] = mapped_column(String(16))
    team_id: Mapped[str | None] = mapped_column(String())
    channel_id: Mapped[str | None] = mapped_column(String())
    user_id: Mapped[str | None] = mapped_column(String())
    thread_ts: Mapped[str | None] = mapped_column(String())
    question_ts: Mapped[str | None] = mapped_column(String())
    reply_ts: Mapped[str | None] = mapped_column(String())
    # Slack's event id: unique, so only one replica can claim an event (Slack retries a slow event).
    event_id: Mapped[str | None] = mapped_column(String(), unique=True)
    # While pending, the claim is a lease (storage.claims): the instance answering it and until when it holds it.
    claimed_by: Mapped[str | None] = mapped_column(String())
    lease_until: Mapped[datetime | None]
    question: Mapped[str] = mapped_column(Text)
    query: Mapped[str | None] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(String(16))
    answer_text: Mapped[str | None] = mapped_column(Text)
    error_class: Mapped[str | None] = mapped_column(String())
    error_message: Mapped[str | None] = mapped_column(Text)
    timings_ms: Mapped[dict[str, Any]]
    route: Mapped[dict[str, Any]]
    prompt_version: Mapped[str | None] = mapped_column(String())
    language: Mapped[str | None] = mapped_column(String())

    retrieved: Mapped[list[RetrievedChunk]] = relationship(
        back_populates="exchange", order_by="RetrievedChunk.rank", lazy="raise", passive_deletes=True
    )
    citations: Mapped[list[Citation]] = relationship(
        back_populates="exchange", order_by="Citation.position", lazy="raise", passive_deletes=True
    )


class RetrievedChunk(Base):
    """A chunk the search returned for an exchange, in rank order, with the version that was searched."""

    __tablename__ = "retrieved_chunks"

    exchange_id: Mapped[str] = mapped_column(
        String(UUID_LENGTH), ForeignKey("exchanges.id", ondelete="CASCADE"), primary_key=True
    )
    rank: Mapped[int] = mapped_column(Integer, primary_key=True)
    chunk_id: Mapped[str] = mapped_column(String())
    document_id: Mapped[str] = mapped_column(String())
    version: Mapped[str | None] = mapped_column(String())
    title: Mapped[str | None] = mapped_column(Text)
    search_score: Mapped[float | None]
    rerank_score: Mapped[float | None]

    exchange: Mapped[Exchange] = relationship(back_populates="retrieved", lazy="raise")


class Citation(Base):
    """A claim with its verbatim quote, as composed, and whether verification kept or rejected it."""

    __tablename__ = "citations"
    __table_args__ = (Index("ix_citations_document_id", "document_id"),)

    exchange_id: Mapped[str] = mapped_column(
        String(UUID_LENGTH), ForeignKey("exchanges.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str] = mapped_column(String())
    claim: Mapped[str] = mapped_column(Text)
    exact_quote: Mapped[str] = mapped_column(Text)
    document_id: Mapped[str] = mapped_column(String())
    chunk_id: Mapped[str] = mapped_column(String())
    version: Mapped[str | None] = mapped_column(String())
    title: Mapped[str | None] = mapped_column(Text)
    section: Mapped[str | None] = mapped_column(Text)
    page: Mapped[int | None] = mapped_column(Integer)
    url: Mapped[str | None] = mapped_column(Text)
    kept: Mapped[bool] = mapped_column(Boolean)
    rejection_reason: Mapped[str | None] = mapped_column(String())

    exchange: Mapped[Exchange] = relationship(back_populates="citations", lazy="raise")


class Flag(Base):
    """A reaction on the bot's reply: a flag when a lead made it, a plain record otherwise."""

    __tablename__ = "flags"
    __table_args__ = (
        CheckConstraint(column("resolution").in_(RESOLUTIONS), name="resolution"),
        Index("ix_flags_exchange_id", "exchange_id"),
        Index("ix_flags_is_lead_removed_at_resolution", "is_lead", "removed_at", "resolution"),
    )

    id: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    exchange_id: Mapped[str] = mapped_column(String(UUID_LENGTH), ForeignKey("exchanges.id", ondelete="CASCADE"))
    # None flags the whole answer; "S1", "S2", ... flag one citation.
    label: Mapped[str | None] = mapped_column(String())
    user_id: Mapped[str] = mapped_column(String())
    reaction: Mapped[str] = mapped_column(String())
    is_lead: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
    removed_at: Mapped[datetime | None]
    resolution: Mapped[str | None] = mapped_column(String(32))
    resolution_note: Mapped[str | None] = mapped_column(Text)
    resolved_by: Mapped[str | None] = mapped_column(String())
    resolved_at: Mapped[datetime | None]


class Feedback(Base):
    """A 👍 / 👎 on one of the bot's answers (Slack's feedback buttons): what the asker, or anyone who saw the
    answer, thought of it. One row per exchange and user; a later click replaces an earlier one. Not a flag:
    leads flag with reactions, and a 👎 puts the exchange in the review queue as "asker unhappy"."""

    __tablename__ = "feedback"
    __table_args__ = (UniqueConstraint("exchange_id", "user_id"),)

    id: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    exchange_id: Mapped[str] = mapped_column(String(UUID_LENGTH), ForeignKey("exchanges.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String())
    positive: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Handoff(Base):
    """An "Ask a person" click: the exchange was handed off to the channel's people. One row per exchange (its
    unique constraint is what keeps a second click, or Slack delivering one click twice, from posting again)."""

    __tablename__ = "handoffs"
    __table_args__ = (UniqueConstraint("exchange_id"),)

    id: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    exchange_id: Mapped[str] = mapped_column(String(UUID_LENGTH), ForeignKey("exchanges.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String())
    created_at: Mapped[datetime]
    message_ts: Mapped[str | None] = mapped_column(String())


class PrivateReply(Base):
    """A private-first channel's reply, shown to the asker only (an ephemeral message, which Slack keeps nowhere):
    the message as they saw it, and whether they shared it in the thread. One row per exchange; ``shared_at`` set
    once is what keeps a second click, or Slack delivering one twice, from posting the answer again."""

    __tablename__ = "private_replies"
    __table_args__ = (Index("ix_private_replies_channel_id_message_ts", "channel_id", "message_ts"),)

    exchange_id: Mapped[str] = mapped_column(
        String(UUID_LENGTH), ForeignKey("exchanges.id", ondelete="CASCADE"), primary_key=True
    )
    channel_id: Mapped[str] = mapped_column(String())
    user_id: Mapped[str] = mapped_column(String())  # the asker, the only one who saw it
    message_ts: Mapped[str] = mapped_column(String())  # the ephemeral message (its buttons' clicks carry it)
    message: Mapped[dict[str, Any]]  # {"text": …, "blocks": […]}: what the asker saw
    created_at: Mapped[datetime]
    shared_by: Mapped[str | None] = mapped_column(String())
    shared_at: Mapped[datetime | None]
    shared_ts: Mapped[str | None] = mapped_column(String())  # the reply posted in the thread, once shared


class Suppression(Base):
    """A chunk a lead confirmed bad for one question: never quoted again for it, nor for a near-duplicate.

    `lifted_at` is set when the flag is resolved otherwise later; a new version of the document clears it
    without a write (its chunks have other ids and content hashes).
    """

    __tablename__ = "suppressions"
    __table_args__ = (
        UniqueConstraint("flag_id", "chunk_id"),
        Index("ix_suppressions_chunk_id", "chunk_id"),
        Index("ix_suppressions_lifted_at", "lifted_at"),
    )

    id: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    flag_id: Mapped[str] = mapped_column(String(UUID_LENGTH), ForeignKey("flags.id", ondelete="CASCADE"))
    exchange_id: Mapped[str] = mapped_column(String(UUID_LENGTH), ForeignKey("exchanges.id", ondelete="CASCADE"))
    chunk_id: Mapped[str] = mapped_column(String())
    document_id: Mapped[str] = mapped_column(String())
    version: Mapped[str | None] = mapped_column(String())
    content_hash: Mapped[str | None] = mapped_column(String())
    question: Mapped[str] = mapped_column(Text)
    query: Mapped[str] = mapped_column(Text)
    embedder: Mapped[str | None] = mapped_column(String())
    query_vector: Mapped[list[float] | None] = mapped_column(JSON())
    created_by: Mapped[str] = mapped_column(String())
    created_at: Mapped[datetime]
    lifted_at: Mapped[datetime | None]
