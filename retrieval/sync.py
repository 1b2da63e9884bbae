"""What a sync changes: the registry as it is, the sources as they are now, and the plan between them. Pure.

    plan_sync(registry, found, roots=, failed=) -> SyncPlan

A document found in the sources is *added* (not indexed yet), *replaced* (indexed with another content hash)
or *unchanged*. A registered document is *removed* when all of these hold:

- its recorded ``source_path`` lies at or below one of the synced roots — so syncing one folder never touches
  another folder's documents, and a document with no source recorded (built in memory, or indexed before
  sources were recorded) is never removed;
- no document with its id was found anywhere in this sync's sources (a document that moved to another file
  of the sync is not removed, it is re-recorded at its new path);
- nothing at or above its ``source_path`` failed to load (a file that could not be read, a JSONL file with a
  bad line, a folder that could not be listed, a path that is gone): those documents are *kept*, since what
  is there now is unknown.

Paths are compared as the loaders record them (``retrieval.loaders.source_path``), component by component:
``/wiki`` does not hold ``/wiki-old/page.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from retrieval.store import DocumentRecord


@dataclass(frozen=True, slots=True)
class Found:
    """A document as the sources hold it now."""

    document_id: str
    content_hash: str
    source_path: str | None


@dataclass(frozen=True, slots=True)
class SyncPlan:
    added: tuple[Found, ...]
    replaced: tuple[Found, ...]
    unchanged: tuple[Found, ...]
    removed: tuple[DocumentRecord, ...]
    kept: tuple[DocumentRecord, ...]  # gone from the sources as read, but their file or folder failed to load


def is_under(path: str | None, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies below it (``None``, no path recorded, lies nowhere)."""
    return path is not None and PurePath(path).is_relative_to(PurePath(root))


def plan_sync(
    registry: Iterable[DocumentRecord], found: Iterable[Found], *, roots: Sequence[str], failed: Sequence[str]
) -> SyncPlan:
    """The changes that make the index mirror ``found`` within ``roots`` (see the module docstring)."""
    indexed = {record.document_id: record for record in registry}
    first: dict[str, Found] = {}
    for item in found:
        first.setdefault(item.document_id, item)  # the ingest refuses a second document with the same id
    added, replaced, unchanged = [], [], []
    for item in first.values():
        previous = indexed.get(item.document_id)
        if previous is None:
            added.append(item)
        elif previous.content_hash != item.content_hash:
            replaced.append(item)
        else:
            unchanged.append(item)
    removed, kept = [], []
    for record in indexed.values():
        if record.document_id in first or not any(is_under(record.source_path, root) for root in roots):
            continue
        (kept if any(is_under(record.source_path, bad) for bad in failed) else removed).append(record)
    return SyncPlan(tuple(added), tuple(replaced), tuple(unchanged), tuple(removed), tuple(kept))
