"""The answer service's parts, from settings and an open retrieval (the package's docstring maps the root)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.answer.cohere_compose import CohereComposer
from bot.answer.evidence import load_models
from bot.answer.prompts import load_prompts
from bot.answer.query import CohereQueryRewriter
from bot.answer.service import AnswerConfig, AnswerDeps
from bot.answer.suppression_source import SuppressionSource
from bot.runtime.retrieval import Retrieval
from bot.settings import Settings
from retrieval.embedders.local import E5Embedder
from retrieval.judging import LocalJudge
from retrieval.rerank import CohereReranker, LocalReranker


def build_answer_deps(settings: Settings, retrieval: Retrieval,
                      sessions: async_sessionmaker[AsyncSession] | None = None) -> AnswerDeps:
    """The answer service's parts: local ones always, Cohere ones where the settings switch them on; with the
    exchange log's ``sessions``, the citations leads confirmed bad (read from it, cached)."""
    prompts = load_prompts()
    config = AnswerConfig(search=settings.search_config(), top_n=settings.answer_top_n,
                          abstain_threshold=settings.abstain_threshold,
                          suppression=settings.suppression_thresholds())
    local = LocalReranker(sentence_weight=settings.sentence_weights())
    suppressions = (SuppressionSource(sessions, max_age_s=settings.suppressions_refresh_s)
                    if sessions is not None else None)
    # The judge runs on e5's loaded weights, beside the embedder's worker; with another embedder the features model
    # decides.
    judge = (LocalJudge(retrieval.embedder) if settings.verbatim_judge and isinstance(retrieval.embedder, E5Embedder)
             else None)
    deps = AnswerDeps(store=retrieval.store, embedder=retrieval.embedder, config=config, local_reranker=local,
                      abstain_models=load_models(), suppressions=suppressions, judge=judge)
    client = retrieval.cohere
    if client is not None:
        timeout = settings.cohere_timeout_s
        if settings.uses_cohere("reranker"):
            deps.reranker = CohereReranker(client, settings.cohere_rerank_model, timeout)
        if settings.uses_cohere("composer"):
            deps.composer = CohereComposer(client, settings.cohere_chat_model, prompts["compose"], timeout)
            deps.rewriter = CohereQueryRewriter(client, settings.cohere_chat_model, prompts["standalone_query"], timeout)
    return deps
