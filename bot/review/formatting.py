"""Small pure helpers shared by the terminal and the web page, so both say the same thing the same way.

Nothing here does I/O or knows about click, rich or aiohttp: values in, text out, table-driven tests.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, date, datetime, time, timedelta

from bot.review.errors import InvalidExchangeId, InvalidFlagId, InvalidSince

SINCE_FORMS = "a duration such as 7d, 24h or 2w, or a UTC date such as 2026-11-01 (or 2026-11-01T09:00Z)"
_DURATION = re.compile(r"^\s*(\d{1,6})\s*([hdw])\s*$", re.IGNORECASE)
_UNIT_HOURS = {"h": 1, "d": 24, "w": 24 * 7}

OUTCOME_LABELS = {"answered": "answered", "no_support": "no support", "error": "error", "pending": "pending",
                  "not_answered": "not answered (silent)"}
RESOLUTION_LABELS = {
    "confirmed_bad": "confirmed bad",
    "not_a_problem": "not a problem",
    "fixed_in_docs": "fixed in docs",
}


def flags_label(lead_flags: int, unresolved: int, unhappy: int, handed_off: bool = False) -> str:
    """The queue's "flags" cell: leads' flags (open / all), the askers' 👎 ("asker unhappy"), a hand-off.

    >>> flags_label(2, 1, 0), flags_label(0, 0, 1), flags_label(1, 1, 2), flags_label(0, 0, 0, True)
    ('1 open / 2', 'asker unhappy', '1 open / 1, asker unhappy ×2', 'handed off')
    """
    parts = [f"{unresolved} open / {lead_flags}"] if lead_flags else []
    if unhappy:
        parts.append("asker unhappy" + (f" ×{unhappy}" if unhappy > 1 else ""))
    if handed_off:
        parts.append("handed off")
    return ", ".join(parts)


def parse_since(text: str, now: datetime) -> datetime:
    """The moment a `--since` value names: `7d`/`24h`/`2w` before `now`, or a date / datetime (UTC if no zone).

    Raises InvalidSince, whose message lists the accepted forms.
    """
    value = text.strip()
    match = _DURATION.match(value)
    try:
        if match:
            return now - timedelta(hours=int(match.group(1)) * _UNIT_HOURS[match.group(2).lower()])
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return datetime.combine(date.fromisoformat(value), time(0), tzinfo=UTC)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?", value):
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        pass
    raise InvalidSince(f"--since {text!r} is not {SINCE_FORMS}")


def parse_exchange_id(text: str) -> str:
    """The canonical form of an exchange id typed by a lead (any case, with or without hyphens)."""
    return _canonical_uuid(text, "an exchange id", InvalidExchangeId)


def parse_flag_id(text: str) -> str:
    """The canonical form of a flag id (as `show` prints it)."""
    return _canonical_uuid(text, "a flag id", InvalidFlagId)


def _canonical_uuid(text: str, what: str, error: type[ValueError]) -> str:
    try:
        return str(uuid.UUID(text.strip()))
    except (ValueError, AttributeError):
        raise error(f"{text!r} is not {what}: expected a UUID such as 3f2b8c1e-9d4a-4c57-8e21-6b0f1a2c3d4e") from None


def percent(rate: float | None) -> str:
    """A rate as a percentage with one decimal ("12.5%"), or an en dash when nothing was counted."""
    if rate is None:
        return "–"
    return f"{rate * 100:.1f}%"


def milliseconds(value: float | None) -> str:
    """A duration for people: "48 ms", "1.25 s", or an en dash when it was not measured."""
    if value is None:
        return "–"
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.2f} s"


def moment(value: datetime) -> str:
    """A timestamp in UTC to the minute: what a lead needs to find the Slack thread again."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def one_line(text: str | None, limit: int = 120) -> str:
    """Text squeezed to one line for a table cell, cut with an ellipsis past `limit` characters."""
    squeezed = " ".join((text or "").split())
    return squeezed if len(squeezed) <= limit else squeezed[: limit - 1].rstrip() + "…"


def ratio(part: int, whole: int) -> float | None:
    """part / whole, or None when there is nothing to divide by."""
    return part / whole if whole else None


def outcome_label(outcome: str) -> str:
    """How an outcome reads to a lead ("no support", not "no_support")."""
    return OUTCOME_LABELS.get(outcome, outcome)


def resolution_label(resolution: str | None) -> str:
    """How a resolution reads ("open" when nobody resolved the flag yet)."""
    return "open" if resolution is None else RESOLUTION_LABELS.get(resolution, resolution)


def score(value: float | None) -> str:
    """A retrieval or rerank score to three decimals, or an en dash when there was none."""
    return "–" if value is None else f"{value:.3f}"
