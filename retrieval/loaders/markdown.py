"""Markdown (``.md``, ``.markdown``): optional YAML front matter, then headings and blocks.

Blocks keep their raw source text (list markers, ``**``, table pipes and all), taken from the
parser's line ranges, so a quote is verbatim with the file a person edits. Headings lose only
their ``#`` marks (or setext underline). A whole list, table, code fence or block quote is one
paragraph block. Thematic breaks and HTML comments are not content and are dropped.

Front matter is the YAML between a first line ``---`` and the next ``---`` (or ``...``) line.
Known keys: ``document_id, title, url, version, updated_at, visibility`` (a list of channel ids
or one id), ``language, section``; any other key goes to ``metadata`` as a string.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml
from markdown_it import MarkdownIt

from retrieval.documents import Block, BlockKind, Document
from retrieval.loaders.common import LoadError, one_line

__all__ = ["parse_markdown"]


def parse_markdown(text: str, *, source: str, document_id: str, stem: str) -> Document | LoadError:
    """A Markdown document. Title: front matter ``title``, else the first ``#`` heading, else ``stem``."""
    split = _split_front_matter(text, source)
    if isinstance(split, LoadError):
        return split
    front, body = split
    fields = _front_matter_fields(front, source)
    if isinstance(fields, LoadError):
        return fields
    blocks = _blocks(body)
    first_h1 = next((b.text for b in blocks if b.kind is BlockKind.HEADING and b.level == 1 and b.text), None)
    known = fields.strings
    return Document(
        document_id=known.get("document_id", document_id),
        title=known.get("title") or first_h1 or stem,
        blocks=tuple(blocks),
        source=source,
        url=known.get("url"),
        section=known.get("section"),
        version=known.get("version"),
        updated_at=known.get("updated_at"),
        visibility=fields.visibility,
        language=known.get("language"),
        metadata=fields.metadata,
    )


# --- front matter ------------------------------------------------------------------------------


def _split_front_matter(text: str, source: str) -> tuple[Mapping[str, object], str] | LoadError:
    """The front matter as a mapping (empty when there is none) and the Markdown after it."""
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return {}, text
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if closing is None:
        return LoadError(
            source,
            "front matter opened with '---' on line 1 is never closed: add a '---' line after it or remove it",
        )
    try:
        front = yaml.safe_load("\n".join(lines[1:closing]))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        # YAML counts lines from 0 within the front matter, which starts on line 2 of the file.
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(error, "problem", None) or error
        return LoadError(
            source, f"front matter is not valid YAML ({one_line(problem)}{where}): fix it and ingest again"
        )
    except RecursionError:  # the YAML parser recurses per nesting level
        return LoadError(source, "front matter is nested too deeply to read: flatten it and ingest again")
    if front is None:
        front = {}
    if not isinstance(front, dict):
        return LoadError(
            source, "front matter must be a mapping of 'key: value' lines: fix it and ingest again"
        )
    return front, "\n".join(lines[closing + 1 :])


@dataclass(frozen=True)
class _FrontMatter:
    """The front matter, checked: known keys as strings, visibility, and the rest as metadata."""

    strings: dict[str, str] = field(default_factory=dict)  # only keys that have a non-blank value
    visibility: tuple[str, ...] | None = None
    metadata: dict[str, str] = field(default_factory=dict)


_STRING_KEYS = frozenset({"document_id", "title", "url", "version", "updated_at", "language", "section"})


class _WrongType(ValueError):
    """A front matter value of the wrong shape; the message says what was expected."""


def _front_matter_fields(front: Mapping[str, object], source: str) -> _FrontMatter | LoadError:
    strings: dict[str, str] = {}
    visibility: tuple[str, ...] | None = None
    metadata: dict[str, str] = {}
    for key, value in front.items():
        name = str(key)
        try:
            if name in _STRING_KEYS:
                text = _scalar(value)
                if text is not None and text.strip():
                    strings[name] = text.strip()
            elif name == "visibility":
                visibility = _visibility(value)
            else:
                metadata[name] = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
        except _WrongType as error:
            return LoadError(source, f"front matter '{name}' must be {error}: fix it and ingest again")
    return _FrontMatter(strings, visibility, metadata)


def _scalar(value: object) -> str | None:
    """A YAML scalar as a string (dates in ISO form), or ``None`` for null."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dt.date):  # YAML reads 2024-05-01 as a date (datetime is a subclass)
        return value.isoformat()
    raise _WrongType("a single value (text, number or date)")


def _visibility(value: object) -> tuple[str, ...] | None:
    """Channel ids as a tuple, or ``None`` (everyone) for null."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        return (value.strip(),)
    if isinstance(value, list) and all(isinstance(item, str) and item.strip() for item in value):
        return tuple(item.strip() for item in value)
    raise _WrongType("a channel id or a list of channel ids")


# --- body --------------------------------------------------------------------------------------


@functools.cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _blocks(body: str) -> list[Block]:
    """Top-level Markdown blocks, each as its raw source lines (headings without their marks)."""
    lines = body.split("\n")
    tokens = _parser().parse(body)
    blocks: list[Block] = []
    for index, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        if token.type == "heading_open":
            # The inline token after heading_open holds the heading's own source text.
            blocks.append(Block(BlockKind.HEADING, tokens[index + 1].content.strip(), level=int(token.tag[1:])))
            continue
        if token.type == "hr" or (token.type == "html_block" and token.content.lstrip().startswith("<!--")):
            continue
        start, end = token.map
        raw = "\n".join(lines[start:end]).strip("\n").rstrip()
        if raw.strip():
            blocks.append(Block(BlockKind.PARAGRAPH, raw))
    return blocks
