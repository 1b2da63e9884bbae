"""The shipped judge: small, loadable, made by the training command it names, and it tells a sentence that
answers the question from one that is only about it — in English, Japanese and Russian."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from bot.answer.evidence import load_models
from retrieval.embedders.local import E5Embedder
from retrieval.encoder.judge import (JUDGE_DIR, SCALE, Judge, JudgeCard, JudgeFileError, Pair, pair_ids, read_judge,
                                    read_tuned, write_tuned)
from retrieval.encoder.runtime import E5Encoder
from retrieval.encoder.weights import runs_int8
from train.judge import data


@pytest.fixture(scope="module")
def judge(encoder: E5Encoder) -> Judge:
    return Judge(encoder, *read_judge())


def test_the_shipped_judge_is_small_and_says_how_it_was_made() -> None:
    size = sum(f.stat().st_size for f in JUDGE_DIR.iterdir())
    assert size <= 20 * 1024 * 1024
    card = JudgeCard.read(JUDGE_DIR / "judge.json")
    assert card.trained["command"].startswith("python -m train.judge")  # type: ignore[union-attr]
    assert card.trained["data_digest"] and 0 < card.threshold < 1 and card.candidates >= 1


@pytest.mark.parametrize(("language", "thread"), [("en", False), ("en", True), ("ja", False), ("ru", False)])
def test_the_shipped_decision_models_fitted_with_a_judge_are_fitted_with_the_shipped_one(
        language: str, thread: bool) -> None:
    """With VERBATIM_JUDGE=true every question finds a decision model made for the judge that runs (a model
    fitted on another judge's logits would read this one's wrongly), or its place's features model where the
    judge did not help on FIT — never another place's model."""
    models = load_models()
    judged = [m for m in models.models if m.judge is not None]
    assert judged and {m.judge for m in judged} == {read_judge()[0].version}
    model = models.for_query(E5Embedder.name, language, thread, judge=read_judge()[0].version)
    plain = models.for_query(E5Embedder.name, language, thread)
    assert model is not None and plain is not None
    assert (model.languages, model.threads) == (plain.languages, plain.threads)
    assert model is plain or model.feature_names()[-1] == "judge_logit"


# (question, a sentence that answers it, a sentence of the same document that does not)
CASES = [
    pytest.param("How long is a password reset link valid?", "The reset link is valid for 60 minutes.",
                 "You can reset your password from the sign-in page.", id="en"),
    pytest.param("Within how many days can an annual plan be refunded?",
                 "Annual plans can be refunded within 30 days of purchase.",
                 "Refunds are paid to the card used for the purchase.", id="en-refund"),
    pytest.param("返品は何日以内に受け付けますか？", "返品は商品到着後14日以内に受け付けます。",
                 "返品の際は注文番号をご用意ください。", id="ja-returns"),
    pytest.param("Когда обращение передаётся на вторую линию?",
                 "Обращение передаётся на вторую линию, если оно не решено в течение 2 часов.",
                 "Первая линия отвечает на звонки и письма клиентов.", id="ru"),
]


@pytest.mark.parametrize(("question", "answer", "near_miss"), CASES)
def test_the_sentence_that_answers_scores_above_the_one_that_is_only_about_it(
        judge: Judge, question: str, answer: str, near_miss: str) -> None:
    right, wrong = judge.probabilities([Pair(question, answer, "Help"), Pair(question, near_miss, "Help")])
    assert right > wrong, (right, wrong)


# Sets the judge never trained on (JSQuAD; the XQuAD halves bench.answers reports), as the training builds pairs:
# each question's answering sentence against the sentences about it that do not answer it (its paragraph's and
# its article's closest). The hand-written pairs above are a handful; these are real questions in each language.
# (language, folder, prefix, whether half of it was fitted on: then only the other half is asked)
HELD_OUT = [pytest.param("ja", "jsquad-v1.3", "valid.", False, id="jsquad-ja"),
            pytest.param("en", "xquad-ru-en", "en.", True, id="xquad-en"),
            pytest.param("ru", "xquad-ru-en", "ru.", True, id="xquad-ru")]


@pytest.mark.parametrize(("language", "folder", "prefix", "halved"), HELD_OUT)
def test_on_questions_it_never_trained_on_the_answering_sentence_ranks_above_those_about_it(
        judge: Judge, language: str, folder: str, prefix: str, halved: bool) -> None:
    passages, questions = data.read_qa(data.EVAL / folder, prefix)
    fitted = data.fit_half(passages) if halved else set()
    unseen = [q for q in questions if q.passage not in fitted]
    examples = data.qa_examples(folder, language, passages, unseen, random.Random(5), limit=40)
    scores = judge.probabilities([e.pair for e in examples])
    by_question: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for e, p in zip(examples, scores, strict=True):
        by_question[e.pair.question][0 if e.label else 1].append(float(p))
    ranked = [r > w for right, wrong in by_question.values() for r in right for w in wrong]
    assert len(ranked) >= 40 and sum(ranked) / len(ranked) >= 0.85, (sum(ranked), len(ranked))


def test_long_inputs_are_cut_to_the_model_s_budget(encoder: E5Encoder) -> None:
    (ids,) = pair_ids(encoder.tokenizer, [Pair("why? " * 200, "because. " * 300, "title " * 50, "before. " * 80)])
    assert len(ids) <= 1 + 48 + 2 + 96 + 2 + 40 + 1


def test_a_missing_judge_file_is_one_line_naming_it_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(JudgeFileError) as raised:
        read_judge(tmp_path)
    message = str(raised.value)
    assert str(tmp_path / "judge.json") in message and "python -m train.judge" in message and "\n" not in message


@pytest.mark.parametrize(("name", "int8"), [
    ("l7.q.w", True), ("l11.k.w", True), ("l9.v.w", True), ("l8.ao.w", True), ("l10.fi.w", True),
    ("head.in.w", True), ("head.l.q.w", True),  # the adapter's projection and its layer's attention
    ("l9.fo.w", False), ("head.l.fo.w", False),  # the FFN's output: its input is skewed, the graph keeps it float
    ("head.h.w", False), ("head.o.w", False),  # the head's plain MatMuls
    ("l9.q.b", False), ("l9.aln.w", False), ("l9.oln.b", False)])  # biases and LayerNorms are vectors
def test_the_judge_file_stores_in_int8_exactly_the_matrices_the_graph_runs_in_int8(name: str, int8: bool) -> None:
    assert runs_int8(name) is int8


def test_a_judge_stored_in_int8_scores_exactly_as_its_float16_file_in_fewer_bytes(
        encoder: E5Encoder, tmp_path: Path) -> None:
    """The file keeps the int8 matrices as the graph will quantize them, so nothing the judge says moves: the same
    probabilities to the last bit as the float16 file that ``train.judge`` wrote before (which still reads)."""
    card, tuned = read_judge()
    half, small = tmp_path / "half.npz", tmp_path / "small.npz"
    np.savez_compressed(half, **{k: v.astype(np.float16) for k, v in tuned.items()})
    write_tuned(small, tuned)
    assert small.stat().st_size < 0.75 * half.stat().st_size
    pairs = [Pair(q, c, "Help") for case in CASES for q, *candidates in [case.values] for c in candidates]
    scores = [Judge(encoder, card, read_tuned(path)).probabilities(pairs) for path in (half, small)]
    assert np.array_equal(*scores) and len(set(scores[0].round(6))) == len(pairs)


def test_an_int8_matrix_without_its_scales_is_one_line_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "judge.npz"
    write_tuned(path, {"l9.q.w": np.ones((4, 4), np.float32), "head.o.b": np.zeros(1, np.float32)})
    with np.load(path) as archive:
        kept = {k: archive[k] for k in archive.files if not k.endswith(SCALE)}
    np.savez_compressed(path, **kept)
    with pytest.raises(JudgeFileError) as raised:
        read_tuned(path)
    message = str(raised.value)
    assert str(path) in message and "l9.q.w.scale" in message and "python -m train.judge" in message
    assert "\n" not in message
