"""What one recorded exchange adds to the counts operators scrape: by the typed values the recorder hands over
(an error's cause, the fallbacks taken), never by parsing the record's strings or comparing class names."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.answer.ask import Recorded
from bot.answer.types import ErrorCause, Fallback, FallbackPart
from bot.metrics import Metrics
from tests.storage.builders import exchange

ANSWERED = exchange()
FAILED = exchange(outcome="error", error_class="StoreError", citations=(), answer_text=None)


def counted(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The errors, fallbacks and database-error samples that are not zero."""
    names = ("verbatim_answer_errors_total", "verbatim_fallbacks_total", "verbatim_database_errors_total")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(metrics.exposition().decode())
            for s in family.samples if s.name in names and s.value}


@pytest.mark.parametrize(("recorded", "expected"), [
    (Recorded(ANSWERED, True), {}),
    (Recorded(ANSWERED, True, fallbacks=(Fallback(FallbackPart.COMPOSE, "http_500"),
                                         Fallback(FallbackPart.RERANK, "Cohere Rerank failed (ReadTimeout)"))),
     {("verbatim_fallbacks_total", (("part", "compose"),)): 1, ("verbatim_fallbacks_total", (("part", "rerank"),)): 1}),
    (Recorded(FAILED, True, ErrorCause.STORE), {("verbatim_answer_errors_total", (("cause", "store"),)): 1}),
    (Recorded(FAILED, False, ErrorCause.DELIVERY), {("verbatim_answer_errors_total", (("cause", "delivery"),)): 1,
                                                    ("verbatim_database_errors_total", (("operation", "record"),)): 1}),
], ids=["answered", "two fallbacks", "store down", "undelivered and journaled"])
def test_what_one_exchange_adds_to_the_counts(recorded: Recorded, expected: dict) -> None:
    metrics = Metrics.create()
    metrics.exchange_recorded(recorded)

    assert counted(metrics) == expected
