"""Embedders: text in, unit vectors out, behind one small async interface.

Local models (``e5``, ``use``) run in a single worker thread each: the model is CPU-bound, its
native code is not documented as thread-safe, and one worker keeps the event loop free while never
oversubscribing the cores. Cohere Embed runs over HTTP with the async SDK.

The ``name`` of an embedder is recorded in the Weaviate collection; a query made with another
embedder is refused (see ``retrieval.store``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from retrieval.errors import RetrievalError


class Embedder(Protocol):
    name: str  # recorded with the index, e.g. "e5-small-q4"
    dim: int

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    async def embed_query(self, text: str) -> np.ndarray: ...

    async def aclose(self) -> None: ...


class EmbeddingError(RetrievalError):
    """An embedder failed (remote API error, bad response). One line; never contains a secret."""
