"""The composition root of the answer path: builds its clients once from settings, hands them out, closes them.

The bot and the ``verbatim`` commands get their Weaviate client, Cohere client, embedder and database engine
here. The server (``bot.serve``) builds the Slack Web API client and its aiohttp session; the review commands
open their database through ``bot.review.runtime`` and build the local e5 for ``review gaps`` themselves.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import cohere
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.answer.cohere_compose import CohereComposer
from bot.answer.evidence import load_models
from bot.answer.prompts import load_prompts
from bot.answer.query import CohereQueryRewriter
from bot.answer.service import AnswerConfig, AnswerDeps
from bot.answer.suppression_source import SuppressionSource
from bot.settings import Settings
from retrieval.embedders import Embedder
from retrieval.embedders.cohere_embed import CohereEmbedder
from retrieval.embedders.local import E5Embedder, UseEmbedder
from retrieval.rerank import CohereReranker, LocalReranker
from retrieval.store import ChunkStore, Replication
from retrieval.weaviate_server import WeaviateHandle, connect
from storage import migrate
from storage.db import (
    check_schema,
    create_engine,
    create_session_factory,
    ensure_sqlite_directory,
    sqlite_path,
)
from storage.errors import DatabaseUnavailable, SchemaMissing, StorageError
from storage.journal import Journal

log = logging.getLogger(__name__)


@dataclass
class Retrieval:
    settings: Settings
    weaviate: WeaviateHandle
    store: ChunkStore
    embedder: Embedder
    cohere: cohere.AsyncClientV2 | None


@dataclass
class Storage:
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    journal: Journal


def build_cohere(settings: Settings) -> cohere.AsyncClientV2 | None:
    if settings.cohere_api_key is None:
        return None
    return cohere.AsyncClientV2(
        api_key=settings.cohere_api_key.get_secret_value(),
        base_url=settings.cohere_base_url or "https://api.cohere.com",
        timeout=settings.cohere_timeout_s,
        max_retries=0,  # our callers decide what a failure means (fallback, error line)
    )


def build_embedder(settings: Settings, cohere_client: cohere.AsyncClientV2 | None,
                   threads: int | None = None, query_threads: int | None = None) -> Embedder:
    """The configured embedder; ``threads`` caps the cores a local one computes on (default: all it may use),
    ``query_threads`` those e5 embeds questions on (default: ``threads``)."""
    name = settings.embedder_name
    if name == "cohere":
        if cohere_client is None:
            raise ValueError("VERBATIM_EMBEDDER=cohere needs COHERE_API_KEY")
        return CohereEmbedder(cohere_client, settings.cohere_embed_model)
    if name == "use":
        return UseEmbedder(threads=threads or 2)
    return E5Embedder(threads=threads, query_threads=query_threads)


@asynccontextmanager
async def open_retrieval(settings: Settings, *, create: bool = False, rebuild: bool = False,
                         embed_threads: int | None = None, query_threads: int | None = None) -> AsyncIterator[Retrieval]:
    """Connect to Weaviate and open the chunk collection; ``create`` makes it when missing (ingest)."""
    async with AsyncExitStack() as stack:
        cohere_client = build_cohere(settings)
        if cohere_client is not None:  # closed last: the embedder, reranker and composer share it
            await stack.enter_async_context(cohere_client)
        embedder = build_embedder(settings, cohere_client, embed_threads, query_threads)
        stack.push_async_callback(embedder.aclose)
        handle = await connect(settings.weaviate_config())
        stack.push_async_callback(handle.close)
        store = ChunkStore(handle.client, settings.verbatim_collection,
                           query_timeout_s=settings.weaviate_query_timeout_s,
                           replication=Replication(settings.weaviate_replication_factor,
                                                   settings.weaviate_consistency))
        if rebuild:
            await store.drop()
        await store.open(embedder.name, embedder.dim, ja_tokenization=settings.verbatim_ja_tokenization, create=create)
        yield Retrieval(settings=settings, weaviate=handle, store=store, embedder=embedder, cohere=cohere_client)


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
    deps = AnswerDeps(store=retrieval.store, embedder=retrieval.embedder, config=config, local_reranker=local,
                      abstain_models=load_models(), suppressions=suppressions)
    client = retrieval.cohere
    if client is not None:
        timeout = settings.cohere_timeout_s
        if settings.uses_cohere("reranker"):
            deps.reranker = CohereReranker(client, settings.cohere_rerank_model, timeout)
        if settings.uses_cohere("composer"):
            deps.composer = CohereComposer(client, settings.cohere_chat_model, prompts["compose"], timeout)
            deps.rewriter = CohereQueryRewriter(client, settings.cohere_chat_model, prompts["standalone_query"], timeout)
    return deps


async def replay_journal(journal: Journal, sessions: async_sessionmaker[AsyncSession]) -> None:
    """Write journaled exchanges to the database if it is back; keep them otherwise."""
    try:
        result = await journal.replay(sessions)
    except StorageError as error:
        log.warning("journal replay failed, will retry: %s", error)
        return
    if result.written:
        log.info("wrote %d journaled exchanges to the database (%d still pending)", result.written, result.remaining)
    if result.dead_lettered:  # each one was logged with its traceback by the replay
        log.error("%d journaled exchanges refused by the database, set aside in %s", result.dead_lettered,
                  journal.dead_path)


@asynccontextmanager
async def open_storage(settings: Settings) -> AsyncIterator[Storage]:
    """The exchange log: an engine, its session factory and the journal; pending journal entries are replayed.

    A fresh embedded SQLite file is created by running the migrations; any other database must be
    migrated by its release step (`alembic upgrade head`), and an empty or stale one is refused with
    that instruction.
    """
    url = settings.database_url_value()
    if sqlite_path(url) is not None:
        ensure_sqlite_directory(url)
    engine = create_engine(url)
    try:
        try:
            await check_schema(engine)
        except SchemaMissing:
            if sqlite_path(url) is None:
                raise
            await migrate.upgrade(url)
        except DatabaseUnavailable as error:
            # Keep answering: exchanges go to the journal until the database is back.
            log.warning("the exchange log is unavailable, journaling exchanges: %s", error)
        sessions = create_session_factory(engine)
        settings.verbatim_home.mkdir(parents=True, exist_ok=True)
        journal = Journal.in_home(settings.verbatim_home)
        await replay_journal(journal, sessions)
        yield Storage(engine=engine, sessions=sessions, journal=journal)
    finally:
        await engine.dispose()
