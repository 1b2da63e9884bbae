"""Reranking: the top search results in, the best few out, each with a rerank score.

- ``LocalReranker`` (the embedded default): no cross-encoder ships its weights in a PyPI package, so
  it fuses two rankings by reciprocal rank — the hybrid search order and the order by each chunk's
  best-matching sentence (max cosine between the question and the chunk's sentences). Whether the
  sentence ranking helps depends on the language (docs/benchmarks.md); where it does not, its weight
  is 0 and the hybrid order stands.
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

from retrieval.chunks import ScoredChunk, SentenceHit
from retrieval.store import body_text

RRF_K = 60


class RerankError(Exception):
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


def fuse(hits: Sequence[ScoredChunk], sentences: Sequence[SentenceHit], sentence_weight: float) -> list[ScoredChunk]:
    """Reciprocal-rank fusion of the hybrid order and the best-sentence order (pure)."""
    best = best_sentence_scores(sentences)
    by_sentence = sorted(hits, key=lambda h: best.get(h.chunk.chunk_id, -2.0), reverse=True)
    sentence_rank = {h.chunk.chunk_id: i + 1 for i, h in enumerate(by_sentence)}
    fused = [
        replace(h, rerank_score=1.0 / (RRF_K + h.rank) + sentence_weight / (RRF_K + sentence_rank[h.chunk.chunk_id]))
        for h in hits
    ]
    # Two rankings fused by rank tie often (1st+2nd vs 2nd+1st): the better best sentence breaks the tie.
    fused.sort(key=lambda h: (h.rerank_score or 0.0, best.get(h.chunk.chunk_id, -2.0)), reverse=True)
    return fused


@dataclass(frozen=True)
class LocalReranker:
    # Weight of the best-sentence ranking per query language (0: keep the hybrid order).
    sentence_weight: Mapping[str, float] = field(default_factory=lambda: {"en": 1.0, "ja": 0.0, "ru": 1.0})
    name: str = "local-sentence-rrf"

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
