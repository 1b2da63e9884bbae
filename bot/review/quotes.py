"""Where a quote sits in the text of its chunk, and the excerpt a reviewer reads around it.

Verification keeps a quote when it occurs in its chunk after normalising only the Unicode form (NFKC),
whitespace runs and quote-mark styles. To highlight the quote inside the chunk, this module asks the verifier's
own ``locate`` (one set of rules, so the desk can never highlight differently from what was verified), which
maps the match back to the chunk's own characters — what the document says — not the quote's spelling of them.

This is display code: it never decides whether a quote is valid (`CitationRecord.kept` says that). A quote it
cannot find (a rejected one, usually) gets no span, and the page says so. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.answer.quotes import locate

DEFAULT_CONTEXT_CHARS = 240
_SNAP_CHARS = 30  # how far an excerpt edge may move to land between words


@dataclass(frozen=True, slots=True)
class Span:
    """Characters [start, end) of the chunk text; `exact` when the quote occurs there without normalising."""

    start: int
    end: int
    exact: bool


@dataclass(frozen=True, slots=True)
class Excerpt:
    """The quote as it reads in the chunk, with context; `cut_*` when the chunk goes on beyond the excerpt."""

    before: str
    quote: str
    after: str
    cut_before: bool
    cut_after: bool
    exact: bool


def locate_quote(text: str, quote: str) -> Span | None:
    """The span of `text` that `quote` is, verbatim or after verification's normalisation; None if absent."""
    if not quote.strip():
        return None
    position = text.find(quote)
    if position >= 0:
        return Span(position, position + len(quote), exact=True)
    found = locate(quote, text)
    return Span(found[0], found[1], exact=False) if found else None


def excerpt(text: str, span: Span, context_chars: int = DEFAULT_CONTEXT_CHARS) -> Excerpt:
    """The quote with up to `context_chars` of the chunk on each side, cut between words where possible."""
    start = max(0, span.start - context_chars)
    end = min(len(text), span.end + context_chars)
    if start > 0:
        start = _snap_forward(text, start, limit=span.start)
    if end < len(text):
        end = _snap_backward(text, end, limit=span.end)
    return Excerpt(
        before=text[start : span.start], quote=text[span.start : span.end], after=text[span.end : end],
        cut_before=start > 0, cut_after=end < len(text), exact=span.exact,
    )


def _snap_forward(text: str, position: int, *, limit: int) -> int:
    """The start of the next word at or after `position` (not past `limit`), if one is near."""
    for index in range(position, min(limit, position + _SNAP_CHARS)):
        if text[index - 1].isspace() and not text[index].isspace():
            return index
    return position


def _snap_backward(text: str, position: int, *, limit: int) -> int:
    """The end of the word before `position` (not before `limit`), if one is near."""
    for index in range(position, max(limit, position - _SNAP_CHARS), -1):
        if text[index].isspace() and not text[index - 1].isspace():
            return index
    return position
