"""What every loader shares: the ``LoadError`` value and the text helpers.

A loader never raises for bad input. Anything wrong with one file (or one JSONL line) becomes a
``LoadError`` whose ``source`` names the file (``path`` or ``path:LINE``) and whose ``message`` is
one plain line saying what is wrong and what to do about it; the walk goes on with the next file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.documents import Block, BlockKind

__all__ = ["LoadError", "decode_text", "one_line", "paragraph_blocks", "split_paragraphs"]


@dataclass(frozen=True)
class LoadError:
    """Why one file, or one line of a JSONL file, was not loaded. ``message`` is one line.

    ``source_path`` is the file or folder that failed, as ``retrieval.loaders.source_path`` records it: a sync
    keeps every document recorded under it.
    """

    source: str
    message: str
    source_path: str | None = None


def decode_text(data: bytes, source: str) -> str | LoadError:
    """The text of a text-format file: UTF-8 (a byte-order mark is fine), line ends made ``\\n``."""
    if b"\x00" in data:
        return LoadError(
            source,
            "binary file, not text (it contains NUL bytes): export it as UTF-8 text or PDF and ingest it again",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return LoadError(
            source,
            f"not UTF-8 text (invalid byte at offset {error.start}): save the file as UTF-8 and ingest it again",
        )
    return normalize_newlines(text)


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and ``\\r`` as ``\\n``: line ends are not content, and quotes are matched on ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs of plain text: separated by blank lines, trailing whitespace removed, none blank."""
    paragraphs = (piece.strip("\n").rstrip() for piece in _BLANK_LINES.split(text))
    return [paragraph for paragraph in paragraphs if paragraph.strip()]


def paragraph_blocks(text: str, page: int | None = None) -> list[Block]:
    """Plain text as paragraph blocks (no headings), each on ``page``."""
    return [Block(BlockKind.PARAGRAPH, paragraph, page=page) for paragraph in split_paragraphs(text)]


def one_line(message: object, limit: int = 200) -> str:
    """A library's error message as one short line, for a ``LoadError``."""
    line = " ".join(str(message).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
