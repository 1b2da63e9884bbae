"""Alembic migrations of the exchange log (a package only so that an installed Verbatim ships them)."""
