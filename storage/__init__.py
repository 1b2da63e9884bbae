"""The exchange log: every question, what was searched and quoted, the outcome, and the leads' flags.

    models      SQLAlchemy 2 tables (SQLite and PostgreSQL); migrations/ creates them (`alembic upgrade head`)
    records     the frozen dataclasses that go in and come out; no ORM object leaves this package
    db          engine and session factory from a URL; `check_schema` at start-up
    migrate     Alembic from code: the revision this code needs, `upgrade(url)`
    exchanges   claim a Slack event, record an exchange, read exchanges back, the review queue
    flags       reactions on replies: flags, their removal and resolution
    stats       per-day and per-channel metrics (no-support rate, wrong-citation rate, latency)
    journal     exchanges the database could not take, kept on disk and replayed later; refused ones set aside
    faults      is_outage: a failed write that waits in the journal, or one that is set aside
    errors      the error hierarchy; messages are one line and never show a password

Functions take an `AsyncSession` from the one `async_sessionmaker` built at start-up; nothing here creates
an engine on import or keeps global state. This package never imports bot, slack or weaviate.
"""
