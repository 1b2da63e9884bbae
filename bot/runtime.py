"""The composition root: every client a process uses is built here once, from settings, handed out, and closed.

    open_retrieval      Weaviate, the Cohere client, the embedder (the answer path, ingest, sync)
    open_storage        the exchange log the bot writes: an engine, its sessions, the journal (replayed)
    open_log            the exchange log the review desk and ``db check`` read: it must exist at this revision
    open_learning       what a lead's verdict teaches: the index (or why not) and the embedder the bot answers with
    open_gaps_embedder  the local e5 that groups no-support questions (the process's own e5 when it has one)
    build_answer_deps   the answer service's parts from an open retrieval (and the log's sessions)

The server (``bot.serve``) builds the Slack Web API client and its aiohttp session: the edge's own client.
Nothing else builds an engine, a Weaviate client or an embedder (``tests/test_import_rules.py`` checks it). A
process opens one engine on its exchange log: SQLite's writes take turns on one connection (``storage.db``).

The review's log is the desk's subject, so a log that cannot be used stops the command with storage's one-line
reason (no tables, an older revision: ``verbatim db upgrade``; does not connect: the URL without its password),
and a SQLite log that does not exist yet is reported as such instead of being created empty by a read. The index
only adds the text around quotes and the stale markers, so when it cannot be opened the desk goes on with an
``IndexUnavailable`` lookup that carries the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import cohere
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.answer.cohere_compose import CohereComposer
from bot.answer.evidence import load_models
from bot.answer.prompts import load_prompts
from bot.answer.query import CohereQueryRewriter
from bot.answer.service import AnswerConfig, AnswerDeps
from bot.answer.suppression_source import SuppressionSource
from bot.exchange_log import ExchangeLog
from bot.review.learning import Learning
from bot.review.lookup import ChunkLookup, IndexUnavailable
from bot.settings import Settings
from retrieval.embedders import Embedder
from retrieval.embedders.cohere_embed import CohereEmbedder
from retrieval.embedders.local import E5Embedder, UseEmbedder
from retrieval.errors import RetrievalError, first_line
from retrieval.judging import LocalJudge
from retrieval.rerank import CohereReranker, LocalReranker
from retrieval.store import ChunkStore, Replication
from retrieval.weaviate_server import WeaviateHandle, connect
from storage import migrate
from storage.db import (
    UPGRADE_HINT,
    check_schema,
    create_engine,
    create_session_factory,
    ensure_sqlite_directory,
    sqlite_path,
    unavailable,
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

    @property
    def log(self) -> ExchangeLog:
        """The log as the front ends are handed it (its sessions and journal)."""
        return ExchangeLog(self.sessions, self.journal)


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
    return E5Embedder(threads=threads, query_threads=query_threads, cache_dir=settings.verbatim_model_cache)


@asynccontextmanager
async def open_retrieval(settings: Settings, *, create: bool = False, rebuild: bool = False,
                         embed_threads: int | None = None, query_threads: int | None = None,
                         embeds: bool = True,
                         while_starting: Callable[[Embedder], Awaitable[None]] | None = None,
                         ) -> AsyncIterator[Retrieval]:
    """Connect to Weaviate and open the chunk collection; ``create`` makes it when missing (ingest). ``embeds``:
    the caller will embed, so a local model starts loading now; False for registry-only commands.
    ``while_starting(embedder)``: work to do while Weaviate starts, stopped (cancelled) once it serves."""
    async with AsyncExitStack() as stack:
        cohere_client = build_cohere(settings)
        if cohere_client is not None:  # closed last: the embedder, reranker and composer share it
            await stack.enter_async_context(cohere_client)
        embedder = build_embedder(settings, cohere_client, embed_threads, query_threads)
        stack.push_async_callback(embedder.aclose)
        if embeds and isinstance(embedder, E5Embedder):  # its second of loading runs while Weaviate starts (3 s)
            embedder.preload()
        handle = await _connect_while(settings, while_starting(embedder) if while_starting is not None else None)
        stack.push_async_callback(handle.close)
        store = ChunkStore(handle.client, settings.verbatim_collection,
                           query_timeout_s=settings.weaviate_query_timeout_s,
                           replication=Replication(settings.weaviate_replication_factor,
                                                   settings.weaviate_consistency))
        if rebuild:
            await store.drop()
        await store.open(embedder.name, embedder.dim, ja_tokenization=settings.verbatim_ja_tokenization, create=create)
        yield Retrieval(settings=settings, weaviate=handle, store=store, embedder=embedder, cohere=cohere_client)


async def _connect_while(settings: Settings, work: Coroutine[object, object, None] | None) -> WeaviateHandle:
    """Connect to Weaviate while ``work`` runs; the work stops when the connection is made, or fails."""
    if work is None:
        return await connect(settings.weaviate_config())
    task = asyncio.create_task(work)
    try:
        return await connect(settings.weaviate_config())
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task  # its own errors are raised: the work keeps what it finished, never fails quietly


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
    # The judge runs on e5's weights, on the embedder's worker; with another embedder the features model decides.
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


@asynccontextmanager
async def open_log(settings: Settings) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on the exchange log, after checking it is at this code's revision (the review desk, ``db check``).

    Raises storage's errors (InvalidDatabaseURL, DatabaseUnavailable, SchemaMissing, SchemaOutdated); a
    database that fails later, mid-command, is reported as DatabaseUnavailable too.
    """
    url = settings.database_url_value()
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise SchemaMissing(f"there is no exchange log at {path} yet: {UPGRADE_HINT} (or set DATABASE_URL)")
    engine = create_engine(url)
    try:
        await check_schema(engine)
        try:
            yield create_session_factory(engine)
        except DBAPIError as error:
            raise unavailable(engine.url, error) from error
    finally:
        await engine.dispose()


INDEX_OPEN_ERRORS = (RetrievalError, ValueError, OSError)


@asynccontextmanager
async def open_learning(settings: Settings) -> AsyncIterator[Learning]:
    """What a verdict needs to be remembered: the index (or why not) and the embedder the bot answers with (built
    alone when the index is down; none when it cannot be built, which is logged: only the same question, by its
    text, is then matched)."""
    async with AsyncExitStack() as stack:
        try:
            retrieval = await stack.enter_async_context(open_retrieval(settings))
        except INDEX_OPEN_ERRORS as error:
            reason = first_line(error)
        else:
            yield Learning(lookup=retrieval.store, embedder=retrieval.embedder)
            return
        client = build_cohere(settings)
        if client is not None:  # closed with the stack: the embedder only borrows it
            await stack.enter_async_context(client)
        embedder: Embedder | None = None
        try:  # the local model loads on first use only; a Cohere one without its key is no embedder
            embedder = build_embedder(settings, client)
            stack.push_async_callback(embedder.aclose)
        except ValueError as error:
            log.warning("no embedder for the query vectors a verdict remembers (%s): a confirmed-bad citation is "
                        "matched by the question's text only", error)
        yield Learning(lookup=IndexUnavailable(reason), embedder=embedder)


@asynccontextmanager
async def open_chunk_lookup(settings: Settings) -> AsyncIterator[ChunkLookup]:
    """The chunk index from settings, or an `IndexUnavailable` saying in one line why it cannot be read."""
    async with open_learning(settings) as learning:
        yield learning.lookup


@asynccontextmanager
async def open_gaps_embedder(settings: Settings, reuse: Embedder | None = None) -> AsyncIterator[E5Embedder]:
    """The local e5 that embeds no-support questions for the gaps: ``reuse`` when it is one (one model in the
    process), else its own, which loads on first use (in its own thread) and is closed here."""
    if isinstance(reuse, E5Embedder):
        yield reuse
        return
    embedder = E5Embedder(cache_dir=settings.verbatim_model_cache)
    try:
        yield embedder
    finally:
        await embedder.aclose()
