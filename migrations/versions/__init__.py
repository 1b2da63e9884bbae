"""One revision per schema change; Alembic skips this file."""
