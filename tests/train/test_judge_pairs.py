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


# Swapped names: a question its answering sentence no longer answers, the case SQuAD 2.0's entity swaps teach.
@pytest.mark.parametrize(("question", "paragraph", "sentence", "pool", "expected"), [
    # A year the sentence holds swaps for a year of the article's that the paragraph never mentions.
    ("When did Osaka open its port in 1868?", "Osaka opened its port in 1868. Kobe followed in 1869.",
     "Osaka opened its port in 1868.", {("number4", "1869"), ("number4", "1923"), ("name", "Kobe")},
     {"When did Osaka open its port in 1923?"}),  # Kobe is in the paragraph: its sentence may answer that
    # A sentence's first word is capitalised, not a name; a name the sentence lacks is not swapped.
    ("Which Tokyo office handles Nagoya orders?", "Orders from Nagoya go to the Kyoto office.",
     "Orders from Nagoya go to the Kyoto office.", {("name", "Sapporo")},
     {"Which Tokyo office handles Sapporo orders?"}),
    ("Когда Москва стала столицей?", "Москва стала столицей в 1918 году.", "Москва стала столицей в 1918 году.",
     {("name", "Петербург")}, {"Когда Петербург стала столицей?"}),
    ("ビヨンセのデビューは何年?", "ビヨンセのデビューは1997年。", "ビヨンセのデビューは1997年。", {("kana", "ソランジュ")},
     {"ソランジュのデビューは何年?", "ビヨンセのソランジュは何年?"}),
])
def test_a_name_the_answer_holds_swaps_for_one_of_the_same_kind_its_paragraph_never_mentions(
        question: str, paragraph: str, sentence: str, pool: set[tuple[str, str]], expected: set[str]) -> None:
    made = {data.swapped(question, paragraph, sentence, pool, random.Random(seed)) for seed in range(20)}
    assert made == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Which Tokyo office handles Nagoya orders?", ["Tokyo", "Nagoya"]),
    ("Orders ship from Osaka. The Kyoto office prints labels.", ["Osaka", "Kyoto"]),
    ("Prices rose in 1998 and 2003.", ["1998", "2003"]),
    ("Москва стала столицей. Когда Петербург?", ["Петербург"]),
    ("ルーシーは身長1.1m、体重29kg。", ["ルーシー", "1.1", "29"]),
])
def test_names_are_numbers_capitalised_words_not_starting_a_sentence_and_katakana_words(text: str,
                                                                                      expected: list[str]) -> None:
    assert [text[start:end] for _, start, end in data.names(text)] == expected


@pytest.mark.parametrize(("question", "pool"), [
    ("How much does shipping cost?", {("name", "Kobe")}),  # no name in the question
    ("When did Osaka open its port?", {("name", "Kobe")}),  # every name of the kind is in the paragraph
    ("When did Osaka open its port?", {("number4", "1923")}),  # nothing of the name's kind
])
def test_no_swap_without_a_name_to_swap_or_a_replacement_of_its_kind(question: str, pool: set[tuple[str, str]],
                                                                      ) -> None:
    paragraph = "Osaka opened its port in 1868. Kobe followed."
    assert data.swapped(question, paragraph, "Osaka opened its port in 1868.", pool, random.Random(1)) is None


def test_swaps_add_one_negative_against_the_answering_sentence_and_leave_the_other_pairs_as_they_were() -> None:
    question = data.Question("q3", "Where do Hokkaido orders ship from?", "p2", (("Sapporo", -1),), True)
    passages = {**PASSAGES, "p2": ("Shipping", "Hokkaido orders ship from Sapporo. Tracking is by email.")}
    plain = data.qa_examples("help", "en", passages, [question], random.Random(1), None, others=2)
    with_swaps = data.qa_examples("help", "en", passages, [question], random.Random(1), None, others=2, swaps=True)
    (swap,) = [e for e in with_swaps if e.origin == "help/swapped"]
    assert swap.label == 0.0 and swap.pair.candidate == "Hokkaido orders ship from Sapporo."
    assert swap.pair.question == "Where do Osaka orders ship from?"  # the article's only name p2 lacks
    assert [e for e in with_swaps if e is not swap] == plain
