"""The judge's decision, table-driven: which sentences it reads, what it reads with each, and what its
probabilities decide — the quote shown, or "no support found"."""

from __future__ import annotations

import pytest

from bot.answer.extractive import ExtractiveConfig, ScoredSentence, compose_chosen
from bot.answer.judge import Judged, candidates, decide, pairs, quote_order
from bot.answer.quotes import verify
from retrieval.sentences import split_sentences
from tests.answer.builders import source

REFUNDS = source("S1", "Refunds depend on the plan. Annual plans can be refunded within 30 days. "
                       "Monthly plans are not refunded.", title="Billing", section="Refunds")
SHIPPING = source("S2", "送料は550円です。返品は14日以内に受け付けます。", title="配送", section=None, language="ja")


def scored(src=REFUNDS, scores=(0.8, 0.9, 0.7)) -> list[ScoredSentence]:
    sentences = split_sentences(src.chunk.text, src.chunk.language)
    out = [ScoredSentence(src, s.start, s.end, score, score) for s, score in zip(sentences, scores)]
    return sorted(out, key=lambda s: s.score, reverse=True)


@pytest.mark.parametrize(("limit", "expected"), [
    (1, ["Annual plans can be refunded within 30 days."]),
    (2, ["Annual plans can be refunded within 30 days.", "Refunds depend on the plan."]),
    (9, ["Annual plans can be refunded within 30 days.", "Refunds depend on the plan.", "Monthly plans are not refunded."]),
])
def test_the_judge_reads_the_best_sentences_only(limit: int, expected: list[str]) -> None:
    assert [s.text for s in candidates(scored(), limit)] == expected


def test_a_sentence_scored_twice_is_read_once() -> None:
    twice = scored() + scored()[:1]
    assert len(candidates(sorted(twice, key=lambda s: s.score, reverse=True), 9)) == 3


@pytest.mark.parametrize(("src", "scores", "index", "title", "previous"), [
    pytest.param(REFUNDS, (0.8, 0.9, 0.7), 0, "Billing · Refunds", "Refunds depend on the plan.", id="previous-sentence"),
    pytest.param(REFUNDS, (0.8, 0.9, 0.7), 1, "Billing · Refunds", "", id="first-has-none"),
    pytest.param(SHIPPING, (0.6, 0.9), 0, "配送", "送料は550円です。", id="ja-no-section"),
])
def test_each_candidate_is_read_with_its_title_and_the_sentence_before_it(src, scores, index, title, previous) -> None:
    ranked = scored(src, scores)
    (pair,) = pairs("How long?", [ranked[index]], ranked)
    assert (pair.question, pair.candidate, pair.title, pair.previous) == ("How long?", ranked[index].text, title, previous)


def test_without_its_neighbours_scored_the_text_before_a_sentence_is_its_context() -> None:
    best = scored()[0]  # the second sentence, alone
    (pair,) = pairs("How long?", [best], [best])
    assert pair.previous == "Refunds depend on the plan."


@pytest.mark.parametrize(("probabilities", "threshold", "expected"), [
    pytest.param((0.2, 0.91, 0.4), 0.9, 1, id="best-above"),
    pytest.param((0.2, 0.9, 0.4), 0.9, 1, id="at-threshold-answers"),
    pytest.param((0.2, 0.89, 0.4), 0.9, None, id="best-below-abstains"),
    pytest.param((0.95, 0.3, 0.4), 0.5, 0, id="not-the-first-scored"),
    pytest.param((), 0.5, None, id="nothing-to-judge"),
])
def test_the_decision_answers_with_the_most_probable_sentence_when_it_reaches_the_threshold(
        probabilities, threshold, expected) -> None:
    ranked = scored()
    judged = [Judged(s, p) for s, p in zip(ranked, probabilities)]
    chosen = decide(judged, threshold)
    assert (None if chosen is None else judged.index(chosen)) == expected


@pytest.mark.parametrize(("probabilities", "margin", "quoted"), [
    pytest.param((0.3, 0.95, 0.2), 0.15, ["Refunds depend on the plan."], id="one-stands-out"),
    pytest.param((0.9, 0.95, 0.2), 0.15, ["Refunds depend on the plan.", "Annual plans can be refunded within 30 days."],
                 id="two-close"),
    pytest.param((0.9, 0.95, 0.85), 0.0, ["Refunds depend on the plan."], id="no-margin"),
])
def test_the_quote_is_the_most_probable_sentence_and_those_close_to_it(probabilities, margin, quoted) -> None:
    ranked = scored()
    order = quote_order([Judged(s, p) for s, p in zip(ranked, probabilities)], margin)
    assert [s.text for s in order] == quoted


def test_the_judged_quote_is_verbatim_and_keeps_its_condition() -> None:
    src = source("S1", "Chat support is open around the clock. However, only Business customers can use it. "
                       "Email is answered within a day.")
    ranked = scored(src, (0.9, 0.5, 0.4))
    draft = compose_chosen(quote_order([Judged(ranked[0], 0.97)], 0.15), ranked, ExtractiveConfig())
    verification = verify(draft, [src])
    assert [q.text for c in verification.claims for q in c.quotes] == [
        "Chat support is open around the clock. However, only Business customers can use it."]
    assert not verification.rejected
