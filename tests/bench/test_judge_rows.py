"""bench.answers fits and reports the judge on the probabilities the service computes: each question's candidates
scored in a run of their own, never beside other questions' (the judge's int8 activations are quantized per run,
so run-mates move a pair's logit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import data
from bench.answering import Judged as Harvested
from bench.judge_rows import score
from bot.answer.extractive import ScoredSentence
from bot.answer.judge import candidates, pairs
from bot.answer.service import AnswerResult, Route
from bot.answer.types import NoSupport, NoSupportReason, Question
from retrieval.encoder.judge import Judge, read_judge
from retrieval.encoder.runtime import E5Encoder
from retrieval.sentences import split_sentences
from tests.answer.builders import source

# (question, the passage its candidates come from, language): lengths and languages differ, as a harvest's do.
ASKED = [
    ("Within how many days can an annual plan be refunded?",
     "Refunds depend on the plan. Annual plans can be refunded within 30 days of purchase. Monthly plans are not "
     "refunded, and a refund is paid to the card used for the purchase.", "en"),
    ("How long is a password reset link valid?",
     "You can reset your password from the sign-in page. The reset link is valid for 60 minutes.", "en"),
    ("返品は何日以内に受け付けますか？", "返品は商品到着後14日以内に受け付けます。返品の際は注文番号をご用意ください。", "ja"),
    ("Когда обращение передаётся на вторую линию?",
     "Первая линия отвечает на звонки и письма клиентов. Обращение передаётся на вторую линию, если оно не решено "
     "в течение 2 часов, а срочные обращения — сразу, с пометкой о приоритете и кратким описанием проблемы.", "ru"),
    ("What is the capital?", "Paris is the capital of France.", "en"),
]


def _harvested(question: str, passage: str, language: str) -> Harvested:
    src = source("S1", passage, title="Help", section="FAQ", language=language)
    sentences = split_sentences(passage, language)
    scored = tuple(ScoredSentence(src, s.start, s.end, 1.0 - i / 10, 1.0 - i / 10) for i, s in enumerate(sentences))
    result = AnswerResult(Question(question), question, language, NoSupport(NoSupportReason.LOW_EVIDENCE, (src,)), (),
                          (src,), scored, None, None, Route("e5", "local", "extractive"), {"total": 1.0})
    return Harvested(data.Query(question, question, frozenset({"doc"})), result, False)


@pytest.fixture(scope="module")
def judge(encoder: E5Encoder) -> Judge:
    return Judge(encoder, *read_judge())


@pytest.mark.parametrize("count", [1, 2])
def test_each_question_is_scored_as_the_service_scores_it_alone(judge: Judge, tmp_path: Path, count: int) -> None:
    harvested = [_harvested(*asked) for asked in ASKED]
    scored = score(harvested, judge, "test", count, cache=tmp_path)
    asked = [pairs(h.result.query, candidates(h.result.best_sentences, count), h.result.best_sentences)
             for h in harvested]
    for question_pairs, probabilities in zip(asked, scored):
        assert len(probabilities) == len(question_pairs)
        assert np.allclose(probabilities, judge.probabilities(question_pairs), atol=1e-6)
    # Why it matters: the same pairs in one shared run get other probabilities (what this bench fitted on before).
    shared = judge.probabilities([p for question_pairs in asked for p in question_pairs])
    assert not np.allclose(shared, [p for ps in scored for p in ps], atol=1e-3)


def test_a_second_run_reads_the_cache_of_the_first(judge: Judge, tmp_path: Path) -> None:
    harvested = [_harvested(*asked) for asked in ASKED[:2]]
    first = score(harvested, judge, "test", 1, cache=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [f"judge-{judge.version}-{judge.weights[:12]}-test-served1.pickle"]
    assert score(harvested[:1], judge, "test", 1, cache=tmp_path) == first  # cached: not scored again


def test_other_weights_under_the_same_version_are_scored_not_read_from_the_cache(
        judge: Judge, encoder: E5Encoder, tmp_path: Path) -> None:
    """The version names a recipe; the same recipe from changed training code is another judge under that name,
    and a bench that read the first one's cached scores for it would report the first judge as the second."""
    harvested = [_harvested(*asked) for asked in ASKED[:2]]
    first = score(harvested, judge, "test", 1, cache=tmp_path)
    card, tuned = read_judge()
    other = Judge(encoder, card, {**tuned, "head.o.b": tuned["head.o.b"] + 2.0})  # every logit 2 higher
    assert other.version == judge.version
    second = score(harvested, other, "test", 1, cache=tmp_path)
    assert all(b > a for a, b in zip((p for ps in first for p in ps), (p for ps in second for p in ps)))
