"""Hard negatives ranked as the service ranks its quotes (``--mined-by e5``): the gold-removed negatives are the
sentences the closeness puts first among *every* other paragraph of the article, and e5's closeness is the
extractive composer's score — e5 similarity plus its bonus for the question's terms."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from bot.answer.extractive import ExtractiveConfig
from bot.answer.lexical import content_terms, coverage
from retrieval.embedders.local import E5Embedder
from retrieval.sentences import Sentence
from train.judge import data
from train.judge.mined import E5Closeness

PASSAGES = {
    "p1": ("Shipping", "Standard shipping costs $5 per order. Orders ship from Osaka. Express shipping is faster."),
    "p2": ("Shipping", "Shipping to Hokkaido takes longer. Tracking is by email."),
    "p3": ("Shipping", "The shipping cost per order is refunded for damaged items. Labels are printed in Osaka."),
    "p4": ("Shipping", "Parcels leave the warehouse daily. A courier collects them at noon."),  # no term of the question
    "p5": ("Returns", "Returns of any order are accepted within 30 days."),
}
COST = data.Question("q1", "How much does standard shipping cost per order?", "p1", (("$5", -1),), True)


def _other_paragraph(closeness: data.Closeness | None) -> list[str]:
    examples = data.qa_examples("help", "en", PASSAGES, [COST], random.Random(1), None, others=2, closeness=closeness)
    return [e.pair.candidate for e in examples if e.origin.endswith("other-paragraph")]


def _by(scores: dict[str, float]) -> data.Closeness:
    """A closeness read from a table (unlisted sentences: 0)."""
    return lambda question, language, sentences: [scores.get(s.text, 0.0) for s in sentences]


@pytest.mark.parametrize(("closeness", "expected"), [
    # By terms, among the two paragraphs holding most of the question's terms (p3, p2): the recipe that shipped.
    (None, ["The shipping cost per order is refunded for damaged items.", "Shipping to Hokkaido takes longer."]),
    # Given a closeness, among every other paragraph of the article: p4 shares no term and is still reached.
    (_by({"A courier collects them at noon.": 0.9, "Tracking is by email.": 0.8}),
     ["A courier collects them at noon.", "Tracking is by email."]),
    # Never another article's paragraph, however close (p5), nor the gold paragraph's own sentences.
    (_by({"Returns of any order are accepted within 30 days.": 1.0, "Orders ship from Osaka.": 1.0,
          "Parcels leave the warehouse daily.": 0.5}),
     ["Parcels leave the warehouse daily.", "The shipping cost per order is refunded for damaged items."]),
])
def test_the_closeness_picks_the_gold_removed_negatives_among_the_article_s_other_paragraphs(
        closeness: data.Closeness | None, expected: list[str]) -> None:
    assert _other_paragraph(closeness) == expected


@pytest.mark.parametrize(("closest", "expected"), [
    ("Express shipping is faster.", ["Express shipping is faster."]),
    ("Orders ship from Osaka.", []),  # it follows the answer, which it would be shown with: it may answer, so dropped
])
def test_the_closeness_also_picks_the_gold_paragraph_s_negative(closest: str, expected: list[str]) -> None:
    closeness = _by({closest: 0.7, "Standard shipping costs $5 per order.": 1.0})  # the answer is never a negative
    examples = data.qa_examples("help", "en", PASSAGES, [COST], random.Random(1), None, closeness=closeness)
    assert [e.pair.candidate for e in examples if e.origin.endswith("same-paragraph")] == expected


QUESTIONS = [  # a question, its language, a sentence about it and one about something else
    ("How much does standard shipping cost?", "en", "Standard parcels are stored in the shipping yard.",
     "Our office is closed on Sundays."),
    ("送料はいくらですか？", "ja", "送料の欄は請求書の右上にあります。", "営業時間は平日9時から18時までです。"),
    ("Сколько стоит доставка?", "ru", "Доставка осуществляется службой СДЭК.", "Офис закрыт по воскресеньям."),
]


@pytest.fixture(scope="module")
def e5_closeness() -> Iterator[E5Closeness]:
    made = E5Closeness(E5Embedder(threads=1))
    yield made
    made.close()


@pytest.mark.parametrize(("question", "language", "about", "unrelated"), QUESTIONS)
def test_e5_closeness_puts_a_sentence_about_the_question_above_one_about_something_else(
        e5_closeness: E5Closeness, question: str, language: str, about: str, unrelated: str) -> None:
    close, far = e5_closeness(question, language, [Sentence(0, len(t), t) for t in (about, unrelated)])
    assert close > far


@pytest.mark.parametrize(("question", "language", "about", "unrelated"), QUESTIONS)
def test_e5_closeness_adds_the_composer_s_bonus_for_the_question_s_terms(
        e5_closeness: E5Closeness, question: str, language: str, about: str, unrelated: str) -> None:
    plain = E5Closeness(E5Embedder(threads=1), lexical_weight=0.0)
    try:
        sentences = [Sentence(0, len(t), t) for t in (about, unrelated)]
        weight = ExtractiveConfig().lexical_weight
        bonus = [weight * coverage(content_terms(question, language), t, language) for t in (about, unrelated)]
        assert bonus[0] > 0  # the sentence about it shares a term: the bonus is measured, not zero
        assert e5_closeness(question, language, sentences) == pytest.approx(
            [s + b for s, b in zip(plain(question, language, sentences), bonus)], abs=1e-6)
    finally:
        plain.close()
