"""Reranking: the top search results in, the best few out, each with a rerank score.

- ``LocalReranker`` (the embedded default): no cross-encoder ships its weights in a PyPI package, so
  it adds to each chunk's hybrid score the similarity of its best-matching sentence (max cosine between
  the question and the chunk's sentences), both scaled to 0–1 over the candidates, the sentence term
  weighted per language. Fusing the two by reciprocal rank instead lost to plain hybrid search on every
  dataset; this score fusion beats it on each (docs/benchmarks.md, "Retrieval").
- ``CohereReranker``: Cohere Rerank (multilingual) over the async SDK, when COHERE_API_KEY is set.
  Its failures raise ``RerankError``; the caller falls back to the local reranker and records it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import cohere
import httpx
from cohere.core.api_error import ApiError

from retrieval.chunks import ScoredChunk, SentenceHit, body_text
from retrieval.errors import RetrievalError
from retrieval.search_config import TUNING


class RerankError(RetrievalError):
    """A remote reranker failed; one line, no secret."""


class Reranker(Protocol):
    name: str

    async def rerank(self, query: str, language: str, hits: Sequence[ScoredChunk], sentences: Sequence[SentenceHit],
                     top_n: int) -> list[ScoredChunk]: ...


def best_sentence_scores(sentences: Sequence[SentenceHit]) -> dict[str, float]:
    """Each chunk's best sentence similarity."""
    best: dict[str, float] = {}
    for s in sentences:
        if s.score > best.get(s.chunk_id, -2.0):
            best[s.chunk_id] = s.score
    return best


def _unit_scale(values: Sequence[float | None]) -> list[float]:
    """Min-max to 0–1 over the candidates; a missing value or a flat list scales to 0."""
    present = [v for v in values if v is not None]
    if not present or max(present) <= min(present):
        return [0.0] * len(values)
    low, span = min(present), max(present) - min(present)
    return [0.0 if v is None else (v - low) / span for v in values]


def fuse(hits: Sequence[ScoredChunk], sentences: Sequence[SentenceHit], sentence_weight: float) -> list[ScoredChunk]:
    """The hybrid score plus the weighted best-sentence similarity, each scaled over ``hits`` (pure).

    Ties keep the search order, so a weight of 0 returns the hybrid ranking unchanged.
    """
    best = best_sentence_scores(sentences)
    search = _unit_scale([h.score for h in hits])
    sentence = _unit_scale([best.get(h.chunk.chunk_id) for h in hits])
    fused = [replace(h, rerank_score=s + sentence_weight * b) for h, s, b in zip(hits, search, sentence, strict=True)]
    fused.sort(key=lambda h: (-(h.rerank_score or 0.0), h.rank))
    return fused


@dataclass(frozen=True)
class LocalReranker:
    # Weight of the best-sentence term per query language (0: keep the hybrid order).
    sentence_weight: Mapping[str, float] = field(default_factory=lambda: dict(TUNING["e5"].sentence_weight))
    name: str = "local-sentence-fusion"

    async def rerank(self, query: str, language: str, hits: Sequence[ScoredChunk], sentences: Sequence[SentenceHit],
                     top_n: int) -> list[ScoredChunk]:
        weight = self.sentence_weight.get(language, self.sentence_weight.get("en", 0.0))
        return fuse(hits, sentences, weight)[:top_n]


class CohereReranker:
    def __init__(self, client: cohere.AsyncClientV2, model: str, timeout_s: float) -> None:
        self._client = client
        self._model = model
        self._timeout_s = timeout_s
        self.name = f"cohere:{model}"

    async def rerank(self, query: str, language: str, hits: Sequence[ScoredChunk], sentences: Sequence[SentenceHit],
                     top_n: int) -> list[ScoredChunk]:
        if not hits:
            return []
        try:
            response = await self._client.rerank(
                model=self._model, query=query, documents=[body_text(h.chunk) for h in hits],
                top_n=min(top_n, len(hits)), request_options={"timeout_in_seconds": int(max(1, self._timeout_s))},
            )
        except ApiError as error:
            raise RerankError(f"Cohere Rerank answered HTTP {error.status_code}") from error
        except httpx.HTTPError as error:
            raise RerankError(f"Cohere Rerank failed ({type(error).__name__})") from error
        out = []
        for result in response.results:
            if not 0 <= result.index < len(hits):
                raise RerankError("Cohere Rerank returned an index outside the documents sent")
            out.append(replace(hits[result.index], rerank_score=float(result.relevance_score)))
        return out
