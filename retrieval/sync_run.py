"""A sync, run: the index made to mirror some paths (``verbatim sync``), or what that would change (``--dry-run``).

    run_sync(paths, store=, embedder=, chunking=, limits=) -> SyncReport
    preview_sync(paths, registry, limits=)                   -> SyncReport (dry_run: nothing written)

``run_sync`` reads the registry once, first, then ingests the paths as ``verbatim ingest`` does (new and changed
documents in; an unchanged document re-seen only has its source path recorded) while noting every document and
every load failure it meets, and last removes what ``retrieval.sync.plan_sync`` says left the sources.
``preview_sync`` reads and hashes the files (no chunking, no embedding, no store). Loading and hashing run off
the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from retrieval.chunking import ChunkingConfig
from retrieval.documents import Document
from retrieval.embedders import Embedder
from retrieval.ingest import IngestLimits, Outcome, Status, ingest, load_paths
from retrieval.loaders import LoadError, source_path
from retrieval.store import ChunkStore, DocumentRecord
from retrieval.sync import Found, SyncPlan, plan_sync


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What a sync did (or, with ``dry_run``, would do). Ids are document ids."""

    dry_run: bool
    added: tuple[str, ...]
    replaced: tuple[str, ...]
    unchanged: tuple[str, ...]
    removed: tuple[DocumentRecord, ...]
    kept: tuple[DocumentRecord, ...]  # left the sources as read, kept because their file or folder failed to load
    failures: tuple[Outcome, ...]  # files (or JSONL lines) that failed to load, documents that failed to index
    chunks: int = 0  # chunks written

    def summary(self) -> dict[str, int]:
        return {"added": len(self.added), "replaced": len(self.replaced), "unchanged": len(self.unchanged),
                "removed": len(self.removed), "kept": len(self.kept), "failed": len(self.failures),
                "chunks": self.chunks}


class _Tracked:
    """The loaded items, passed through, with each document's id, hash and path and each load failure noted."""

    def __init__(self, items: Iterable[Document | LoadError]) -> None:
        self._items = items
        self.found: list[Found] = []
        self.failed: list[LoadError] = []

    def __iter__(self) -> Iterator[Document | LoadError]:
        for item in self._items:
            if isinstance(item, LoadError):
                self.failed.append(item)
            else:
                self.found.append(Found(item.document_id, item.content_hash(), item.source_path))
            yield item

    def plan(self, registry: Sequence[DocumentRecord], roots: Sequence[str]) -> SyncPlan:
        failed = [error.source_path for error in self.failed if error.source_path is not None]
        return plan_sync(registry, self.found, roots=roots, failed=failed)


async def run_sync(
    paths: Sequence[Path],
    *,
    store: ChunkStore,
    embedder: Embedder,
    chunking: ChunkingConfig,
    limits: IngestLimits,
    on_outcome: Callable[[Outcome], None] | None = None,
    source_name: str | None = None,
) -> SyncReport:
    """Make the index mirror ``paths`` (see the module docstring); ``StoreError`` when Weaviate fails.
    ``source_name``: the declared source (a ``folder`` in sources.toml) recorded on each document."""
    roots = await _roots(paths)
    registry = await store.documents()
    loaded = load_paths(paths, limits)
    if source_name is not None:
        loaded = (replace(d, source_name=source_name) if isinstance(d, Document) else d for d in loaded)
    tracked = _Tracked(loaded)
    ingested = await ingest(tracked, store=store, embedder=embedder, chunking=chunking, on_outcome=on_outcome)
    plan = tracked.plan(registry, roots)
    await store.remove_documents([record.document_id for record in plan.removed])

    def with_status(status: Status) -> tuple[str, ...]:
        return tuple(o.document_id for o in ingested.outcomes if o.status is status and o.document_id is not None)

    return SyncReport(False, with_status(Status.INGESTED), with_status(Status.REPLACED), with_status(Status.SKIPPED),
                      plan.removed, plan.kept, tuple(ingested.failures), ingested.chunks)


async def preview_sync(paths: Sequence[Path], registry: Sequence[DocumentRecord], *, limits: IngestLimits) -> SyncReport:
    """What ``run_sync`` would change, given the registry as it is (empty when nothing is indexed yet)."""
    roots = await _roots(paths)
    tracked = _Tracked(load_paths(paths, limits))
    await asyncio.to_thread(lambda: sum(1 for _ in tracked))
    plan = tracked.plan(registry, roots)
    failures = tuple(Outcome(e.source, Status.FAILED, message=e.message) for e in tracked.failed)
    return SyncReport(True, _ids(plan.added), _ids(plan.replaced), _ids(plan.unchanged), plan.removed, plan.kept,
                      failures)


async def _roots(paths: Sequence[Path]) -> list[str]:
    return await asyncio.to_thread(lambda: [source_path(path) for path in paths])


def _ids(found: Iterable[Found]) -> tuple[str, ...]:
    return tuple(item.document_id for item in found)
