"""A citation a lead confirmed bad does not come back for the same question, and ranks lower for similar ones.

Rules (pure: no I/O; `screen` is the whole of it):

- A suppression names one chunk of one document version (its id and content hash) and the question it was
  wrong for (the query searched, and that query's vector from the embedder that made it).
- It applies to a candidate only when the candidate is that chunk in that version: a new version of the
  document has other chunk ids and another content hash, so the flag (about the old text) no longer counts.
- How alike the questions are: 1.0 when the normalised texts are equal (NFKC, case, whitespace, closing
  punctuation); otherwise the cosine of the query vectors when both come from the same embedder; otherwise
  not alike at all (no vector to compare).
- similarity >= `Thresholds.suppress`: the same question or a near-duplicate: the chunk is removed.
- similarity >= `Thresholds.demote`: a similar question: the chunk stays but ranks after every other one.
- Several suppressions of one chunk: the most alike decides. Candidates keep their order otherwise.

The thresholds are measured on paraphrase pairs (`bench/suppression.py`, docs/benchmarks.md).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from retrieval.chunks import ScoredChunk


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Cosine similarity of query vectors (multilingual-e5-small) at which a suppression acts."""

    suppress: float = 0.98  # measured by bench/suppression.py: see docs/benchmarks.md, "Suppressed citations"
    demote: float = 0.82

    def __post_init__(self) -> None:
        if not -1.0 <= self.demote <= self.suppress <= 1.0:
            raise ValueError(f"thresholds need -1 <= demote <= suppress <= 1, got {self.demote} and {self.suppress}")


@dataclass(frozen=True, slots=True)
class Suppression:
    """A chunk (in one version) confirmed bad for one question."""

    id: str
    chunk_id: str
    content_hash: str | None  # None: matched on the chunk id alone (which already names its version)
    query: str
    embedder: str | None
    vector: tuple[float, ...] | None


class Effect(StrEnum):
    SUPPRESSED = "suppressed"
    DEMOTED = "demoted"


@dataclass(frozen=True, slots=True)
class Match:
    """What one suppression did to one candidate, and how alike the two questions were."""

    suppression_id: str
    chunk_id: str
    similarity: float
    effect: Effect


@dataclass(frozen=True, slots=True)
class Screened:
    """The candidates with suppressed chunks removed and demoted ones last, and why."""

    candidates: tuple[ScoredChunk, ...]
    matches: tuple[Match, ...]

    @property
    def suppressed(self) -> tuple[str, ...]:
        return tuple(m.chunk_id for m in self.matches if m.effect is Effect.SUPPRESSED)

    @property
    def demoted(self) -> tuple[str, ...]:
        return tuple(m.chunk_id for m in self.matches if m.effect is Effect.DEMOTED)

    def rank_lower(self, ranked: Sequence[ScoredChunk]) -> list[ScoredChunk]:
        """``ranked`` (e.g. after reranking) with the demoted chunks moved after all others, order kept."""
        demoted = set(self.demoted)
        return [c for c in ranked if c.chunk.chunk_id not in demoted] + [c for c in ranked if c.chunk.chunk_id in demoted]


def screen(candidates: Sequence[ScoredChunk], query: str, vector: Sequence[float] | None, embedder: str,
           suppressions: Sequence[Suppression], thresholds: Thresholds) -> Screened:
    """Apply the suppressions to the candidates of one query (see the module's rules)."""
    if not suppressions:
        return Screened(tuple(candidates), ())
    text = normalize_question(query)
    kept: list[ScoredChunk] = []
    lower: list[ScoredChunk] = []
    matches: list[Match] = []
    for candidate in candidates:
        best: tuple[float, Suppression] | None = None
        for suppression in suppressions:
            if not _same_chunk(suppression, candidate):
                continue
            alike = similarity(text, vector, embedder, suppression)
            if best is None or alike > best[0]:
                best = (alike, suppression)
        effect = None if best is None else _effect(best[0], thresholds)
        if best is not None and effect is not None:
            matches.append(Match(best[1].id, candidate.chunk.chunk_id, best[0], effect))
        if effect is Effect.SUPPRESSED:
            continue
        (lower if effect is Effect.DEMOTED else kept).append(candidate)
    return Screened(tuple(kept + lower), tuple(matches))


def similarity(normalized_query: str, vector: Sequence[float] | None, embedder: str, suppression: Suppression) -> float:
    """How alike a query is to a suppression's question: 1.0 for the same text, else the vectors' cosine."""
    if normalized_query and normalized_query == normalize_question(suppression.query):
        return 1.0
    if vector is None or suppression.vector is None or suppression.embedder != embedder:
        return -1.0
    if len(vector) != len(suppression.vector):
        return -1.0
    return cosine(vector, suppression.vector)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else -1.0


_SPACE = re.compile(r"\s+")
_CLOSING = "?？!！.。…:：;；"


def normalize_question(text: str) -> str:
    """The question as compared for "the same text": NFKC, case-folded, one space, no closing punctuation."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold().rstrip(_CLOSING).strip()


def _same_chunk(suppression: Suppression, candidate: ScoredChunk) -> bool:
    chunk = candidate.chunk
    return suppression.chunk_id == chunk.chunk_id and suppression.content_hash in (None, chunk.content_hash)


def _effect(alike: float, thresholds: Thresholds) -> Effect | None:
    if alike >= thresholds.suppress:
        return Effect.SUPPRESSED
    if alike >= thresholds.demote:
        return Effect.DEMOTED
    return None
