"""BM25 sees word stems, so inflected forms of a word in the question still find the document."""

from __future__ import annotations

import pytest

from retrieval.stemming import stem_text
from retrieval.store import bm25_query


@pytest.mark.parametrize(
    ("a", "b", "language"),
    [
        ("вторую линию", "вторая линия", "ru"),
        ("обращения передаются", "обращение передаётся", "ru"),
        ("refunds processed", "refund processing", "en"),
        ("Ёлки", "елка", "ru"),
        ("Slack-канал", "slack канала", "ru"),  # Latin product names in Russian text keep English rules
    ],
)
def test_inflected_forms_share_their_stems(a: str, b: str, language: str) -> None:
    assert stem_text(a, language) == stem_text(b, language)


def test_japanese_goes_to_weaviates_own_tokenizer_unstemmed() -> None:
    assert bm25_query("返品は何日以内ですか", "ja") == ("body_ja", "返品は何日以内ですか")
    assert bm25_query("Refunds?", "en") == ("body_stem", "refund")
    assert bm25_query("Refunds?", "en", stemming=False) == ("body", "Refunds?")
