"""The small things both the terminal and the page say: time windows, ids, percentages, durations, exports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.review.errors import InvalidExchangeId, InvalidFlagId, InvalidSince
from bot.review.export import PriorTurn, eval_question, history_messages
from bot.review.formatting import (
    SINCE_FORMS,
    milliseconds,
    one_line,
    outcome_label,
    parse_exchange_id,
    parse_flag_id,
    parse_since,
    percent,
    resolution_label,
)
from tests.storage.builders import exchange

NOW = datetime(2026, 11, 29, 12, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7d", NOW - timedelta(days=7)),
        (" 24h ", NOW - timedelta(hours=24)),
        ("2W", NOW - timedelta(weeks=2)),
        ("0d", NOW),
        ("2026-11-01", datetime(2026, 11, 1, tzinfo=UTC)),
        ("2026-11-01T09:00Z", datetime(2026, 11, 1, 9, 0, tzinfo=UTC)),
        ("2026-11-01T09:00:30+02:00", datetime(2026, 11, 1, 7, 0, 30, tzinfo=UTC)),
        ("2026-11-01 09:00", datetime(2026, 11, 1, 9, 0, tzinfo=UTC)),
    ],
)
def test_since_accepts_durations_dates_and_datetimes(text: str, expected: datetime) -> None:
    assert parse_since(text, NOW) == expected


@pytest.mark.parametrize("text", ["", "7", "7m", "yesterday", "2026-13-01", "2026-11-31", "-3d", "1e3d", "999999w"])
def test_a_bad_since_names_the_value_and_the_accepted_forms(text: str) -> None:
    with pytest.raises(InvalidSince) as caught:
        parse_since(text, NOW)
    assert str(caught.value) == f"--since {text!r} is not {SINCE_FORMS}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3f2b8c1e-9d4a-4c57-8e21-6b0f1a2c3d4e", "3f2b8c1e-9d4a-4c57-8e21-6b0f1a2c3d4e"),
        (" 3F2B8C1E-9D4A-4C57-8E21-6B0F1A2C3D4E\n", "3f2b8c1e-9d4a-4c57-8e21-6b0f1a2c3d4e"),
        ("3f2b8c1e9d4a4c578e216b0f1a2c3d4e", "3f2b8c1e-9d4a-4c57-8e21-6b0f1a2c3d4e"),
    ],
)
def test_ids_are_accepted_as_a_lead_pastes_them(text: str, expected: str) -> None:
    assert parse_exchange_id(text) == expected
    assert parse_flag_id(text) == expected


@pytest.mark.parametrize("text", ["12", "not-an-id", "3f2b8c1e-9d4a-4c57-8e21", "'; DROP TABLE exchanges; --"])
def test_a_malformed_id_is_named_in_one_line(text: str) -> None:
    with pytest.raises(InvalidExchangeId) as caught:
        parse_exchange_id(text)
    assert str(caught.value).startswith(f"{text!r} is not an exchange id: expected a UUID")
    with pytest.raises(InvalidFlagId, match="is not a flag id"):
        parse_flag_id(text)


@pytest.mark.parametrize(
    ("function", "value", "expected"),
    [
        (percent, None, "–"),
        (percent, 0.0, "0.0%"),
        (percent, 0.125, "12.5%"),
        (percent, 1.0, "100.0%"),
        (milliseconds, None, "–"),
        (milliseconds, 48.5, "48 ms"),
        (milliseconds, 999.4, "999 ms"),
        (milliseconds, 1250.0, "1.25 s"),
        (outcome_label, "no_support", "no support"),
        (outcome_label, "answered", "answered"),
        (resolution_label, None, "open"),
        (resolution_label, "fixed_in_docs", "fixed in docs"),
        (one_line, "a\n\n b\tc", "a b c"),
        (one_line, None, ""),
        (one_line, "x" * 130, "x" * 119 + "…"),
    ],
)
def test_values_read_the_same_everywhere(function: object, value: object, expected: str) -> None:
    assert function(value) == expected  # type: ignore[operator]


def test_an_exported_question_keeps_its_id_channel_and_earlier_turns() -> None:
    record = exchange(question="And for monthly plans?", channel_id="C-support")
    turns = [PriorTurn("How long for annual plans?", "Within 30 days [S1]."), PriorTurn("Who approves?", None)]
    assert eval_question(record, turns) == {
        "id": record.id, "question": "And for monthly plans?", "channel": "C-support",
        "history": [
            {"role": "user", "text": "How long for annual plans?"},
            {"role": "assistant", "text": "Within 30 days [S1]."},
            {"role": "user", "text": "Who approves?"},
        ],
    }
    cli_record = exchange(channel_id=None, thread_ts=None)
    assert eval_question(cli_record, []) == {"id": cli_record.id, "question": cli_record.question, "history": []}
    assert history_messages([]) == []
