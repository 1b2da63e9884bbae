"""The local reranker's fusion (pure): which chunk the composer sees first."""

from __future__ import annotations

import pytest

from retrieval.chunks import ScoredChunk, SentenceHit
from retrieval.rerank import LocalReranker, fuse
from tests.answer.builders import chunk


def hits(*scores: float) -> list[ScoredChunk]:
    """Search hits A, B, C … in search order with these hybrid scores."""
    return [ScoredChunk(chunk(f"chunk {chr(65 + i)}", document_id=chr(65 + i)), s, i + 1) for i, s in enumerate(scores)]


def sentences(found: list[ScoredChunk], best: dict[str, list[float]]) -> list[SentenceHit]:
    by_doc = {h.chunk.document_id: h.chunk.chunk_id for h in found}
    return [SentenceHit(by_doc[doc], 0, 5, score) for doc, scores in best.items() for score in scores]


@pytest.mark.parametrize(
    ("search_scores", "sentence_scores", "weight", "order"),
    [
        # Weight 0: the hybrid order stands, whatever the sentences say.
        ((0.9, 0.5, 0.1), {"A": [0.70], "B": [0.90], "C": [0.95]}, 0.0, "ABC"),
        # A chunk whose best sentence is far better overtakes a slightly better search hit …
        ((0.9, 0.85, 0.1), {"A": [0.70], "B": [0.90], "C": [0.71]}, 0.35, "BAC"),
        # … but not one far ahead in search.
        ((0.9, 0.3, 0.1), {"A": [0.70], "B": [0.90], "C": [0.71]}, 0.35, "ABC"),
        # Only each chunk's best sentence counts, not how many sentences it has.
        ((0.9, 0.85, 0.1), {"A": [0.80, 0.80, 0.79], "B": [0.90, 0.20]}, 0.35, "BAC"),
        # A chunk without sentence vectors keeps only its search term.
        ((0.9, 0.85, 0.1), {"B": [0.90], "C": [0.70]}, 1.0, "BAC"),
        # Equal fused scores keep the search order.
        ((0.5, 0.5, 0.5), {"A": [0.8], "B": [0.8], "C": [0.8]}, 1.0, "ABC"),
    ],
)
def test_fusion_order(search_scores: tuple[float, ...], sentence_scores: dict[str, list[float]], weight: float,
                      order: str) -> None:
    found = hits(*search_scores)
    fused = fuse(found, sentences(found, sentence_scores), weight)
    assert "".join(h.chunk.document_id for h in fused) == order
    assert sorted(h.rank for h in fused) == [1, 2, 3]  # nothing lost, search ranks kept for the log


def test_one_hit_is_returned_with_a_score() -> None:
    found = hits(0.4)
    fused = fuse(found, sentences(found, {"A": [0.9]}), 0.35)
    assert [h.chunk.document_id for h in fused] == ["A"]
    assert fused[0].rerank_score == 0.0


async def test_the_weight_is_chosen_by_the_query_language() -> None:
    found = hits(0.9, 0.85)
    hit_sentences = sentences(found, {"A": [0.5], "B": [0.9]})
    reranker = LocalReranker(sentence_weight={"en": 0.0, "ru": 2.0})
    assert [h.chunk.document_id for h in await reranker.rerank("q", "en", found, hit_sentences, 5)] == ["A", "B"]
    assert [h.chunk.document_id for h in await reranker.rerank("q", "ru", found, hit_sentences, 5)] == ["B", "A"]
    # A language without its own weight uses English's; top_n cuts the list.
    assert [h.chunk.document_id for h in await reranker.rerank("q", "ja", found, hit_sentences, 1)] == ["A"]
