"""What a loader hands to the chunker: a document as metadata plus an ordered list of blocks.

Loaders (``retrieval.loaders``) turn files into ``Document`` values; the chunker
(``retrieval.chunking``) turns those into ``Chunk`` values. Nothing here does I/O.

A block is a heading or a paragraph, in reading order, with the page it sits on
(PDF only). Headings carry their level so the chunker can keep the heading path
(``"Billing > Refunds"``) as each chunk's ``section``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum


class BlockKind(str, Enum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"


@dataclass(frozen=True, slots=True)
class Block:
    kind: BlockKind
    text: str
    level: int = 0  # heading level 1..6; 0 for paragraphs
    page: int | None = None  # 1-based page number (PDF), else None
    # A heading's fragment on the document's web page (``refunds`` for ``url#refunds``), where the source has
    # one: chunks under it link there. Derived from the heading, so not part of the content hash.
    anchor: str | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """One source document, already decoded and split into blocks.

    ``visibility`` is a tuple of Slack channel ids, or ``None`` for everyone.
    ``source`` names where it came from (a path, or ``path:line`` for JSONL), for messages.
    ``source_path`` is the file it was loaded from, as ``retrieval.loaders.source_path`` records it (what a sync
    matches its paths against); ``None`` for a document built in memory. ``source_name`` is the declared source
    that synced it (``retrieval.sources``), recorded in the registry.
    """

    document_id: str
    title: str
    blocks: tuple[Block, ...]
    source: str
    url: str | None = None
    section: str | None = None  # a section given by the source itself (JSONL), prefixed to heading paths
    page: int | None = None  # a page given by the source itself (JSONL)
    version: str | None = None
    updated_at: str | None = None
    visibility: tuple[str, ...] | None = None
    language: str | None = None  # detected by the chunker when None
    metadata: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    source_path: str | None = None
    source_name: str | None = None  # the declared source (sources.toml) it was synced from

    @property
    def text(self) -> str:
        """The document's text, blocks joined by blank lines (what the content hash covers)."""
        return "\n\n".join(block.text for block in self.blocks)

    def content_hash(self) -> str:
        """A hash of everything that would change what is indexed: text, metadata, visibility."""
        payload = {
            "document_id": self.document_id,
            "title": self.title,
            "url": self.url,
            "section": self.section,
            "page": self.page,
            "version": self.version,
            "updated_at": self.updated_at,
            "visibility": sorted(self.visibility) if self.visibility is not None else None,
            "blocks": [[b.kind.value, b.level, b.page, b.text] for b in self.blocks],
        }
        raw = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
        return hashlib.sha256(raw).hexdigest()
