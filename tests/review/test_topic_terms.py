"""A topic's label: the terms common in its questions and rare elsewhere, in English, Russian and Japanese."""

from __future__ import annotations

import pytest

from bot.review.topic_terms import Term, question_terms, topic_label


@pytest.mark.parametrize(
    ("text", "language", "shown"),
    [
        pytest.param("How do I get a refund for my annual plan?", "en", ["refund", "annual", "plan"],
                     id="en: question and function words are not terms"),
        pytest.param("Где настроить SSO для команды?", "ru", ["настроить", "sso", "команды"],
                     id="ru: Latin product names inside Russian are terms"),
        pytest.param("返金ポリシーはどこですか？", "ja", ["返金", "ポリシー"],
                     id="ja: kanji and katakana runs, hiragana left out"),
        pytest.param("SSOの設定方法は？", "ja", ["sso", "設定方法"], id="ja: Latin runs too; a kanji compound is one term"),
        pytest.param("何年に設立されたか", "ja", ["設立"], id="ja: question kanji are not terms"),
        pytest.param("What is 2 + 2?", "en", [], id="digits and one letter are not terms"),
    ],
)
def test_question_terms(text: str, language: str, shown: list[str]) -> None:
    assert [term.shown for term in question_terms(text, language)] == shown


@pytest.mark.parametrize(
    ("a", "b", "language"),
    [
        ("refunds", "refunded", "en"),
        ("возврата", "возврат", "ru"),
        ("ёлка", "елки", "ru"),
    ],
)
def test_forms_of_one_word_are_one_term(a: str, b: str, language: str) -> None:
    (first,) = question_terms(a, language)
    (second,) = question_terms(b, language)
    assert first.key == second.key


def test_the_language_is_detected_when_not_logged() -> None:
    assert [term.shown for term in question_terms("返金できますか")] == ["返金"]


def terms(*questions: str) -> list[list[Term]]:
    return [question_terms(question, None) for question in questions]


REFUNDS = terms("How do I get a refund?", "Refund for annual plans?", "Are refunds possible for monthly plans?")
SSO = terms("How do I set up SSO?", "SSO login fails for my team")
EVERYWHERE = [*REFUNDS, *SSO]


@pytest.mark.parametrize(
    ("topic", "size", "label"),
    [
        pytest.param(REFUNDS, 2, "refund · plans", id="the most common form is shown, most telling term first"),
        pytest.param(SSO, 1, "sso", id="a term in every question of the topic leads"),
        pytest.param(SSO, 3, "sso · fails · login", id="ties are broken by the term"),
        pytest.param(terms("Why?"), 3, "Why?", id="a topic with no terms is labelled by its question"),
    ],
)
def test_topic_label(topic: list[list[Term]], size: int, label: str) -> None:
    assert topic_label(topic, EVERYWHERE + topic, size=size, fallback="Why?") == label
