"""The extractive composer: no model writes text. It picks the sentences of the top sources that answer
the question best and offers each as a claim whose quote is exactly that text.

Pure: question, sources and sentence scores in; a ``Draft`` out. A sentence is scored by its
similarity to the question plus a small bonus for the question's words it contains. The best one is
widened to keep a condition next to its rule — a lead-in ending in ":" and what follows it, a
following "unless …"/"однако …"/"ただし…", a neighbour that scores almost as well, or a fragment too
short to stand alone — up to ``max_quote_chars``. Up to ``max_claims`` more sentences follow when they score within ``margin``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.answer.lexical import content_terms, coverage
from bot.answer.safety import looks_like_injection
from bot.answer.types import Draft, DraftClaim, DraftQuote, Source
from retrieval.chunks import SentenceHit

_CONTINUES = re.compile(
    r"^(however|but|unless|except|otherwise|if not|only if|provided that|in that case|note:|"
    r"однако|но |если |кроме|за исключением|при этом|иначе|"
    r"ただし|但し|なお|ただ、|しかし|もし)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ExtractiveConfig:
    max_claims: int = 3
    max_quote_chars: int = 500
    margin: float = 0.03  # how far below the best score another sentence may be and still be quoted
    neighbour_margin: float = 0.06  # a sentence next to the quote this close to its score joins it
    lexical_weight: float = 0.1
    short_chars: int = 40  # a sentence shorter than this is widened with its neighbour


@dataclass(frozen=True, slots=True)
class ScoredSentence:
    source: Source
    start: int
    end: int
    similarity: float
    score: float

    @property
    def text(self) -> str:
        return self.source.chunk.text[self.start : self.end]


def score_sentences(question: str, language: str, sources: Sequence[Source], sentences: Sequence[SentenceHit],
                    config: ExtractiveConfig) -> list[ScoredSentence]:
    """Sentences of the sources, best first; sentences addressed to the assistant are left out.

    Equal scores (the same sentence in two documents, common in exported help centres) go by the sources' order,
    then by place in the chunk — never by the order the store returned them in, which varies between two indexes
    of the same documents and vectors: it reordered the five best sentences of 46 of 202 MTRAG turns between two
    harvests (docs/benchmarks.md, "The thread follow-ups' features model moves with the harvest")."""
    by_chunk = {s.chunk.chunk_id: s for s in sources}
    rank = {s.chunk.chunk_id: i for i, s in enumerate(sources)}
    terms = content_terms(question, language)
    scored = []
    for hit in sentences:
        source = by_chunk.get(hit.chunk_id)
        if source is None:
            continue
        text = source.chunk.text[hit.start : hit.end]
        if looks_like_injection(text):
            continue
        bonus = config.lexical_weight * coverage(terms, text, source.chunk.language)
        scored.append(ScoredSentence(source, hit.start, hit.end, hit.score, hit.score + bonus))
    scored.sort(key=lambda s: (-s.score, rank[s.source.chunk.chunk_id], s.start))
    return scored


def _widen(best: ScoredSentence, siblings: list[ScoredSentence], config: ExtractiveConfig) -> tuple[int, int]:
    """The span of ``best`` grown over neighbouring sentences that belong with it."""
    order = sorted(siblings, key=lambda s: s.start)
    index = next(i for i, s in enumerate(order) if s.start == best.start)
    first, last = index, index
    text = best.source.chunk.text

    def fits(a: int, b: int) -> bool:
        return order[b].end - order[a].start <= config.max_quote_chars

    def close(i: int) -> bool:
        return order[i].score >= best.score - config.neighbour_margin

    while first > 0 and fits(first - 1, last) and (
            order[first - 1].text.rstrip().endswith((":", "：")) or close(first - 1)):
        first -= 1
    # Japanese packs about three times as much into a character as English or Russian.
    short = config.short_chars // 3 if best.source.chunk.language == "ja" else config.short_chars
    while last + 1 < len(order) and fits(first, last + 1):
        current = text[order[first].start : order[last].end]
        following = order[last + 1].text
        if current.rstrip().endswith((":", "：")) or _CONTINUES.match(following) or len(current) < short \
                or close(last + 1):
            last += 1
            continue
        break
    return order[first].start, order[last].end


def compose_extractive(question: str, language: str, sources: Sequence[Source], sentences: Sequence[SentenceHit],
                       config: ExtractiveConfig = ExtractiveConfig()) -> Draft:
    scored = score_sentences(question, language, sources, sentences, config)
    if not scored:
        return Draft(claims=())
    best_score = scored[0].score
    return compose_chosen([s for s in scored if s.score >= best_score - config.margin], scored, config)


def compose_chosen(chosen_order: Sequence[ScoredSentence], scored: Sequence[ScoredSentence],
                   config: ExtractiveConfig = ExtractiveConfig()) -> Draft:
    """Claims quoting ``chosen_order``'s sentences in that order (up to ``max_claims``), each widened over the
    neighbours of its chunk (``scored``: all scored sentences) that belong with it."""
    by_chunk: dict[str, list[ScoredSentence]] = {}
    for s in scored:
        by_chunk.setdefault(s.source.chunk.chunk_id, []).append(s)
    chosen: list[tuple[Source, int, int]] = []
    for candidate in chosen_order:
        if len(chosen) >= config.max_claims:
            break
        if any(src is candidate.source and start <= candidate.start < end for src, start, end in chosen):
            continue  # already inside a quote
        start, end = _widen(candidate, by_chunk[candidate.source.chunk.chunk_id], config)
        if any(src is candidate.source and start < e and s < end for src, s, e in chosen):
            continue
        chosen.append((candidate.source, start, end))

    claims = []
    for source, start, end in chosen:
        quote = source.chunk.text[start:end]
        claims.append(DraftClaim(text=quote, quotes=(DraftQuote(source.label, quote),)))
    return Draft(claims=tuple(claims))
