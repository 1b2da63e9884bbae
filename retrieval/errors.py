"""Small helpers for turning library errors into our one-line messages."""

from __future__ import annotations


def first_line(error: BaseException, limit: int = 300) -> str:
    """The first line of an error, trimmed: enough to name a cause, never a library's whole dump."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:limit]
