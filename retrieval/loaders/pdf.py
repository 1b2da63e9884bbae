"""PDF (``.pdf``) read with pypdf, one page at a time, every block carrying its 1-based page.

A page's text (``page.extract_text()``) is split into paragraphs at blank lines. Many PDFs have no
blank lines at all; then lines are joined (with ``\\n``, as extracted) into one paragraph until a
line ends with sentence punctuation. There are no headings. Title: the metadata ``/Title``, else
the file name. A PDF that cannot be parsed, is encrypted, or has no extractable text (a scan
without a text layer) is a ``LoadError``.
"""

from __future__ import annotations

import io
import re
import struct
import zlib

from pypdf import PdfReader
from pypdf.errors import DependencyError, PyPdfError

from retrieval.documents import Block, BlockKind, Document
from retrieval.loaders.common import (
    LoadError,
    normalize_newlines,
    one_line,
    paragraph_blocks,
)

__all__ = ["parse_pdf"]

# pypdf documents that broken files "might cause other exceptions" besides its own: these are the
# ones its parsers raise on malformed objects, streams and fonts.
_BROKEN_PDF_ERRORS: tuple[type[BaseException], ...] = (
    PyPdfError,
    DependencyError,  # an encryption scheme that needs the optional cryptography package
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    AssertionError,
    RecursionError,
    zlib.error,
    struct.error,
)

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = (".", "!", "?", "。", "！", "？", ":", "：")


def parse_pdf(data: bytes, *, source: str, document_id: str, stem: str) -> Document | LoadError:
    """A PDF document, or why it cannot be read."""
    try:
        reader = PdfReader(io.BytesIO(data))
        # An "encrypted" PDF with an empty user password (common for copy protection) still opens.
        if reader.is_encrypted and not reader.decrypt(""):
            return LoadError(source, "the PDF is password-protected: save a copy without a password and ingest it")
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
        blocks: list[Block] = []
        for number, page in enumerate(reader.pages, start=1):
            blocks.extend(_page_blocks(page.extract_text(), number))
    except _BROKEN_PDF_ERRORS as error:
        reason = one_line(error) or type(error).__name__
        return LoadError(source, f"cannot read the PDF ({reason}): re-export it as PDF and ingest again")
    if not blocks:
        return LoadError(
            source, "the PDF has no extractable text (a scan?): run OCR on it or export it with a text layer"
        )
    return Document(
        document_id=document_id,
        title=title.strip() if isinstance(title, str) and title.strip() else stem,
        blocks=tuple(blocks),
        source=source,
    )


def _page_blocks(page_text: str, page: int) -> list[Block]:
    text = normalize_newlines(page_text)
    if _BLANK_LINE.search(text):
        return paragraph_blocks(text, page)
    blocks: list[Block] = []
    lines: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        lines.append(line.rstrip())
        if line.rstrip().endswith(_SENTENCE_END):
            blocks.append(Block(BlockKind.PARAGRAPH, "\n".join(lines), page=page))
            lines = []
    if lines:
        blocks.append(Block(BlockKind.PARAGRAPH, "\n".join(lines), page=page))
    return blocks
