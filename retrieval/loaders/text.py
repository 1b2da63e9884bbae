"""Plain text (``.txt``): paragraphs separated by blank lines; no headings; title from the file name."""

from __future__ import annotations

from retrieval.documents import Document
from retrieval.loaders.common import paragraph_blocks

__all__ = ["parse_text"]


def parse_text(text: str, *, source: str, document_id: str, stem: str) -> Document:
    """A plain-text document; ``stem`` (the file name without extension) is its title."""
    return Document(
        document_id=document_id,
        title=stem,
        blocks=tuple(paragraph_blocks(text)),
        source=source,
    )
