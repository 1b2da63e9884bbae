"""JSON Lines (``.jsonl``): one document per line, each line checked on its own.

Each non-blank line is a JSON object with the required fields ``document_id`` (non-empty string),
``title`` (string) and ``text`` (non-empty string), and the optional fields ``url, section,
version, updated_at, language`` (string or null), ``page`` (positive integer or null) and
``visibility`` (list of channel-id strings; null or absent means everyone). A line that breaks
these rules is one ``LoadError`` with ``source="path:LINE"`` naming the field and the type it
should have; the other lines still load. Other fields go to ``metadata`` as strings. ``text`` is
split into paragraph blocks at blank lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from retrieval.documents import Document
from retrieval.loaders.common import LoadError, normalize_newlines, paragraph_blocks

__all__ = ["parse_jsonl"]

_OPTIONAL_STRINGS = ("url", "section", "version", "updated_at", "language")
_KNOWN = frozenset({"document_id", "title", "text", "page", "visibility", *_OPTIONAL_STRINGS})


def parse_jsonl(text: str, *, source: str) -> Iterator[Document | LoadError]:
    """Each non-blank line of ``text`` as a document, or as the error that line has."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            yield LoadError(where, f"not valid JSON ({error.msg} at column {error.colno}): fix or remove this line")
            continue
        except RecursionError:  # the decoder recurses per nesting level; a line can nest deeper than that
            yield LoadError(where, "JSON nested too deeply to read: flatten this line")
            continue
        if not isinstance(value, dict):
            got = _json_type(value)
            yield LoadError(where, f"expected a JSON object with document_id, title and text, got {got}: fix this line")
            continue
        try:
            yield _document(value, where)
        except _FieldError as error:
            yield LoadError(where, str(error))


class _FieldError(ValueError):
    """One field of one line is missing or has the wrong type; the message is the user's."""

    def __init__(self, name: str, expected: str, value: object, *, missing: bool = False) -> None:
        if missing:
            super().__init__(f"missing field '{name}' ({expected}): add it to this line")
        else:
            super().__init__(f"field '{name}' must be {expected}, got {_json_type(value)}: fix this line")


def _document(obj: dict[str, object], where: str) -> Document:
    document_id = _required_string(obj, "document_id")
    title = obj.get("title")
    if "title" not in obj:
        raise _FieldError("title", "a string", None, missing=True)
    if not isinstance(title, str):
        raise _FieldError("title", "a string", title)
    text = _required_string(obj, "text")
    optional = {name: _optional_string(obj, name) for name in _OPTIONAL_STRINGS}
    return Document(
        document_id=document_id,
        title=title.strip() or document_id,  # a citation needs something to show
        blocks=tuple(paragraph_blocks(normalize_newlines(text))),
        source=where,
        url=optional["url"],
        section=optional["section"],
        page=_page(obj),
        version=optional["version"],
        updated_at=optional["updated_at"],
        visibility=_visibility(obj),
        language=optional["language"],
        metadata={
            key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            for key, value in obj.items()
            if key not in _KNOWN
        },
    )


def _required_string(obj: dict[str, object], name: str) -> str:
    expected = "a non-empty string"
    if name not in obj:
        raise _FieldError(name, expected, None, missing=True)
    value = obj[name]
    if not isinstance(value, str) or not value.strip():
        raise _FieldError(name, expected, value)
    return value.strip() if name == "document_id" else value


def _optional_string(obj: dict[str, object], name: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _FieldError(name, "a string or null", value)
    return value.strip() or None


def _page(obj: dict[str, object]) -> int | None:
    value = obj.get("page")
    if value is None:
        return None
    # bool is an int in Python, but "page": true is a mistake, not page 1.
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _FieldError("page", "a positive integer or null", value)
    return value


def _visibility(obj: dict[str, object]) -> tuple[str, ...] | None:
    value = obj.get("visibility")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise _FieldError("visibility", "a list of channel-id strings or null", value)
    return tuple(item.strip() for item in value)


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
