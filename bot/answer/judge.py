"""The judge's part of the answer: which sentences it reads, and what its probabilities decide.

    candidates(scored, n)        the n best sentences by the extractive score (the judge reads only these)
    pairs(question, candidates, scored)   what the judge reads for each: the sentence, its title, the sentence before
    quote_order(judged, margin)  the sentences to quote, most probable first (those near the best one)
    decide(judged, threshold)    the sentence to quote, or None: "no support found"

Pure: the probabilities come in from the model (``retrieval.judging``); nothing here runs it. The threshold is
the shipped judge's (``judge.json``), chosen by ``bench.answers`` on the FIT halves of the shared data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.answer.extractive import ScoredSentence
from retrieval.encoder.judge import Pair


@dataclass(frozen=True, slots=True)
class Judged:
    """A candidate sentence and the judge's probability that it answers the question."""

    sentence: ScoredSentence
    probability: float

    def to_json(self) -> dict[str, object]:
        s = self.sentence
        return {"chunk_id": s.source.chunk.chunk_id, "label": s.source.label, "start": s.start, "end": s.end,
                "text": s.text[:300], "probability": round(self.probability, 4)}


def candidates(scored: Sequence[ScoredSentence], limit: int) -> list[ScoredSentence]:
    """The ``limit`` best sentences (``scored`` is best first), each span once."""
    seen: set[tuple[str, int]] = set()
    out = []
    for s in scored:
        key = (s.source.chunk.chunk_id, s.start)
        if key in seen:
            continue
        seen.add(key)
        out.append(s)
        if len(out) == limit:
            break
    return out


def _previous(sentence: ScoredSentence, scored: Sequence[ScoredSentence]) -> str:
    """The sentence before ``sentence`` in its chunk (among the scored ones), or the text before it."""
    before = [s for s in scored if s.source is sentence.source and s.end <= sentence.start]
    if before:
        return max(before, key=lambda s: s.end).text
    return sentence.source.chunk.text[max(0, sentence.start - 200):sentence.start].strip()


def title_of(sentence: ScoredSentence) -> str:
    chunk = sentence.source.chunk
    return f"{chunk.title} · {chunk.section}" if chunk.section and chunk.section != chunk.title else chunk.title


def pairs(question: str, chosen: Sequence[ScoredSentence], scored: Sequence[ScoredSentence]) -> list[Pair]:
    return [Pair(question, s.text, title_of(s), _previous(s, scored)) for s in chosen]


def decide(judged: Sequence[Judged], threshold: float) -> Judged | None:
    """The most probable candidate when it reaches ``threshold``; None (no support) otherwise."""
    best = max(judged, key=lambda j: j.probability, default=None)
    return best if best is not None and best.probability >= threshold else None


def quote_order(judged: Sequence[Judged], margin: float) -> list[ScoredSentence]:
    """The candidates within ``margin`` of the most probable one, most probable first (``judged`` in any order)."""
    ranked = sorted(judged, key=lambda j: j.probability, reverse=True)
    return [j.sentence for j in ranked if j.probability >= ranked[0].probability - margin] if ranked else []
