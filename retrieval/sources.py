"""The sources file (``SOURCES_FILE``, default ``VERBATIM_HOME/sources.toml``): every place documents live, declared
once. Pure: text in, typed values out.

    parse_sources(text, path) -> tuple[SourceSpec, ...]     SourcesError: one line naming the file and line
    visibility_for(audience, rule) -> (visibility, mapped)   who may see a document, never wider than the source

One table per source::

    [sources.docs]
    type = "git"                      # folder | git | zendesk | confluence | gdrive | notion
    url = "file:///srv/docs.git"      # the connector's own settings (see each connector)
    token_env = "DOCS_TOKEN"          # the environment variable holding its secret (never the secret itself)
    interval_minutes = 30             # how often `verbatim serve` syncs it (default 60)

    [sources.docs.visibility]         # the source's audiences -> Slack channels, or "public"
    everyone = "public"
    "space:ENG" = ["C0ENG", "C0LEADS"]

Visibility: a connector says who the source lets see each document, as a set of audience keys (``everyone`` for
a public page, ``segment:123`` for a Help Center user segment, ``space:ENG`` …). The rule maps each key to
channels or to ``"public"``; a document is public when one of its keys maps to public, else visible in the union
of its keys' channels. A document none of whose keys the rule maps is restricted to nobody (``NOBODY``) and
counted as unmapped, so it is never shown more widely than the source shows it. With no visibility table the
rule is ``everyone = "public"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval.errors import RetrievalError
from retrieval.toml_tables import TableWords, line_of, named_tables

SOURCE_TYPES = ("folder", "git", "zendesk", "confluence", "gdrive", "notion")
PUBLIC = "public"
EVERYONE = "everyone"
# Stored as the only channel of a document nobody may see: no Slack channel id has parentheses.
NOBODY = "(nobody)"
DEFAULT_INTERVAL_MINUTES = 60.0

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_COMMON_KEYS = {"type", "token_env", "interval_minutes", "visibility"}


class SourcesError(RetrievalError):
    """The sources file, or one source in it, is wrong: the message names the file, the line and the fix."""


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One declared source. ``settings`` holds its connector's own keys, checked by that connector."""

    name: str
    type: str
    settings: Mapping[str, Any]
    token_env: str | None = None
    interval_minutes: float = DEFAULT_INTERVAL_MINUTES
    visibility: Mapping[str, tuple[str, ...] | None] = field(default_factory=lambda: {EVERYONE: None})
    where: str = ""  # "FILE:LINE" of its table, for messages

    def problem(self, message: str) -> SourcesError:
        """An error about this source's settings, one line naming where it is declared."""
        return SourcesError(f"{self.where}: source '{self.name}': {message}")

    def only(self, *allowed: str) -> None:
        """Refuse a key its connector does not know (a typo would otherwise be silently ignored)."""
        unknown = sorted(set(self.settings) - set(allowed))
        if unknown:
            raise self.problem(f"unknown key '{unknown[0]}' for type {self.type} (known: {', '.join(allowed)})")

    def text(self, key: str, default: str | None = None) -> str:
        value = self.settings.get(key, default)
        if not isinstance(value, str) or not value.strip():
            raise self.problem(f"{key} must be a non-empty string" + ("" if key in self.settings else f": set {key}"))
        return value.strip()

    def optional_text(self, key: str) -> str | None:
        return self.text(key) if key in self.settings else None

    def texts(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.settings.get(key, list(default))
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.problem(f"{key} must be a list of non-empty strings")
        return tuple(v.strip() for v in value)


_WORDS = TableWords(
    not_toml="{where}: not valid TOML ({error}): fix the file",
    foreign="{where}:{line}: unknown table or key '{key}': the file holds only [sources.NAME] tables",
    not_tables="{where}: 'sources' must be a table of [sources.NAME] tables",
)


def parse_sources(text: str, path: Path | str) -> tuple[SourceSpec, ...]:
    """The sources declared in ``text`` (the contents of ``path``), in file order."""
    tables = named_tables(text, "sources", str(path), _WORDS, SourcesError)
    return tuple(_spec(name, table, text, path) for name, table in tables.items())


def _spec(name: str, table: object, text: str, path: Path | str) -> SourceSpec:
    where = f"{path}:{line_of(text, 'sources', name)}"

    def bad(message: str) -> SourcesError:
        return SourcesError(f"{where}: source '{name}': {message}")

    if not _NAME.match(name):
        raise bad("a name is letters, digits, '-' and '_' (at most 64): rename the table")
    if not isinstance(table, dict):
        raise bad("must be a table ([sources.NAME])")
    kind = table.get("type")
    if kind not in SOURCE_TYPES:
        raise bad(f"type {kind!r} is not one of {', '.join(SOURCE_TYPES)}: set `type`")
    token_env = table.get("token_env")
    if token_env is not None and not (isinstance(token_env, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token_env)):
        raise bad("token_env must name an environment variable (the secret itself never goes in this file)")
    interval = table.get("interval_minutes", DEFAULT_INTERVAL_MINUTES)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
        raise bad("interval_minutes must be a number above 0")
    rule = _visibility_rule(table.get("visibility", {EVERYONE: PUBLIC}), bad)
    settings = {k: v for k, v in table.items() if k not in _COMMON_KEYS}
    return SourceSpec(name, kind, settings, token_env, float(interval), rule, where)


def _visibility_rule(value: object, bad: Any) -> dict[str, tuple[str, ...] | None]:
    if not isinstance(value, dict):
        raise bad('visibility must be a table of audience = "public" or ["CHANNEL", ...]')
    rule: dict[str, tuple[str, ...] | None] = {}
    for audience, target in value.items():
        if target == PUBLIC:
            rule[audience] = None
        elif isinstance(target, list) and target and all(isinstance(c, str) and c.strip() for c in target):
            rule[audience] = tuple(c.strip() for c in target)
        else:
            raise bad(f'visibility.{audience} must be "public" or a non-empty list of channel ids')
    return rule


def visibility_for(audience: frozenset[str], rule: Mapping[str, tuple[str, ...] | None]
                   ) -> tuple[tuple[str, ...] | None, bool]:
    """The document's visibility (``None``: everyone) and whether the rule mapped any of its audience keys."""
    mapped = [rule[key] for key in sorted(audience) if key in rule]
    if not mapped:
        return (NOBODY,), False
    if any(channels is None for channels in mapped):
        return None, True
    return tuple(sorted({c for channels in mapped if channels for c in channels})), True


def read_sources(path: Path) -> tuple[SourceSpec, ...]:
    """The sources of the file at ``path``; none when it does not exist. Blocking: run it off the event loop."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as error:
        raise SourcesError(f"{path}: cannot read the sources file ({type(error).__name__}): it must be UTF-8 TOML"
                           ) from None
    return parse_sources(text, path)


def find_source(specs: tuple[SourceSpec, ...], name: str, path: Path) -> SourceSpec:
    for spec in specs:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in specs) or "none"
    raise SourcesError(f"{path}: no source is named '{name}' (declared: {known}): add a [sources.{name}] table")
