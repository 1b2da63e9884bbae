"""Cut a ``Document`` into ``Chunk`` values that follow its headings and paragraphs.

Rules of this module:

- Every chunk's text is a slice of ``doc.text`` (blocks joined by blank lines), so it is verbatim
  by construction: paragraphs merged into one chunk keep the blank line that joins them there.
- A heading ends the chunk before it and is not part of any chunk's text; the heading path,
  prefixed by ``doc.section`` when the source gave one, is each chunk's ``section``
  (``"Billing > Refunds"``), or ``None`` when there is neither.
- Short consecutive paragraphs under the same heading are merged up to ``max_chars``.
- A paragraph longer than ``max_chars`` is cut only between sentences (``split_sentences``). A single
  sentence longer than ``hard_max_chars`` is the one thing cut elsewhere: at whitespace, into pieces
  of at most ``max_chars`` (or at exactly ``max_chars`` when there is no whitespace, as in Japanese).
- A paragraph (or sentence) ending with ':' stays in the chunk of what follows it, while the two fit
  in ``hard_max_chars``: a condition is kept next to its rule.
- A piece shorter than ``min_chars`` is merged with its neighbour in the same section (the previous
  chunk first) when the result fits in ``hard_max_chars``.
- With ``split_at_page_breaks`` (the default), a new page also starts a new chunk, so a chunk's
  ``page`` is the page every word of it is on; otherwise it is the page of the chunk's first block.
- One document has one language: ``doc.language``, or what ``detect_language`` says of its whole text.
- ``chunk_id`` is ``make_chunk_id(document_id, content_hash, ordinal)``; ordinals run 0..n-1.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from retrieval.chunks import Chunk, make_chunk_id
from retrieval.documents import BlockKind, Document
from retrieval.language import detect_language
from retrieval.sentences import split_sentences

__all__ = ["ChunkingConfig", "chunk_document"]


@dataclass(frozen=True)
class ChunkingConfig:
    """Chunk sizes, in characters of chunk text. ``min_chars <= max_chars <= hard_max_chars``."""

    max_chars: int = 1200
    min_chars: int = 300
    hard_max_chars: int = 4000
    split_at_page_breaks: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.min_chars <= self.max_chars <= self.hard_max_chars or self.max_chars < 1:
            raise ValueError(
                "chunk sizes must satisfy 0 <= min_chars <= max_chars <= hard_max_chars and max_chars >= 1, "
                f"got min_chars={self.min_chars}, max_chars={self.max_chars}, "
                f"hard_max_chars={self.hard_max_chars}"
            )


def chunk_document(doc: Document, config: ChunkingConfig) -> list[Chunk]:
    """The chunks of ``doc`` in reading order (an empty list when it has no paragraph text)."""
    text = doc.text
    content_hash = doc.content_hash()
    language = doc.language or detect_language(text)
    pieces: list[tuple[_Span, str | None, str | None]] = []
    for run in _runs(doc, text, config):
        atoms = [atom for paragraph in run.paragraphs for atom in _atoms(text, paragraph, language, config)]
        pieces.extend((span, run.section, run.anchor) for span in _merge_small(_pack(text, atoms, config), config))
    return [
        Chunk(
            chunk_id=make_chunk_id(doc.document_id, content_hash, ordinal),
            document_id=doc.document_id,
            version=doc.version,
            content_hash=content_hash,
            ordinal=ordinal,
            title=doc.title,
            section=section,
            page=span.page,
            url=f"{doc.url}#{anchor}" if doc.url and anchor else doc.url,
            updated_at=doc.updated_at,
            visibility=doc.visibility,
            language=language,
            text=text[span.start : span.end],
        )
        for ordinal, (span, section, anchor) in enumerate(pieces)
    ]


@dataclass(frozen=True, slots=True)
class _Span:
    """A stretch ``doc.text[start:end]``, and the page it starts on."""

    start: int
    end: int
    page: int | None

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class _Run:
    """Consecutive paragraphs under one heading path (and, when split by page, on one page)."""

    section: str | None
    paragraphs: tuple[_Span, ...]
    anchor: str | None = None  # the innermost heading's fragment on the web page, when the source has one


def _runs(doc: Document, text: str, config: ChunkingConfig) -> Iterator[_Run]:
    """The document's paragraphs grouped by heading path, with their offsets in ``text`` (``doc.text``)."""
    headings: list[tuple[int, str]] = []  # the open headings: (level, text), outermost first
    section = _section_path(doc.section, headings, doc.title)
    anchor: str | None = None
    paragraphs: list[_Span] = []
    offset = 0
    for block in doc.blocks:
        start, end = offset, offset + len(block.text)
        offset = end + 2  # Document.text joins blocks with "\n\n"
        if block.kind is BlockKind.HEADING:
            title = block.text.strip()
            if not title:
                continue
            if paragraphs:
                yield _Run(section, tuple(paragraphs), anchor)
                paragraphs = []
            while headings and headings[-1][0] >= block.level:
                headings.pop()
            headings.append((block.level, title))
            section = _section_path(doc.section, headings, doc.title)
            anchor = block.anchor
            continue
        span = _strip_span(text, start, end, block.page if block.page is not None else doc.page)
        if span is None:
            continue
        if config.split_at_page_breaks and paragraphs and paragraphs[-1].page != span.page:
            yield _Run(section, tuple(paragraphs), anchor)
            paragraphs = []
        paragraphs.append(span)
    if paragraphs:
        yield _Run(section, tuple(paragraphs), anchor)


def _section_path(prefix: str | None, headings: list[tuple[int, str]], doc_title: str) -> str | None:
    # A heading that only repeats the document's title (the usual H1) adds nothing to a citation.
    named = [title for _, title in headings if title != doc_title.strip()]
    parts = ([prefix.strip()] if prefix and prefix.strip() else []) + named
    return " > ".join(parts) if parts else None


def _strip_span(text: str, start: int, end: int, page: int | None) -> _Span | None:
    """``text[start:end]`` without surrounding whitespace, or None when it is all whitespace."""
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return None
    lead = len(piece) - len(piece.lstrip())
    return _Span(start + lead, start + lead + len(stripped), page)


def _atoms(text: str, paragraph: _Span, language: str, config: ChunkingConfig) -> list[_Span]:
    """The pieces a paragraph may be cut into: itself when short enough, else its sentences."""
    if paragraph.size <= config.max_chars:
        return [paragraph]
    atoms: list[_Span] = []
    for sentence in split_sentences(text[paragraph.start : paragraph.end], language):
        span = _Span(paragraph.start + sentence.start, paragraph.start + sentence.end, paragraph.page)
        if span.size > config.hard_max_chars:
            atoms.extend(_cut_at_whitespace(text, span, config.max_chars))
        else:
            atoms.append(span)
    return atoms


_WHITESPACE = re.compile(r"\s")


def _cut_at_whitespace(text: str, span: _Span, limit: int) -> list[_Span]:
    """Cut an over-long sentence into pieces of at most ``limit`` characters, at whitespace if any."""
    pieces: list[_Span] = []
    start = span.start
    while span.end - start > limit:
        window = text[start : start + limit + 1]
        spaces = [match.start() for match in _WHITESPACE.finditer(window)]
        cut = spaces[-1] if spaces and spaces[-1] > 0 else limit
        piece = _strip_span(text, start, start + cut, span.page)
        if piece is not None:
            pieces.append(piece)
        start += cut
        while start < span.end and text[start].isspace():
            start += 1
    rest = _strip_span(text, start, span.end, span.page)
    if rest is not None:
        pieces.append(rest)
    return pieces


_INTRODUCES_NEXT = ":："  # ASCII and full-width colon


def _pack(text: str, atoms: list[_Span], config: ChunkingConfig) -> list[_Span]:
    """Greedily join consecutive atoms into spans of at most ``max_chars`` (keeping ':' glue)."""
    packed: list[_Span] = []
    current: _Span | None = None
    for atom in atoms:
        if current is not None:
            size = atom.end - current.start
            glued = text[current.end - 1] in _INTRODUCES_NEXT
            if size <= config.max_chars or (glued and size <= config.hard_max_chars):
                current = _Span(current.start, atom.end, current.page)
                continue
            packed.append(current)
        current = atom
    if current is not None:
        packed.append(current)
    return packed


def _merge_small(spans: list[_Span], config: ChunkingConfig) -> list[_Span]:
    """Merge each span shorter than ``min_chars`` with its neighbour, when the two fit ``hard_max_chars``."""
    merged: list[_Span] = []
    for span in spans:
        if merged:
            previous = merged[-1]
            small = span.size < config.min_chars or previous.size < config.min_chars
            if small and span.end - previous.start <= config.hard_max_chars:
                merged[-1] = _Span(previous.start, span.end, previous.page)
                continue
        merged.append(span)
    return merged
