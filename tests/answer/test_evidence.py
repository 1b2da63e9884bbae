"""The answer-or-abstain evidence: features that tell "this sentence answers the question" from "a sentence
near it", and the shipped model that turns them into a decision. Pure: sentences in, numbers out."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.answer.evidence import (
    FEATURES,
    AbstainModel,
    AbstainModels,
    Evidence,
    asked_kind,
    evidence,
    load_models,
)
from bot.answer.extractive import ScoredSentence
from bot.answer.types import Source
from retrieval.sentences import split_sentences
from tests.answer.builders import source


def ranked(sources: list[Source], similarities: dict[str, float]) -> list[ScoredSentence]:
    """Every sentence of the sources, scored by the similarity named for its first words (else 0.5), best first."""
    out = []
    for src in sources:
        for s in split_sentences(src.chunk.text, src.chunk.language):
            sim = next((v for k, v in similarities.items() if s.text.startswith(k)), 0.5)
            out.append(ScoredSentence(src, s.start, s.end, sim, sim))
    return sorted(out, key=lambda s: s.score, reverse=True)


# Three chunks about annual plans (the topic); only the first says how long the refund window is (the focus).
ANNUAL = [
    source("S1", "Annual plans can be refunded within 30 days of purchase. Annual plans renew each year."),
    source("S2", "Annual plans include priority support. Annual plans are billed once."),
    source("S3", "Annual plans can be paused. Annual plans move to monthly on request."),
]


@pytest.mark.parametrize(
    ("question", "similarities", "feature", "low", "high"),
    [
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be refunded": 0.9},
                     "focus_best", 0.99, 1.0, id="focus-all-present"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans include": 0.9},
                     "focus_best", 0.0, 0.4, id="near-miss-has-only-the-topic"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans include": 0.9},
                     "coverage_best", 0.4, 0.7, id="plain-coverage-is-fooled-by-the-topic"),
        pytest.param("Can annual plans be transferred to a colleague?", {"Annual plans can be refunded": 0.9},
                     "focus_missing", 0.9, 1.0, id="a-term-no-chunk-has-is-missing-with-full-weight"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be refunded": 0.9},
                     "focus_missing", 0.0, 0.0, id="nothing-missing"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be refunded": 0.9},
                     "lexical_agrees", 1.0, 1.0, id="the-closest-sentence-has-the-most-terms"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be paused": 0.9},
                     "lexical_agrees", 0.0, 0.0, id="the-closest-sentence-is-not-the-wordiest"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be refunded": 0.9},
                     "answer_type", 1.0, 1.0, id="how-long-and-a-number"),
        pytest.param("How long can annual plans be paused?", {"Annual plans can be paused": 0.9},
                     "answer_type", 0.0, 0.0, id="how-long-and-no-number"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be refunded": 0.9,
                                                                 "Annual plans renew": 0.85},
                     "chunk_share", 0.33, 0.34, id="two-of-the-six-sentences-share-its-chunk"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be refunded": 0.9},
                     "best_in_first", 1.0, 1.0, id="best-sentence-in-the-first-source"),
        pytest.param("How long can annual plans be refunded?", {"Annual plans can be paused": 0.9},
                     "best_in_first", 0.0, 0.0, id="best-sentence-in-the-third-source"),
    ],
)
def test_features(question: str, similarities: dict[str, float], feature: str, low: float, high: float) -> None:
    features = evidence(question, "en", ranked(ANNUAL, similarities))
    assert features is not None
    assert low <= getattr(features, feature) <= high


def test_focus_is_weighed_against_every_retrieved_chunk_not_only_the_sources() -> None:
    """A term common in the wider search results is topic, not focus, even if the sources rarely have it."""
    question = "How long can annual plans be refunded?"
    alone = evidence(question, "en", ranked(ANNUAL[1:], {"Annual plans include": 0.9}))
    background = [s.chunk.text for s in ANNUAL[1:]] + ["Refunded plans are closed."] * 8
    wider = evidence(question, "en", ranked(ANNUAL[1:], {"Annual plans include": 0.9}), background)
    assert alone is not None and wider is not None
    assert wider.focus_missing < alone.focus_missing


@pytest.mark.parametrize(
    ("language", "question", "texts", "best_has_focus"),
    [
        ("ru", "За какой срок оператор отвечает клиенту?",
         ["Оператор отвечает клиенту в течение 15 минут.", "Оператор ведёт журнал обращений.",
          "Оператор передаёт заявку на вторую линию."], True),
        ("ru", "За какой срок оператор отвечает клиенту?",
         ["Оператор ведёт журнал обращений.", "Оператор передаёт заявку на вторую линию."], False),
        ("ja", "返品は何日以内に受け付けますか？",
         ["返品は14日以内に受け付けます。", "送料は550円です。", "配送は3日かかります。"], True),
        ("ja", "返品は何日以内に受け付けますか？", ["送料は550円です。", "配送は3日かかります。"], False),
    ],
)
def test_focus_in_russian_and_japanese(language: str, question: str, texts: list[str], best_has_focus: bool) -> None:
    sources = [source(f"S{i + 1}", t, language=language) for i, t in enumerate(texts)]
    features = evidence(question, language, ranked(sources, {texts[0][:4]: 0.9}))
    assert features is not None
    assert (features.focus_best > 0.5) is best_has_focus


def test_no_sentence_no_evidence() -> None:
    assert evidence("Anything?", "en", []) is None


@pytest.mark.parametrize(
    ("question", "kind"),
    [("When was the office opened?", "date"), ("How many seats does a team plan have?", "number"),
     ("Who approves refunds?", "name"), ("Когда открыт офис?", "date"), ("Сколько стоит доставка?", "number"),
     ("送料はいくらですか？", "number"), ("What is a workspace?", None)],
)
def test_asked_kind(question: str, kind: str | None) -> None:
    assert asked_kind(question) == kind


def _model(threshold: float = 0.5, languages: tuple[str, ...] = ()) -> AbstainModel:
    weights = tuple(1.0 if name == "focus_best" else 0.0 for name in FEATURES)
    return AbstainModel("e5", (0.5,) * len(FEATURES), (0.25,) * len(FEATURES), weights, 0.0, threshold, "test", languages)


def _features(focus: float) -> Evidence:
    values = dict.fromkeys(FEATURES, 0.5) | {"focus_best": focus}
    return Evidence(**values)


@pytest.mark.parametrize(("focus", "threshold", "answers"),
                         [(0.9, 0.5, True), (0.1, 0.5, False), (0.5, 0.5, True), (0.6, 0.7, False)])
def test_the_decision_answers_at_or_above_its_threshold(focus: float, threshold: float, answers: bool) -> None:
    model = _model(threshold)
    assert (model.probability(_features(focus)) >= model.threshold) is answers


@pytest.mark.parametrize(
    ("language", "thread", "expected"),
    [("en", False, "default"), ("en", True, "threads"), ("ja", False, "ja"), ("ja", True, "ja"), ("ru", True, "ru"),
     ("de", False, "default"), ("de", True, "threads")],
)
def test_models_are_chosen_by_language_then_thread(language: str, thread: bool, expected: str) -> None:
    """A language with a model of its own keeps it in threads too; other thread follow-ups get the thread model."""
    named = {"default": _model(0.4), "ja": _model(0.6, ("ja",)), "ru": _model(0.55, ("ru",)),
             "threads": replace(_model(0.7), threads=True)}
    models = AbstainModels(tuple(named.values()))
    assert models.for_query("e5", language, thread) is named[expected]
    assert models.for_query("use", language, thread) is None


def test_without_a_thread_model_follow_ups_use_the_default() -> None:
    default = _model(0.4)
    assert AbstainModels((default,)).for_query("e5", "en", thread=True) is default


def test_a_model_trained_on_other_features_is_refused() -> None:
    data = _model().to_json() | {"features": list(FEATURES[:-1])}
    with pytest.raises(ValueError, match="retrain"):
        AbstainModel.from_json(data)


def _judged_model(version: str, judge_weight: float, languages: tuple[str, ...] = ()) -> AbstainModel:
    """Reads only the judge's logit (standardised around 0 with scale 1): its probability is the judge's."""
    size = len(FEATURES) + 1
    return AbstainModel("e5", (0.0,) * size, (1.0,) * size, (0.0,) * len(FEATURES) + (judge_weight,), 0.0, 0.5,
                        "test", languages, judge=version)


@pytest.mark.parametrize(("judge", "expected"), [(None, "plain"), ("judge-a", "judge-a"), ("judge-b", None)])
def test_a_model_fitted_with_a_judge_serves_only_that_judge(judge: str | None, expected: str | None) -> None:
    """A retrained judge (another version) must not be read through weights fitted on the old one's logits."""
    named = {"plain": _model(0.4), "judge-a": _judged_model("judge-a", 1.0)}
    model = AbstainModels(tuple(named.values())).for_query("e5", "en", judge=judge)
    assert model is (named[expected] if expected else None)


@pytest.mark.parametrize(
    ("language", "thread", "expected"),
    [("en", False, "default+judge"), ("en", True, "threads"), ("ja", False, "ja"), ("ja", True, "ja"),
     ("ru", False, "ru+judge"), ("ru", True, "ru+judge"), ("de", True, "threads")],
)
def test_with_a_judge_each_place_keeps_its_features_model_where_the_judge_was_not_fitted_in(
        language: str, thread: bool, expected: str) -> None:
    """The judge's logit was kept only where it helped on FIT (default and ru here): a Japanese question or a
    thread follow-up is decided by its own features model, never by the default model fitted with the judge."""
    named = {"default": _model(0.4), "ja": _model(0.6, ("ja",)), "ru": _model(0.55, ("ru",)),
             "threads": replace(_model(0.7), threads=True), "default+judge": _judged_model("judge-a", 1.0),
             "ru+judge": _judged_model("judge-a", 1.0, ("ru",))}
    models = AbstainModels(tuple(named.values()))
    assert models.for_query("e5", language, thread, judge="judge-a") is named[expected]
    assert models.for_query("e5", language, thread) is named[expected.removesuffix("+judge")]


@pytest.mark.parametrize(("judge_probability", "answers"), [(0.9, True), (0.2, False), (0.5, True)])
def test_a_judged_model_decides_on_the_judge_s_probability_with_the_features(judge_probability: float,
                                                                            answers: bool) -> None:
    model = _judged_model("judge-a", 1.0)
    probability = model.probability(_features(0.5), judge_probability)
    assert probability == pytest.approx(judge_probability, abs=1e-6)
    assert (probability >= model.threshold) is answers


def test_a_judged_model_without_the_judge_s_probability_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="judge-a"):
        _judged_model("judge-a", 1.0).probability(_features(0.5))


def test_a_judged_model_round_trips_and_names_its_extra_feature() -> None:
    model = _judged_model("judge-a", 2.0, ("ja",))
    data = json.loads(json.dumps(model.to_json()))
    assert data["features"] == [*FEATURES, "judge_logit"] and data["judge"] == "judge-a"
    assert AbstainModel.from_json(data) == model
    with pytest.raises(ValueError, match="retrain"):  # the judge's feature without the judge it came from
        AbstainModel.from_json(data | {"judge": None})


def test_the_shipped_models_load_and_cover_every_language() -> None:
    models = load_models()
    for language in ("en", "ja", "ru"):
        for thread in (False, True):
            model = models.for_query("e5-small-q4", language, thread)
            assert model is not None and 0.0 < model.threshold < 1.0
    assert models.for_query("e5-small-q4", "en", True) is not models.for_query("e5-small-q4", "en", False)
    assert json.loads(json.dumps(models.models[0].to_json()))["features"] == list(FEATURES)
