"""A citation a lead confirmed bad: gone for the same question, ranked last for a similar one, back in a new version."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import pytest

from bot.answer.suppress import (
    Effect,
    Suppression,
    Thresholds,
    normalize_question,
    screen,
)
from retrieval.chunks import ScoredChunk
from tests.answer.builders import chunk

E5 = "e5-small-q4"
A, B, C = (chunk(text, document_id=doc) for text, doc in
           (("Locked for 15 minutes.", "accounts"), ("Refunds within 30 days.", "billing"), ("Status page.", "ops")))
HITS = tuple(ScoredChunk(c, 1.0 - i / 10, i + 1) for i, c in enumerate((A, B, C)))
THRESHOLDS = Thresholds(suppress=0.9, demote=0.8)


def unit(angle_degrees: float) -> tuple[float, ...]:
    """A 3-d unit vector whose cosine with (1, 0, 0) is cos(angle)."""
    rad = math.radians(angle_degrees)
    return (math.cos(rad), math.sin(rad), 0.0)


def angle_for(cos: float) -> float:
    return math.degrees(math.acos(cos))


QUERY_VECTOR = (1.0, 0.0, 0.0)


def bad(chunk_id: str = A.chunk_id, *, query: str = "How long is an account locked?", cos: float | None = 0.95,
        content_hash: str | None = "hash", embedder: str | None = E5, sid: str = "s1") -> Suppression:
    vector = None if cos is None else unit(angle_for(cos))
    return Suppression(sid, chunk_id, content_hash, query, embedder, vector)


def order(result_candidates: tuple[ScoredChunk, ...]) -> list[str]:
    names = {A.chunk_id: "A", B.chunk_id: "B", C.chunk_id: "C"}
    return [names[c.chunk.chunk_id] for c in result_candidates]


CASES = [
    # (what a user would notice, suppressions, query text, order of candidates, effect on A)
    ("no suppression: nothing changes", [], "anything", ["A", "B", "C"], None),
    ("a near-duplicate question: the chunk is gone", [bad(cos=0.95)], "How long does a lockout last?",
     ["B", "C"], Effect.SUPPRESSED),
    ("at the suppress threshold exactly: gone", [bad(cos=0.9)], "q", ["B", "C"], Effect.SUPPRESSED),
    ("a similar question: the chunk ranks last", [bad(cos=0.85)], "q", ["B", "C", "A"], Effect.DEMOTED),
    ("a different question: the chunk stays where it was", [bad(cos=0.5)], "q", ["A", "B", "C"], None),
    ("the same text, differently spelt, needs no vector", [bad(cos=None)], "  how LONG is an account locked ？",
     ["B", "C"], Effect.SUPPRESSED),
    ("no vector and another text: nothing", [bad(cos=None)], "Who can unlock it?", ["A", "B", "C"], None),
    ("a vector from another embedder is not compared", [bad(cos=0.99, embedder="cohere")], "q",
     ["A", "B", "C"], None),
    ("a new version of the document (another content hash) clears it", [bad(cos=0.99, content_hash="old")], "q",
     ["A", "B", "C"], None),
    ("another chunk's suppression does not touch this one", [bad(B.chunk_id, cos=0.5)], "q", ["A", "B", "C"], None),
    ("the most alike of several suppressions decides", [bad(cos=0.5, sid="s1"), bad(cos=0.95, sid="s2")], "q",
     ["B", "C"], Effect.SUPPRESSED),
    ("Japanese: the same question with full-width punctuation", [bad(query="アカウントは何分ロックされますか？", cos=None)],
     "アカウントは何分ロックされますか?", ["B", "C"], Effect.SUPPRESSED),
    ("Russian: the same question in another case", [bad(query="На сколько блокируется аккаунт?", cos=None)],
     "на сколько блокируется АККАУНТ", ["B", "C"], Effect.SUPPRESSED),
]


@pytest.mark.parametrize(("what", "suppressions", "query", "expected", "effect"), CASES, ids=[c[0] for c in CASES])
def test_suppressions_remove_or_demote_the_flagged_chunk(what: str, suppressions: list[Suppression], query: str,
                                                         expected: list[str], effect: Effect | None) -> None:
    result = screen(HITS, query, QUERY_VECTOR, E5, suppressions, THRESHOLDS)

    assert order(result.candidates) == expected
    on_a = [m.effect for m in result.matches if m.chunk_id == A.chunk_id]
    assert on_a == ([] if effect is None else [effect])
    assert result.suppressed == ((A.chunk_id,) if effect is Effect.SUPPRESSED else ())
    assert result.demoted == ((A.chunk_id,) if effect is Effect.DEMOTED else ())


def test_a_demoted_chunk_stays_last_after_reranking() -> None:
    result = screen(HITS, "q", QUERY_VECTOR, E5, [bad(cos=0.85)], THRESHOLDS)
    reranked = [HITS[0], HITS[2], HITS[1]]  # the reranker put A first again

    assert order(tuple(result.rank_lower(reranked))) == ["C", "B", "A"]


def test_the_match_says_which_suppression_acted_and_how_alike_the_questions_were() -> None:
    (match,) = screen(HITS, "q", QUERY_VECTOR, E5, [bad(cos=0.95, sid="s7")], THRESHOLDS).matches
    assert (match.suppression_id, match.chunk_id, round(match.similarity, 6)) == ("s7", A.chunk_id, 0.95)


@pytest.mark.parametrize(("suppress", "demote"), [(0.8, 0.9), (1.5, 0.5), (0.5, -2.0)])
def test_thresholds_out_of_order_or_range_are_refused(suppress: float, demote: float) -> None:
    with pytest.raises(ValueError, match="thresholds need"):
        Thresholds(suppress=suppress, demote=demote)


def test_the_shipped_thresholds_suppress_above_demoting() -> None:
    shipped = Thresholds()
    assert shipped.demote < shipped.suppress < 1.0
    assert dataclasses.replace(shipped) == shipped


def test_question_normalisation_keeps_words_and_drops_only_case_spacing_and_closing_marks() -> None:
    assert normalize_question(" Ｗhy  is it\tlocked?! ") == "why is it locked"
    assert normalize_question("why is it locked") != normalize_question("why was it locked")


def test_the_suppression_rules_import_no_io_library() -> None:
    code = "import sys, bot.answer.suppress; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    forbidden = {"weaviate", "cohere", "httpx", "aiohttp", "sqlalchemy", "slack_sdk", "slack_bolt", "requests", "grpc"}
    assert not {m.split(".")[0] for m in loaded} & forbidden
