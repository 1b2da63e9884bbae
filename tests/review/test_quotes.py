"""Where a quote is highlighted inside its chunk: exactly the chunk's own characters, with readable context."""

from __future__ import annotations

import pytest

from bot.answer.quotes import verify
from bot.answer.types import Draft, DraftClaim, DraftQuote
from bot.review.quotes import Excerpt, Span, excerpt, locate_quote
from tests.answer.quote_cases import KEPT, SOURCES

CHUNK = "Annual plans can be refunded in full within 30 days of purchase.\nAfter 30 days,  a plan is pro rata."


@pytest.mark.parametrize(
    ("text", "quote", "expected"),
    [
        pytest.param(CHUNK, "within 30 days", Span(37, 51, exact=True), id="verbatim"),
        pytest.param(CHUNK, "purchase. After 30 days, a plan", Span(55, 87, exact=False), id="whitespace-runs"),
        pytest.param("He said “refund it” twice.", 'said "refund it"', Span(3, 19, exact=False), id="curly-quotes"),
        pytest.param("Plan costs ３０ USD", "30 USD", Span(11, 17, exact=False), id="full-width-digits-nfkc"),
        pytest.param("cafe\u0301 opens", "café opens", Span(0, 11, exact=False), id="combining-accent"),
        pytest.param("a\u00a0b c", "a b", Span(0, 3, exact=False), id="no-break-space"),
        pytest.param(CHUNK, "within 90 days", None, id="changed-number-is-not-found"),
        pytest.param(CHUNK, "   ", None, id="blank-quote"),
        pytest.param(CHUNK, "Within 30 days", None, id="case-is-not-folded"),
    ],
)
def test_quote_is_located_only_under_verifications_normalisation(text: str, quote: str, expected: Span | None) -> None:
    assert locate_quote(text, quote) == expected


@pytest.mark.parametrize(("label", "quote", "shown"), KEPT)
def test_the_desk_highlights_exactly_the_span_the_verifier_kept(label: str, quote: str, shown: str) -> None:
    """One set of quote rules: for every quote the verifier keeps, the desk highlights those same characters."""
    kept = verify(Draft((DraftClaim("a claim", (DraftQuote(label, quote),)),)), SOURCES).claims[0].quotes[0]
    span = locate_quote(kept.source.chunk.text, quote)
    assert span is not None and (span.start, span.end) == (kept.start, kept.end)
    assert kept.source.chunk.text[span.start : span.end] == shown


def test_highlight_covers_the_chunks_characters_not_the_quotes_spelling() -> None:
    text = "Le client a « 14 jours » pour changer d’avis."
    span = locate_quote(text, "a \" 14 jours \" pour changer d'avis")
    assert span is not None and text[span.start : span.end] == "a « 14 jours » pour changer d’avis"


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (0, Excerpt("", "within 30 days", "", cut_before=True, cut_after=True, exact=True)),
        (12, Excerpt("in full ", "within 30 days", " of", cut_before=True, cut_after=True, exact=True)),
        (500, Excerpt(CHUNK[:37], "within 30 days", CHUNK[51:], cut_before=False, cut_after=False, exact=True)),
    ],
)
def test_excerpt_cuts_between_words_and_says_where_the_chunk_goes_on(context: int, expected: Excerpt) -> None:
    span = locate_quote(CHUNK, "within 30 days")
    assert span is not None
    assert excerpt(CHUNK, span, context) == expected
