"""Is there enough evidence to answer? Features of the retrieved evidence, and the small learned models
that turn them into a probability that the best quote really answers the question.

Why a model and not one score threshold: no single signal tells "this sentence answers the question" from
"a sentence near it". Several do together — how similar the best sentence is and how much it stands out,
how many of the question's words it has, and above all how many of its *focus* words (the ones rare among
the retrieved chunks, as opposed to the topic every chunk shares), whether it holds the kind of thing the
question asks for (a number for "how many", a date for "when"). The models are logistic regressions fitted
by ``bench/answers.py`` on held-apart halves of the shared data (one for Japanese, one for Russian, one for
thread follow-ups, one for the rest) and shipped as JSON beside this module; docs/benchmarks.md has how
they do on data they never saw.

Pure: features are computed from data; the model is a value loaded once at start-up.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.answer.extractive import ScoredSentence
from bot.answer.lexical import content_terms, coverage, share

FEATURES = ("top_similarity", "margin", "second_similarity", "coverage_best", "coverage_chunk", "answer_type",
            "question_terms", "missing_terms", "missing_long", "entities_missing", "negation_mismatch", "best_in_first",
            "focus_best", "focus_window", "focus_chunk", "focus_missing", "rerank_gap", "search_top",
            "similarity_z", "chunk_share", "lexical_agrees")
# A model fitted with the judge on reads one more feature: the judge's logit for its most probable candidate.
JUDGE_FEATURE = "judge_logit"
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
    # "Focus": the question's terms weighted by how rare they are among the retrieved chunks. Words every
    # retrieved chunk shares are the topic (the product, the article's subject); the rare ones are what is
    # asked about. A near miss has the topic and lacks the focus.
    focus_best: float  # weighted share of the question's terms in the best sentence
    focus_window: float  # … in the best sentence with its neighbours
    focus_chunk: float  # … in the best sentence's chunk
    focus_missing: float  # weight of the rarest question term the chunk lacks (0: none missing), 0..1
    rerank_gap: float  # rerank score of the first source minus the second's
    search_top: float  # hybrid search score of the first source
    similarity_z: float  # the best sentence's similarity in standard deviations above the others'
    chunk_share: float  # share of the ten best sentences that come from the best sentence's chunk
    lexical_agrees: float  # the sentence with most of the question's terms is the best sentence

    def vector(self) -> list[float]:
        return [float(getattr(self, name)) for name in FEATURES]


def without_question_words(question: str) -> str:
    """The question less the words that only say what kind of thing it asks for ("how long", "за какой срок",
    "何日"): they are not in the answer, so they must not count as missing from it."""
    for _, pattern in _ASKS:
        question = pattern.sub(" ", question)
    return question


def asked_kind(question: str) -> str | None:
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return None


def _term_weights(terms: frozenset[str], texts: Sequence[str], language: str) -> dict[str, float]:
    """Each term's inverse document frequency over ``texts`` (not empty), scaled to 0.1 (in all) .. 1 (in none)."""
    sets = [content_terms(t, language) for t in texts]
    top = math.log(len(sets) + 1)
    # In sorted order, so the weighted sums below add up alike whatever the hash seed (reproducible features).
    return {t: 0.1 + 0.9 * math.log((len(sets) + 1) / (1 + sum(1 for s in sets if t in s))) / top
            for t in sorted(terms)}


def _weighted_coverage(weights: dict[str, float], present: frozenset[str]) -> float:
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in present) / total



def evidence(question: str, language: str, ranked: Sequence[ScoredSentence],
             retrieved: Sequence[str] = ()) -> Evidence | None:
    """Features of the best sentences (``ranked`` best first); None when there is no sentence at all.

    ``retrieved``: the texts of every chunk the search returned (the background the question's focus
    terms are weighed against); the sources' texts when not given.
    """
    if not ranked:
        return None
    best = ranked[0]
    sims = [s.similarity for s in ranked[:10]]
    second = next((s.similarity for s in ranked[1:] if s.source is not best.source), sims[-1])
    terms = content_terms(without_question_words(question), language)
    chunk_text = best.source.chunk.text
    # Each text's terms are extracted once: several features compare the question's terms with them.
    best_terms = content_terms(best.text, language)
    chunk_terms = content_terms(chunk_text, language)
    missing = terms - chunk_terms
    entities = set(_ENTITY.findall(question))
    kind = asked_kind(question)
    answer_type = 0.5 if kind is None else float(bool(_KINDS[kind].search(best.text)))

    background = list(retrieved) or list(dict.fromkeys(s.source.chunk.text for s in ranked))
    weights = _term_weights(terms, background, language)
    siblings = sorted((s for s in ranked if s.source is best.source), key=lambda s: s.start)
    at = next(i for i, s in enumerate(siblings) if s.start == best.start)
    window = chunk_text[siblings[max(0, at - 1)].start : siblings[min(len(siblings) - 1, at + 1)].end]
    all_sims = [s.similarity for s in ranked]
    mean = sum(all_sims) / len(all_sims)
    spread = math.sqrt(sum((x - mean) ** 2 for x in all_sims) / len(all_sims)) or 1.0
    by_rank = sorted({s.source.label: s.source for s in ranked}.values(), key=lambda src: int(src.label[1:]))
    scores = [src.rerank_score if src.rerank_score is not None else src.search_score for src in by_rank]
    lexical_best = max(ranked[:10], key=lambda s: (coverage(terms, s.text, language), s.similarity))
    return Evidence(
        top_similarity=best.similarity,
        margin=best.similarity - sum(sims) / len(sims),
        second_similarity=second,
        coverage_best=share(terms, best_terms),
        coverage_chunk=share(terms, chunk_terms),
        answer_type=answer_type,
        question_terms=math.log1p(len(terms)),
        missing_terms=float(len(missing)),
        missing_long=sum(1 for t in missing if len(t) >= 5) / max(1, len(terms)),
        entities_missing=(sum(1 for e in entities if e.lower() not in chunk_text.lower()) / len(entities)) if entities else 0.0,
        negation_mismatch=float(bool(_NEGATION.search(question)) != bool(_NEGATION.search(best.text))),
        best_in_first=float(best.source.label == "S1"),
        focus_best=_weighted_coverage(weights, best_terms),
        focus_window=_weighted_coverage(weights, content_terms(window, language)),
        focus_chunk=_weighted_coverage(weights, chunk_terms),
        focus_missing=max((weights[t] for t in missing), default=0.0),
        rerank_gap=(scores[0] - scores[1]) if len(scores) > 1 else 1.0,
        search_top=by_rank[0].search_score,
        similarity_z=(best.similarity - mean) / spread,
        chunk_share=sum(1 for s in ranked[:10] if s.source is best.source) / min(10, len(ranked)),
        lexical_agrees=float(lexical_best is best),
    )


@dataclass(frozen=True, slots=True)
class AbstainModel:
    """Logistic regression over standardised ``FEATURES``; ``threshold`` on its probability decides.

    ``languages`` are the query languages it serves (empty: any language without a model of its own);
    ``threads``: it serves thread follow-ups (questions asked with earlier turns), whose query is built from
    the thread and whose evidence reads differently from a standalone question's; ``judge``: the judge version
    whose logit it reads after ``FEATURES`` (``JUDGE_FEATURE``), None for a model of the features alone.
    """

    embedder: str
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    trained_on: str = ""
    languages: tuple[str, ...] = ()
    threads: bool = False
    judge: str | None = None

    def probability(self, features: Evidence, judge_probability: float | None = None) -> float:
        """``judge_probability``: the judge's for its best candidate; a model fitted with the judge needs it."""
        if self.judge is None:
            return self.probability_of(features.vector())
        if judge_probability is None:
            raise ValueError(f"the abstain model fitted with {self.judge} needs the judge's probability")
        return self.probability_of([*features.vector(), judge_logit(judge_probability)])

    def probability_of(self, vector: Sequence[float]) -> float:
        z = self.bias + sum(w * (x - m) / s for w, x, m, s in zip(self.weights, vector, self.mean, self.scale))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def to_json(self) -> dict[str, object]:
        return {"features": list(self.feature_names()), "embedder": self.embedder, "languages": list(self.languages),
                "threads": self.threads, "judge": self.judge,
                "mean": list(self.mean), "scale": list(self.scale), "weights": list(self.weights), "bias": self.bias,
                "threshold": self.threshold, "trained_on": self.trained_on}

    def feature_names(self) -> tuple[str, ...]:
        return FEATURES if self.judge is None else (*FEATURES, JUDGE_FEATURE)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AbstainModel:
        judge = data.get("judge")
        if data.get("features") != list(FEATURES if judge is None else (*FEATURES, JUDGE_FEATURE)):
            raise ValueError("the abstain model was trained on other features: retrain it with bench/answers.py")
        return cls(embedder=str(data["embedder"]), mean=tuple(map(float, data["mean"])),  # type: ignore[arg-type]
                   scale=tuple(map(float, data["scale"])), weights=tuple(map(float, data["weights"])),  # type: ignore[arg-type]
                   bias=float(data["bias"]), threshold=float(data["threshold"]),  # type: ignore[arg-type]
                   trained_on=str(data.get("trained_on", "")),
                   languages=tuple(map(str, data.get("languages", []))),  # type: ignore[call-overload]
                   threads=bool(data.get("threads", False)), judge=None if judge is None else str(judge))


@dataclass(frozen=True, slots=True)
class AbstainModels:
    """The shipped models, per embedder: one per language that has its own (Japanese, Russian), one for
    thread follow-ups, one for everything else."""

    models: tuple[AbstainModel, ...] = ()

    def for_query(self, embedder: str, language: str, thread: bool = False, judge: str | None = None,
                  ) -> AbstainModel | None:
        """The model for a question: its language's own, else (follow-ups) the thread model, else the default.

        With ``judge`` (a judge version) each of those places takes the model fitted with that judge's logit
        where there is one, and its features model where there is not (``bench.answers`` keeps the judge only
        in the models whose FIT questions it helps); None when no model at all was fitted with that judge (a
        model fitted on another judge's logits would read this one's wrongly)."""
        mine = [m for m in self.models if m.embedder == embedder and m.judge in (None, judge)]
        if judge is not None and not any(m.judge == judge for m in mine):
            return None

        def place(serves: Callable[[AbstainModel], bool]) -> AbstainModel | None:
            found = [m for m in mine if serves(m)]
            return next((m for m in found if m.judge == judge), None) or next(iter(found), None)

        own = place(lambda m: language in m.languages)
        threads = place(lambda m: m.threads and not m.languages) if thread else None
        return own or threads or place(lambda m: not m.languages and not m.threads)


def load_models(path: Path = MODEL_PATH) -> AbstainModels:
    """The shipped models (start-up work: call once)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return AbstainModels(tuple(AbstainModel.from_json(item) for item in data["models"]))


def judge_logit(probability: float) -> float:
    """The judge's probability back on its logit scale, where the logistic model weighs it (clipped: a judge
    certain either way must not be infinite)."""
    p = min(1.0 - 1e-6, max(1e-6, probability))
    return math.log(p / (1.0 - p))
