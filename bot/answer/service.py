"""The one orchestration function: a question in, a verified answer (or an honest no-support) out.

    query -> search -> rerank -> compose -> verify -> decide

Clients are passed in (``AnswerDeps``), built once at start-up. Remote parts (Cohere rerank, chat, query
rewrite) fall back to the local ones on failure, and the route actually taken is part of the result.
Errors of the store or the embedder propagate: the caller turns them into an error reply and a logged
exchange.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.answer.cohere_compose import CohereComposer, CompositionFailed
from bot.answer.evidence import AbstainModels, Evidence, evidence
from bot.answer.extractive import (
    ExtractiveConfig,
    ScoredSentence,
    compose_chosen,
    compose_extractive,
    score_sentences,
)
from bot.answer import judge as judging
from bot.answer.judge import Judged
from bot.answer.query import CohereQueryRewriter, standalone_query
from bot.answer.quotes import verify
from bot.answer.suppress import Screened, Thresholds, screen
from bot.answer.suppression_source import SuppressionSource
from bot.answer.types import (
    Answered,
    Fallback,
    FallbackPart,
    NoSupport,
    NoSupportReason,
    Outcome,
    Question,
    Source,
)
from retrieval.chunks import ScoredChunk, SentenceHit
from retrieval.embedders import Embedder
from retrieval.errors import RetrievalError
from retrieval.judging import LocalJudge
from retrieval.language import detect_language
from retrieval.rerank import LocalReranker, Reranker, RerankError
from retrieval.search_config import SearchConfig
from retrieval.store_port import Store

EXTRACTIVE = "extractive"
# What answering one question may fail with, for every front end: the asker gets an error reply, the exchange
# is logged as an error, a batch goes on. Anything else is a bug.
ANSWER_ERRORS = (RetrievalError, TimeoutError)


@dataclass(frozen=True, slots=True)
class AnswerConfig:
    search: SearchConfig = field(default_factory=SearchConfig)
    top_n: int = 5  # sources offered to the composer
    nearest: int = 3  # fragments shown with a no-support answer
    sentence_limit: int = 400
    abstain_threshold: float | None = None  # None: the deciding model's own (the judge's, when there is one)
    judge_margin: float = 0.15  # a second candidate this close to the best one's probability is quoted too
    cohere_min_relevance: float = 0.02  # below this Cohere Rerank score the evidence is too weak
    extractive: ExtractiveConfig = field(default_factory=ExtractiveConfig)
    suppression: Thresholds = field(default_factory=Thresholds)


@dataclass
class AnswerDeps:
    store: Store
    embedder: Embedder
    config: AnswerConfig
    local_reranker: LocalReranker = field(default_factory=LocalReranker)
    abstain_models: AbstainModels = field(default_factory=AbstainModels)
    reranker: Reranker | None = None  # Cohere Rerank, when configured
    composer: CohereComposer | None = None  # Cohere Chat, when configured
    rewriter: CohereQueryRewriter | None = None
    suppressions: SuppressionSource | None = None  # citations leads confirmed bad (None: none applied)
    judge: LocalJudge | None = None  # decides and picks the quote on the extractive path (None: the features model)


@dataclass(frozen=True, slots=True)
class Route:
    embedder: str
    reranker: str
    composer: str
    prompt_version: str | None = None
    fallbacks: tuple[Fallback, ...] = ()  # why a remote part was not used, e.g. "compose: http_500"
    suppressed: tuple[str, ...] = ()  # chunk ids not quoted: a lead confirmed them bad for this question
    demoted: tuple[str, ...] = ()  # chunk ids ranked last: confirmed bad for a similar question
    judge: str | None = None  # the judge's version, when it decided

    def to_json(self) -> dict[str, object]:
        return {"embedder": self.embedder, "reranker": self.reranker, "composer": self.composer,
                "prompt_version": self.prompt_version, "fallbacks": [str(f) for f in self.fallbacks],
                "suppressed": list(self.suppressed), "demoted": list(self.demoted), "judge": self.judge}


@dataclass(frozen=True, slots=True)
class AnswerResult:
    question: Question
    query: str
    language: str  # the asker's language: what the answer text is written in
    outcome: Outcome
    retrieved: tuple[ScoredChunk, ...]  # every search hit, in search order, rerank scores where reranked
    sources: tuple[Source, ...]  # what the composer saw
    best_sentences: tuple[ScoredSentence, ...]  # of the sources, best first (for nearest fragments)
    evidence: Evidence | None
    evidence_probability: float | None  # the deciding model's probability that the answer is supported
    route: Route
    timings_ms: dict[str, float]
    judged: tuple[Judged, ...] = ()  # the judge's candidates and their probabilities, most probable first


async def answer(question: Question, deps: AnswerDeps) -> AnswerResult:
    started = time.perf_counter()
    fallbacks: list[Fallback] = []
    config = deps.config

    if deps.rewriter is not None and question.history:
        query, why = await deps.rewriter.rewrite(question.text, question.history, question.language)
        if why:
            fallbacks.append(Fallback(FallbackPart.QUERY, why))
    else:
        query = standalone_query(question.text, question.history, question.language)
    language = question.language
    query_language = language if query == question.text else detect_language(query)

    vector = await deps.embedder.embed_query(query)
    hits = await deps.store.search(query, vector, language=query_language, channels=question.visible_in,
                                   limit=config.search.limit, alpha=config.search.alpha_for(query_language),
                                   sources=question.sources)
    screened = await _screen(deps, query, vector, hits)
    candidates = list(screened.candidates)
    searched = time.perf_counter()

    sentences: list[SentenceHit] = []
    if candidates:
        sentences = await deps.store.sentence_hits(vector, [h.chunk.chunk_id for h in candidates],
                                                   limit=config.sentence_limit)
    reranker_name = deps.local_reranker.name
    top: list[ScoredChunk] = []
    if candidates and deps.reranker is not None:
        try:
            top = await deps.reranker.rerank(query, query_language, candidates, sentences, config.top_n)
            reranker_name = deps.reranker.name
        except RerankError as error:
            fallbacks.append(Fallback(FallbackPart.RERANK, str(error)))
    if candidates and not top:
        top = await deps.local_reranker.rerank(query, query_language, candidates, sentences, config.top_n)
    top = screened.rank_lower(top)
    reranked = time.perf_counter()

    sources = tuple(Source(f"S{i + 1}", h.chunk, h.rank, h.score, h.rerank_score) for i, h in enumerate(top))
    scored = score_sentences(query, query_language, sources, sentences, config.extractive)
    composer_name, prompt_version = EXTRACTIVE, None
    draft = None
    if sources and deps.composer is not None:
        try:
            draft = await deps.composer.compose(question.text, sources, [(t.role, t.text) for t in question.history])
            composer_name, prompt_version = deps.composer.name, deps.composer.prompt_version
        except CompositionFailed as error:
            fallbacks.append(Fallback(FallbackPart.COMPOSE, error.kind))
    judged: list[Judged] = []
    thread = bool(question.history)
    if draft is None and deps.judge is not None and scored and _judge_decides(deps, query_language, thread):
        chosen = judging.candidates(scored, deps.judge.card.candidates)
        probabilities = await deps.judge.probabilities(judging.pairs(query, chosen, scored))
        judged = sorted((Judged(s, float(p)) for s, p in zip(chosen, probabilities)),
                        key=lambda j: j.probability, reverse=True)
        # The best candidate is composed whatever its probability: below the threshold it is withheld, not shown.
        draft = compose_chosen(judging.quote_order(judged, config.judge_margin), scored, config.extractive)
    if draft is None:
        draft = compose_extractive(query, query_language, sources, sentences, config.extractive)
    composed = time.perf_counter()

    verification = verify(draft, sources)
    features = evidence(query, query_language, scored, [h.chunk.text for h in candidates])
    probability = None
    outcome: Outcome
    if not sources:
        outcome = NoSupport(NoSupportReason.NOTHING_FOUND, ())
    else:
        nearest = sources[: config.nearest]
        remote_rerank = reranker_name != deps.local_reranker.name
        if judged:
            weak, probability = _judged_is_weak(deps, query_language, thread, judged, features)
        else:
            weak, probability = _evidence_is_weak(deps, composer_name, remote_rerank, query_language, thread,
                                                  top, features)
        if not verification.claims:
            outcome = NoSupport(NoSupportReason.NO_VERIFIED_CLAIM, nearest, verification.rejected)
        elif weak:
            outcome = NoSupport(NoSupportReason.LOW_EVIDENCE, nearest, verification.rejected, verification.claims)
        else:
            outcome = Answered(verification.claims, verification.rejected)
    verified = time.perf_counter()

    route = Route(deps.embedder.name, reranker_name, composer_name, prompt_version, tuple(fallbacks),
                  screened.suppressed, screened.demoted, deps.judge.version if judged and deps.judge else None)
    timings = {
        "search": (searched - started) * 1000, "rerank": (reranked - searched) * 1000,
        "compose": (composed - reranked) * 1000, "verify": (verified - composed) * 1000,
        "total": (verified - started) * 1000,
    }
    return AnswerResult(question, query, language, outcome, tuple(hits_with_rerank(hits, top)), sources,
                        tuple(scored), features, probability, route, timings, tuple(judged))


async def _screen(deps: AnswerDeps, query: str, vector: Sequence[float], hits: Sequence[ScoredChunk]) -> Screened:
    """The hits without the chunks leads confirmed bad for this question, those for similar questions last."""
    suppressions = await deps.suppressions.current() if deps.suppressions is not None else ()
    if not suppressions:  # the usual case: no list of 384 floats built per question
        return Screened(tuple(hits), ())
    return screen(hits, query, [float(x) for x in vector], deps.embedder.name, suppressions, deps.config.suppression)


def _evidence_is_weak(deps: AnswerDeps, composer: str, remote_rerank: bool, language: str, thread: bool,
                      top: Sequence[ScoredChunk], features: Evidence | None) -> tuple[bool, float | None]:
    """(too weak to answer?, the model's probability when the local model decided)."""
    if composer != EXTRACTIVE and remote_rerank:
        # A generative composer returns no claims when unsupported; Cohere Rerank's score guards the rest.
        best = top[0].rerank_score if top else None
        return (best is not None and best < deps.config.cohere_min_relevance), None
    model = deps.abstain_models.for_query(deps.embedder.name, language, thread)
    if model is None or features is None:
        # Uncalibrated: the extractive composer needs evidence features; a generative one abstains itself.
        return composer == EXTRACTIVE and features is None, None
    probability = model.probability(features)
    threshold = deps.config.abstain_threshold if deps.config.abstain_threshold is not None else model.threshold
    return probability < threshold, probability


def _judge_decides(deps: AnswerDeps, language: str, thread: bool) -> bool:
    """Whether the judge runs for this question: its decision model reads the judge's logit, or no model was
    fitted with this judge (it decides on its own threshold). Where ``bench.answers`` found the judge no help
    on FIT (thread follow-ups, so far) the features model decides on the extractive quote, as without a judge."""
    assert deps.judge is not None
    model = deps.abstain_models.for_query(deps.embedder.name, language, thread, judge=deps.judge.version)
    return model is None or model.judge is not None


def _judged_is_weak(deps: AnswerDeps, language: str, thread: bool, judged: Sequence[Judged],
                    features: Evidence | None) -> tuple[bool, float]:
    """(too weak to answer?, the deciding probability) on the judge's path: the model fitted with this judge's
    logit beside the evidence features when one ships, else the judge's best probability on its own threshold."""
    assert deps.judge is not None
    override = deps.config.abstain_threshold
    model = deps.abstain_models.for_query(deps.embedder.name, language, thread, judge=deps.judge.version)
    if model is not None and features is not None:
        probability = model.probability(features, judged[0].probability)
        return probability < (override if override is not None else model.threshold), probability
    threshold = override if override is not None else deps.judge.card.threshold
    return judging.decide(judged, threshold) is None, judged[0].probability


def hits_with_rerank(hits: Sequence[ScoredChunk], top: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """All hits in search order, carrying the rerank score of those that were reranked into the top."""
    reranked = {h.chunk.chunk_id: h.rerank_score for h in top}
    return [ScoredChunk(h.chunk, h.score, h.rank, reranked.get(h.chunk.chunk_id)) for h in hits]
