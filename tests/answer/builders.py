"""Small builders for answer tests: chunks and sources without a store."""

from __future__ import annotations

import uuid

from bot.answer.types import Source
from retrieval.chunks import Chunk


def chunk(text: str, *, document_id: str = "doc", title: str = "Doc", section: str | None = "Section",
          version: str | None = "1", page: int | None = None, url: str | None = "https://docs.example.com/doc",
          language: str = "en") -> Chunk:
    return Chunk(chunk_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{document_id}/{text}")), document_id=document_id,
                 version=version, content_hash="hash", ordinal=0, title=title, section=section, page=page, url=url,
                 updated_at=None, visibility=None, language=language, text=text)


def source(label: str, text: str, **kwargs: object) -> Source:
    return Source(label=label, chunk=chunk(text, **kwargs), search_rank=int(label[1:]), search_score=1.0)  # type: ignore[arg-type]
