"""Opening what the review desk reads: the exchange log (must work) and the chunk index (may be down).

The log is the desk's subject, so a log that cannot be used stops the command with storage's one-line
reason (no tables, an older revision: run `alembic upgrade head`; does not connect: the URL without its
password). The index only adds the text around quotes and the stale markers, so when it cannot be opened
the desk goes on with an `IndexUnavailable` lookup that carries the reason. `open_learning` adds the embedder
the bot answers with, for the query vector a `confirmed_bad` verdict remembers (built alone when the index is down).

A SQLite log that does not exist yet is reported as such instead of being created empty by a read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from sqlalchemy.exc import DBAPIError

from bot.review.desk import Sessions
from bot.review.learning import Learning
from bot.review.lookup import ChunkLookup, IndexUnavailable
from bot.runtime import build_cohere, build_embedder, open_retrieval
from bot.settings import Settings
from retrieval.embedders import Embedder
from retrieval.errors import RetrievalError, first_line
from storage.db import (
    UPGRADE_HINT,
    check_schema,
    create_engine,
    create_session_factory,
    sqlite_path,
    unavailable,
)
from storage.errors import SchemaMissing

INDEX_OPEN_ERRORS = (RetrievalError, ValueError, OSError)


@asynccontextmanager
async def open_log(url: str) -> AsyncIterator[Sessions]:
    """A session factory on the exchange log at `url`, after checking it is at this code's revision.

    Raises storage's errors (InvalidDatabaseURL, DatabaseUnavailable, SchemaMissing, SchemaOutdated); a
    database that fails later, mid-command, is reported as DatabaseUnavailable too.
    """
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


@asynccontextmanager
async def open_learning(settings: Settings) -> AsyncIterator[Learning]:
    """What a verdict needs to be remembered: the index (or why not) and the embedder the bot answers with."""
    async with AsyncExitStack() as stack:
        learning: Learning
        try:
            retrieval = await stack.enter_async_context(open_retrieval(settings))
            learning = Learning(lookup=retrieval.store, embedder=retrieval.embedder)
        except INDEX_OPEN_ERRORS as error:
            embedder: Embedder | None = None
            client = build_cohere(settings)
            if client is not None:  # closed with the stack: the embedder only borrows it
                await stack.enter_async_context(client)
            try:  # the local model loads on first use only; a Cohere one without its key is no embedder
                embedder = build_embedder(settings, client)
                stack.push_async_callback(embedder.aclose)
            except ValueError:
                pass
            learning = Learning(lookup=IndexUnavailable(first_line(error)), embedder=embedder)
        yield learning


@asynccontextmanager
async def open_chunk_lookup(settings: Settings) -> AsyncIterator[ChunkLookup]:
    """The chunk index from settings, or an `IndexUnavailable` saying in one line why it cannot be read."""
    async with open_learning(settings) as learning:
        yield learning.lookup
