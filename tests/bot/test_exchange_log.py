"""The one way the exchange log's failures reach the front ends: an outage as ``LogUnavailable`` (the user is told
to try later, nothing lost), anything else as itself (a bug is never passed off as "the database is down")."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from bot.exchange_log import LogUnavailable, reached


@pytest.mark.parametrize("error", [
    OperationalError("INSERT …", {}, sqlite3.OperationalError("database is locked")),
    TimeoutError("no answer within 10 s"),
    ConnectionRefusedError(111, "Connection refused"),
])
def test_an_outage_becomes_log_unavailable_naming_the_driver_s_error_class(error: BaseException) -> None:
    with pytest.raises(LogUnavailable) as raised, reached("hand-off"):
        raise error
    assert raised.value.cause == type(error).__name__ and "hand-off" in str(raised.value)


@pytest.mark.parametrize("error", [
    IntegrityError("INSERT …", {}, sqlite3.IntegrityError("UNIQUE constraint failed: handoffs.exchange_id")),
    ProgrammingError("SELECT …", {}, sqlite3.ProgrammingError("no such column: exchanges.asker")),
])
def test_a_constraint_violation_or_a_bug_goes_on_as_itself_not_as_an_outage(error: BaseException) -> None:
    with pytest.raises(type(error)), reached("hand-off"):
        raise error
