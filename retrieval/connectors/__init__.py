"""Connectors: one small interface between a place documents live and the sync engine (``retrieval.source_sync``).

    Connector.check()        -> str                 one line: what was reached, as whom; SourceFailed if not
    Connector.pull(cursor)   -> AsyncIterator[...]  what changed since ``cursor`` (None: everything), as events

``pull`` yields, in any order, ``Item`` (a document as the source holds it now, with the audience the source gives
it), ``Gone`` (a document that left the source: deleted, moved out, turned into a draft) and ``Skipped`` (one
document that could not be read; what is indexed of it stays), and last exactly one ``Listed``: the cursor to
start from next time and, when the connector listed every document id, ``present`` (the engine then removes every
other document of the source: deletions are found on every sync, not in a weekly pruning).

A connector keeps no state: the engine keeps the cursor and passes it in. A connector that cannot go on (the
network, 401/403, 429 past its patience, a 5xx) raises ``SourceFailed``, one line naming the cause and never a
secret; the engine then writes what it was given so far, removes nothing and keeps the old cursor.

Blocking work (git, a client library's sockets) runs off the event loop inside the connector.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from retrieval.documents import Document
from retrieval.errors import RetrievalError
from retrieval.sources import EVERYONE, SourceSpec


class SourceFailed(RetrievalError):
    """A source could not be read to the end (unreachable, refused, rate limited, failing): one line, no secret."""


@dataclass(frozen=True, slots=True)
class Item:
    """A document as the source holds it now. ``audience``: who the source lets see it (``retrieval.sources``);
    ``None`` when the document carries its own ``visibility`` (front matter in a repository)."""

    document: Document
    audience: frozenset[str] | None = frozenset({EVERYONE})


@dataclass(frozen=True, slots=True)
class Gone:
    document_id: str


@dataclass(frozen=True, slots=True)
class Skipped:
    source: str  # where, for the message (a page's link or path)
    message: str
    document_id: str | None = None


@dataclass(frozen=True, slots=True)
class Listed:
    cursor: str | None
    present: frozenset[str] | None = None  # every document id the source holds now, when it listed them all


Event = Item | Gone | Skipped | Listed


class Connector(Protocol):
    async def check(self) -> str: ...

    def pull(self, cursor: str | None) -> AsyncIterator[Event]: ...


def document_id(source: str, key: str) -> str:
    """A connector's document id: the source's name and the source's own id, so two sources never collide."""
    return f"{source}:{key}"


def secret(spec: SourceSpec, environ: Mapping[str, str], what: str) -> str:
    """The source's secret from the environment variable ``token_env`` names; one line saying what to set if not."""
    if spec.token_env is None:
        raise spec.problem(f"set token_env to the environment variable that holds its {what}")
    value = environ.get(spec.token_env, "")
    if not value.strip():
        raise spec.problem(f"the environment variable {spec.token_env} (its {what}) is not set")
    return value.strip()


def build_connector(spec: SourceSpec, *, cache_root: Path, environ: Mapping[str, str] | None = None) -> Connector:
    """The connector for a declared source (not ``folder``, which the path sync runs); ``SourcesError`` when its
    settings are wrong. ``cache_root``: where a connector may keep what it can fetch again (a bare clone)."""
    env = os.environ if environ is None else environ
    if spec.type == "git":
        from retrieval.connectors.git import GitConnector

        return GitConnector.from_spec(spec, cache_root, env)
    if spec.type == "zendesk":
        from retrieval.connectors.zendesk import ZendeskConnector

        return ZendeskConnector.from_spec(spec, env)
    if spec.type == "confluence":
        from retrieval.connectors.confluence import ConfluenceConnector

        return ConfluenceConnector.from_spec(spec, env)
    if spec.type == "gdrive":
        from retrieval.connectors.gdrive import DriveConnector

        return DriveConnector.from_spec(spec, env)
    if spec.type == "notion":
        from retrieval.connectors.notion import NotionConnector

        return NotionConnector.from_spec(spec, env)
    raise spec.problem(f"type '{spec.type}' has no connector")
