"""Is there enough evidence to answer? Features of the retrieved evidence, and the small learned model
that turns them into a probability that the best quote really answers the question.

Why a model and not one score threshold: on SQuAD 2.0 (questions written to look answerable by the
paragraph that does not answer them) the best single signal reaches a balanced accuracy of 0.595
(../shared/eval/BASELINES.md). Several weak signals together — how similar the best sentence is, how
much it stands out, how many of the question's words it has, whether it holds the kind of thing the
question asks for (a number for "how many", a date for "when") — do better. The model is a logistic
regression trained by ``bench/abstain.py`` on SQuAD 2.0 and shipped as JSON beside this module.

Pure: features are computed from data; the model is a value loaded once at start-up.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.answer.extractive import ScoredSentence
from bot.answer.lexical import content_terms, coverage

FEATURES = ("top_similarity", "margin", "second_similarity", "coverage_best", "coverage_chunk", "answer_type",
            "question_terms", "missing_terms", "missing_long", "entities_missing", "negation_mismatch", "best_in_first")
MODEL_PATH = Path(__file__).with_name("abstain_model.json")

_NUMBER = re.compile(r"\d|[０-９]|\b(one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|million)\b"
                     r"|\b(один|два|три|четыре|пять|шесть|семь|восемь|девять|десять|сто|тысяч)\w*"
                     r"|[一二三四五六七八九十百千万億]", re.IGNORECASE)
_DATE = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b|\d+\s*(年|月|日|世紀)|\b(january|february|march|april|may|june|july|"
                   r"august|september|october|november|december|century|января|февраля|марта|апреля|мая|июня|"
                   r"июля|августа|сентября|октября|ноября|декабря|век\w*)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<=[^\s.!?]\s)[A-ZА-ЯЁ][a-zа-яё]+")
# Names and numbers in a question: a capitalised word not opening the sentence, a number, a katakana word.
_ENTITY = re.compile(r"(?<=[^\s.!?]\s)[A-ZА-ЯЁ][\w-]+|\d[\d,.]*|[\u30a0-\u30ff]{2,}")
_NEGATION = re.compile(r"\b(not|never|no|without|none|neither|nor|нет|не|никогда|без)\b|n't|ない|ず|ません", re.IGNORECASE)
# What a question asks for, by its question words (en, ru, ja).
_ASKS = (
    ("number", re.compile(r"\bhow (many|much|long|far|old|large|big|tall|often)\b|\bwhat (percent|percentage|number)\b"
                          r"|\bwithin what\b|сколько|какой (процент|номер)|за какой срок|как долго|в течение какого|"
                          r"каков\w* срок|いくつ|何(人|個|回|年間|日|歳|パーセント|%|分|時間)|どれくらい|どのくらい|いくら",
                          re.IGNORECASE)),
    ("date", re.compile(r"\bwhen\b|\bwhat (year|date|century|month|day)\b|\bin which year\b|когда|в каком году|какого числа"
                        r"|いつ|何年|何月|何日|何世紀", re.IGNORECASE)),
    ("name", re.compile(r"\bwho\b|\bwhom\b|\bwhose\b|\bкто\b|\bкого\b|\bкому\b|\bчей\b|誰|だれ", re.IGNORECASE)),
)
_KINDS = {"number": _NUMBER, "date": _DATE, "name": _NAME}


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the decision looks at; logged with the exchange so a lead can see why."""

    top_similarity: float  # cosine of the question and its closest sentence
    margin: float  # how far that sentence stands above the mean of the top ten
    second_similarity: float  # the closest sentence of another chunk
    coverage_best: float  # share of the question's content terms in the best sentence
    coverage_chunk: float  # … in the best sentence's chunk
    answer_type: float  # 1: the best sentence has what the question asks for, 0: it has not, 0.5: no cue
    question_terms: float  # log(1 + number of content terms)
    missing_terms: float  # content terms of the question absent from the chunk
    missing_long: float  # share of the question's terms that are long (5+ chars, so specific) and absent
    entities_missing: float  # share of the question's names and numbers absent from the chunk
    negation_mismatch: float  # the question is negated and the sentence is not, or the other way round
    best_in_first: float  # the best sentence is in the top-ranked source

    def vector(self) -> list[float]:
        return [float(getattr(self, name)) for name in FEATURES]


def asked_kind(question: str) -> str | None:
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return None


def evidence(question: str, language: str, ranked: Sequence[ScoredSentence]) -> Evidence | None:
    """Features of the best sentences (``ranked`` best first); None when there is no sentence at all."""
    if not ranked:
        return None
    best = ranked[0]
    sims = [s.similarity for s in ranked[:10]]
    second = next((s.similarity for s in ranked[1:] if s.source is not best.source), sims[-1])
    terms = content_terms(question, language)
    chunk_text = best.source.chunk.text
    missing = terms - content_terms(chunk_text, language)
    entities = set(_ENTITY.findall(question))
    kind = asked_kind(question)
    answer_type = 0.5 if kind is None else float(bool(_KINDS[kind].search(best.text)))
    return Evidence(
        top_similarity=best.similarity,
        margin=best.similarity - sum(sims) / len(sims),
        second_similarity=second,
        coverage_best=coverage(terms, best.text, language),
        coverage_chunk=coverage(terms, chunk_text, language),
        answer_type=answer_type,
        question_terms=math.log1p(len(terms)),
        missing_terms=float(len(missing)),
        missing_long=sum(1 for t in missing if len(t) >= 5) / max(1, len(terms)),
        entities_missing=(sum(1 for e in entities if e.lower() not in chunk_text.lower()) / len(entities)) if entities else 0.0,
        negation_mismatch=float(bool(_NEGATION.search(question)) != bool(_NEGATION.search(best.text))),
        best_in_first=float(best.source.label == "S1"),
    )


@dataclass(frozen=True, slots=True)
class AbstainModel:
    """Logistic regression over standardised ``FEATURES``; ``threshold`` on its probability decides.

    ``languages`` are the query languages it serves (empty: any language without a model of its own).
    """

    embedder: str
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    trained_on: str = ""
    languages: tuple[str, ...] = ()

    def probability(self, features: Evidence) -> float:
        z = self.bias + sum(w * (x - m) / s for w, x, m, s in zip(self.weights, features.vector(), self.mean, self.scale))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def to_json(self) -> dict[str, object]:
        return {"features": list(FEATURES), "embedder": self.embedder, "languages": list(self.languages),
                "mean": list(self.mean), "scale": list(self.scale), "weights": list(self.weights), "bias": self.bias,
                "threshold": self.threshold, "trained_on": self.trained_on}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AbstainModel:
        if data.get("features") != list(FEATURES):
            raise ValueError("the abstain model was trained on other features: retrain it with bench/abstain.py")
        return cls(embedder=str(data["embedder"]), mean=tuple(map(float, data["mean"])),  # type: ignore[arg-type]
                   scale=tuple(map(float, data["scale"])), weights=tuple(map(float, data["weights"])),  # type: ignore[arg-type]
                   bias=float(data["bias"]), threshold=float(data["threshold"]),  # type: ignore[arg-type]
                   trained_on=str(data.get("trained_on", "")),
                   languages=tuple(map(str, data.get("languages", []))))  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class AbstainModels:
    """The shipped models: per embedder, one for some languages (Japanese) and one for the rest."""

    models: tuple[AbstainModel, ...] = ()

    def for_query(self, embedder: str, language: str) -> AbstainModel | None:
        candidates = [m for m in self.models if m.embedder == embedder]
        return next((m for m in candidates if language in m.languages),
                    next((m for m in candidates if not m.languages), None))


def load_models(path: Path = MODEL_PATH) -> AbstainModels:
    """The shipped models (start-up work: call once)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return AbstainModels(tuple(AbstainModel.from_json(item) for item in data["models"]))
