"""A chunk's or a question's language is told by its script, so search and splitting use the right rules."""

from __future__ import annotations

import pytest

from retrieval.language import detect_language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("How do I get a refund?", "en"),
        ("返金は14日以内に行われます。", "ja"),
        ("パスワードをリセット", "ja"),  # katakana only
        ("ｶﾀｶﾅ", "ja"),  # half-width katakana
        ("退款政策", "ja"),  # ideographs only: mostly CJK
        ("Slack の設定", "ja"),  # one kana is enough
        ("Как вернуть деньги?", "ru"),
        ("Ошибка 403 в Slack API при OAuth", "ru"),  # Latin product names, still Russian
        ("Настройте SSO в Slack через Okta", "ru"),
        ("Our Moscow office (офис) is closed on public holidays in Russia.", "en"),
        ("Invoice INV-2024-001 for 漢 customer", "en"),  # one ideograph among Latin letters
        ("", "en"),
        ("12:30 — 14:00 !!!", "en"),  # no letters at all
    ],
)
def test_detect_language_by_script(text: str, expected: str) -> None:
    assert detect_language(text) == expected

