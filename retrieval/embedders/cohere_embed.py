"""Cohere Embed through the async SDK; switched on by ``COHERE_API_KEY``.

The client is built once at start-up (it is shared with reranking and chat) and passed in.
"""

from __future__ import annotations

from collections.abc import Sequence

import cohere
import httpx
import numpy as np
from cohere.core.api_error import ApiError

from retrieval.embedders import EmbeddingError

_MAX_TEXTS_PER_CALL = 96  # Cohere's documented limit for one embed request


def embed_dimension(model: str) -> int:
    """The vector size a Cohere embed model returns by default: Embed v4 1536, the v3 light models 384, others 1024."""
    if model.startswith("embed-v4"):
        return 1536
    return 384 if "light" in model else 1024


class CohereEmbedder:
    def __init__(self, client: cohere.AsyncClientV2, model: str) -> None:
        self._client = client
        self._model = model
        self.name = f"cohere:{model}"
        self.dim = embed_dimension(model)

    async def _embed(self, texts: Sequence[str], input_type: str) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), _MAX_TEXTS_PER_CALL):
            batch = list(texts[start : start + _MAX_TEXTS_PER_CALL])
            try:
                response = await self._client.embed(
                    model=self._model, input_type=input_type, texts=batch, embedding_types=["float"]
                )
            except ApiError as error:
                raise EmbeddingError(f"Cohere Embed answered HTTP {error.status_code}") from error
            except httpx.HTTPError as error:
                raise EmbeddingError(f"Cohere Embed could not be reached ({type(error).__name__})") from error
            vectors = response.embeddings.float_ if response.embeddings is not None else None
            if vectors is None or len(vectors) != len(batch):
                raise EmbeddingError("Cohere Embed returned no float embeddings for the batch")
            rows.extend(vectors)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await self._embed(texts, "search_document")

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self._embed([text], "search_query"))[0]

    async def aclose(self) -> None:
        return None  # the shared client is closed by whoever built it
