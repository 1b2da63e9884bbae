"""Quote verification: is each drafted quote, character for character, in the chunk it cites?

Rules of this module (it does no I/O and trusts nothing in a draft):

- A quote and its chunk are compared after normalising only three things: Unicode form (NFKC),
  runs of whitespace (to one space), and quote-mark styles (“ ” „ « » ‘ ’ … to ASCII quotes). Nothing
  else — not case, not dashes, not digits beyond what NFKC does — so "30 days" never matches "90 days".
- A kept quote is reported as the chunk's own characters (``VerifiedQuote.start/end`` into
  ``chunk.text``), never as the draft's spelling of them: what users see is what the document says.
- Metadata (title, section, page, version, url, ids) comes from the cited chunk, never from the draft.
- A quote is rejected with a reason when its source label is unknown, it is empty, it is not in the
  cited chunk (``IN_OTHER_SOURCE`` when another offered chunk has it — it is not re-attributed), or
  it overlaps a sentence addressed to the assistant (``UNSAFE``).
- A claim survives when at least one of its quotes does; links in its text are removed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from bot.answer.safety import looks_like_injection, strip_links
from bot.answer.types import (
    Claim,
    Draft,
    RejectedQuote,
    Rejection,
    Source,
    Verification,
    VerifiedQuote,
)

# Quote-mark styles folded together: curly, low-9, primes, guillemets, CJK double primes, and the grave and
# acute accents typed for an apostrophe. The one table: the review desk highlights through ``locate`` too.
_QUOTE_MARKS = str.maketrans({
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"', "\u2033": '"',
    "\u301d": '"', "\u301e": '"', "\u301f": '"',
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u0060": "'", "\u00b4": "'",
})
_SENTENCE_END = re.compile(r"[.!?。！？\n]")


@dataclass(frozen=True, slots=True)
class Normalized:
    """A normalised text and, for each of its characters, the span of source characters it came from."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The source span behind ``text[start:end]`` (``end > start``)."""
        return self.starts[start], self.ends[end - 1]


def normalize(text: str) -> Normalized:
    """NFKC, whitespace runs -> one space (trimmed), curly and angle quote marks -> ASCII, with an offset map."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pending_space: tuple[int, int] | None = None
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):  # keep a base letter with its combining marks
            j += 1
        for ch in unicodedata.normalize("NFKC", text[i:j]).translate(_QUOTE_MARKS):
            if ch.isspace():
                if out and pending_space is None:
                    pending_space = (i, j)
                continue
            if pending_space is not None:
                out.append(" ")
                starts.append(pending_space[0])
                ends.append(pending_space[1])
                pending_space = None
            out.append(ch)
            starts.append(i)
            ends.append(j)
        i = j
    return Normalized("".join(out), tuple(starts), tuple(ends))


def locate(quote: str, text: str) -> tuple[int, int] | None:
    """Where ``quote`` occurs in ``text`` under the normalisation above, as a span of ``text``; else None."""
    needle = normalize(quote).text
    if not needle:
        return None
    haystack = normalize(text)
    at = haystack.text.find(needle)
    if at < 0:
        return None
    return haystack.source_span(at, at + len(needle))


def _enclosing_sentences(text: str, start: int, end: int) -> str:
    """The text from the sentence end before ``start`` to the one after ``end``: what the quote sits in."""
    before = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    after = _SENTENCE_END.search(text, end)
    return text[before : after.end() if after else len(text)]


def verify(draft: Draft, sources: Sequence[Source]) -> Verification:
    """Keep the quotes that are verbatim in the chunk they cite; reject the rest with a reason."""
    by_label = {source.label: source for source in sources}
    claims: list[Claim] = []
    rejected: list[RejectedQuote] = []
    for draft_claim in draft.claims:
        kept: list[VerifiedQuote] = []
        for quote in draft_claim.quotes:
            source = by_label.get(quote.source.strip())
            reason: Rejection | None = None
            span: tuple[int, int] | None = None
            if source is None:
                reason = Rejection.UNKNOWN_SOURCE
            elif not any(ch.isalnum() for ch in normalize(quote.text).text):
                reason = Rejection.EMPTY_QUOTE
            else:
                span = locate(quote.text, source.chunk.text)
                if span is None:
                    elsewhere = any(locate(quote.text, s.chunk.text) for s in sources if s is not source)
                    reason = Rejection.IN_OTHER_SOURCE if elsewhere else Rejection.NOT_IN_SOURCE
                elif looks_like_injection(_enclosing_sentences(source.chunk.text, *span)):
                    reason = Rejection.UNSAFE
            if reason is not None:
                rejected.append(RejectedQuote(draft_claim.text, quote.source, quote.text, reason, source))
            else:
                assert source is not None and span is not None
                if not any(k.source is source and (k.start, k.end) == span for k in kept):
                    kept.append(VerifiedQuote(source, *span))
        if kept:
            text = strip_links(draft_claim.text) or kept[0].text
            claims.append(Claim(text=text, quotes=tuple(kept)))
    return Verification(tuple(claims), tuple(rejected))
