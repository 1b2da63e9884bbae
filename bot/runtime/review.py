"""What a lead's verdict needs: the index and the embedder, or why not (the package's docstring maps the root)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from bot.review.learning import Learning
from bot.review.lookup import ChunkLookup, IndexUnavailable
from bot.runtime.retrieval import build_cohere, build_embedder, open_retrieval
from bot.settings import Settings
from retrieval.embedders import Embedder
from retrieval.errors import RetrievalError, first_line

log = logging.getLogger(__name__)

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
