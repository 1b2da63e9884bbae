"""Files of named TOML tables (``[ROOT.NAME]`` …, nothing else): the one reader the sources file
(``retrieval.sources``) and the channels file (``bot.channels``) share. Pure: text in, tables out.

    named_tables(text, root, words, error) -> {NAME: table}   in file order; ``error(words…)`` when it is wrong
    line_of(text, *key, after=0) -> int                       where a key is set or its table opens

Each file keeps its own wording and error class (``TableWords``: format strings over ``{where}``, ``{error}``,
``{line}`` and ``{key}``), so a message is exactly what that file's readers were told before. What a table may
hold is the caller's to check.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TableWords:
    """How a file words its three faults of shape; each is formatted with ``where`` (the file's name) and:"""

    not_toml: str  # ``error``: tomllib's message
    foreign: str  # ``line``, ``key``: a top-level key or table that is not ROOT
    not_tables: str  # ``line``: ROOT set to a value instead of tables


def named_tables(text: str, root: str, where: str, words: TableWords,
                 error: Callable[[str], Exception]) -> dict[str, Any]:
    """The tables under ``[ROOT.*]`` in ``text``; raises ``error(message)`` (one line, naming ``where``)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as failure:
        raise error(words.not_toml.format(where=where, error=failure)) from None
    foreign = sorted(set(data) - {root})
    if foreign:
        raise error(words.foreign.format(where=where, line=line_of(text, foreign[0]), key=foreign[0]))
    tables = data.get(root, {})
    if not isinstance(tables, dict):
        raise error(words.not_tables.format(where=where, line=line_of(text, root)))
    return tables


def line_of(text: str, *key: str, after: int = 0) -> int:
    """The 1-based line after line ``after`` where the dotted ``key`` (its parts bare or quoted) is set, or where
    its table (or a table under it) opens; ``after`` (at least 1) when there is none."""
    parts = [rf"""(?:{re.escape(part)}|"{re.escape(part)}"|'{re.escape(part)}')""" for part in key]
    dotted = r"[ \t]*\.[ \t]*".join(parts)
    pattern = re.compile(rf"^[ \t]*(?:\[{{1,2}}[ \t]*{dotted}[ \t]*[\].]|{dotted}[ \t]*[=.])")
    for number, line in enumerate(text.splitlines(), start=1):
        if number > after and pattern.match(line):
            return number
    return max(after, 1)
