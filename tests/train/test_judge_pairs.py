"""The judge's training pairs: each answerable question gives its answering sentence as the positive and, as
negatives, sentences about it that do not answer it — from its own paragraph and from the article's other
paragraphs (the "gold removed" case), ``others`` of those; a sentence that holds the answer is never a negative."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from train.judge import data

PASSAGES = {
    "p1": ("Shipping", "Standard shipping costs $5 per order. Orders ship from Osaka. Express shipping is faster."),
    "p2": ("Shipping", "Shipping to Hokkaido takes longer. Tracking is by email."),
    "p3": ("Shipping", "The shipping cost per order is refunded for damaged items. Labels are printed in Osaka."),
    "p4": ("Returns", "Returns of any order are accepted within 30 days. Refunds go to the original card."),
}
COST = data.Question("q1", "How much does standard shipping cost per order?", "p1", (("$5", -1),), True)


def _examples(question: data.Question, others: int, passages: dict[str, tuple[str, str]] = PASSAGES,
              ) -> list[data.Example]:
    return data.qa_examples("help", "en", passages, [question], random.Random(1), None, others=others)


def _origins(question: data.Question, others: int) -> Counter[str]:
    return Counter(e.origin.split("/")[1] for e in _examples(question, others))


@pytest.mark.parametrize(("others", "expected"), [
    (1, {"answer": 1, "same-paragraph": 1, "other-paragraph": 1}),
    (2, {"answer": 1, "same-paragraph": 1, "other-paragraph": 2}),
    (0, {"answer": 1, "same-paragraph": 1}),
])
def test_each_answerable_question_gives_one_positive_and_as_many_gold_removed_negatives_as_asked(
        others: int, expected: dict[str, int]) -> None:
    assert _origins(COST, others) == Counter(expected)


def test_gold_removed_negatives_come_from_the_article_s_other_paragraphs_and_never_hold_the_answer() -> None:
    examples = _examples(COST, 2)
    (positive,) = [e for e in examples if e.label == 1.0]
    assert positive.pair.candidate == "Standard shipping costs $5 per order."
    others = [e.pair.candidate for e in examples if e.origin.endswith("other-paragraph")]
    # The closest first; another article's paragraph (Returns), however close, is not the gold-removed case.
    assert others == ["The shipping cost per order is refunded for damaged items.",
                      "Shipping to Hokkaido takes longer."]


def test_a_sentence_of_another_paragraph_that_holds_the_answer_is_not_a_negative() -> None:
    question = data.Question("q2", "Where are shipping labels printed?", "p1", (("Osaka", -1),), True)
    passages = {**PASSAGES, "p1": ("Shipping", "Shipping boxes are recycled. Shipping labels are printed in Osaka.")}
    examples = _examples(question, 2, passages)
    negatives = [e.pair.candidate for e in examples if e.label == 0.0]
    assert negatives and not any("Osaka" in c for c in negatives)
