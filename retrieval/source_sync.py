"""A declared source, synced: the index made to mirror what its connector says the source holds now.

    plan_removals(own, source=, gone=, present=, seen=, kept=) -> (removed, kept)    pure, table-tested
    sync_source(spec, store=, embedder=, chunking=, limits=, state=, connector=) -> SourceReport

The engine, not the connector, keeps the state between syncs (``SourceState``: the cursor, when it last synced and
succeeded, its last error), in ``StateFile``. A sync:

1. reads the registry; the source's own documents are those recorded with its name (a ``folder`` source is
   synced by path, as ``verbatim sync PATH`` is, with its name recorded on each document);
2. pulls the connector's changes since the cursor (from the start when the index holds none of the source's
   documents: a rebuilt index is filled again, not left empty by an old cursor);
3. maps each document's audience to channels through the source's visibility rule (``retrieval.sources``) and
   ingests the documents as ``verbatim ingest`` does (unchanged ones are skipped by their content hash);
4. removes the documents that left the source (``Gone``, or absent from a full listing), unless the pull failed.

A pull that fails half-way (``SourceFailed``) keeps every indexed document and the old cursor: what it had
already received is written (it is what the source holds), nothing is removed, and the report carries the one-line
error. A document that could not be read or indexed keeps its indexed version, and the cursor stays where it was
so that the next sync tries it again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from retrieval.chunking import ChunkingConfig
from retrieval.connectors import Connector, Gone, Item, Listed, Skipped, SourceFailed, build_connector
from retrieval.documents import Document
from retrieval.embedders import Embedder
from retrieval.ingest import IngestLimits, Outcome, Status, ingest
from retrieval.loaders import LoadError, count_documents
from retrieval.sources import SourceSpec, visibility_for
from retrieval.store import ChunkStore, DocumentRecord
from retrieval.sync_run import SyncReport, run_sync


@dataclass(frozen=True, slots=True)
class SourceState:
    cursor: str | None = None
    last_sync: str | None = None  # ISO time the last sync ended
    last_success: str | None = None  # ISO time the last sync that read the whole source ended
    last_error: str | None = None  # the last sync's error, one line; None when it succeeded
    failures: int = 0  # syncs that failed in a row
    unmapped: tuple[str, ...] = ()  # documents the last sync restricted to nobody: the rule maps none of their audience


@dataclass(frozen=True, slots=True)
class SourceReport:
    source: str
    sync: SyncReport
    error: str | None  # the source could not be read to the end: nothing was removed
    unmapped: tuple[str, ...]  # documents whose audience the visibility rule does not map: visible to nobody
    state: SourceState  # the state to keep for the next sync


def plan_removals(own: Iterable[DocumentRecord], *, gone: Iterable[str], present: frozenset[str] | None,
                  seen: Iterable[str], kept: Iterable[str]) -> tuple[tuple[DocumentRecord, ...], tuple[DocumentRecord, ...]]:
    """Which of the source's documents (``own``) to remove, and which to keep although they left it.

    A document leaves when the connector said it is ``gone`` or, after a full listing, it is not ``present``; one
    ``seen`` in this pull (moved, or gone then back) stays; one that left but could not be read this time
    (``kept``) is kept."""
    gone_ids, seen_ids, kept_ids = set(gone), set(seen), set(kept)
    removed, held = [], []
    for record in own:
        left = record.document_id in gone_ids or (present is not None and record.document_id not in present)
        if not left or record.document_id in seen_ids:
            continue
        (held if record.document_id in kept_ids else removed).append(record)
    return tuple(removed), tuple(held)


async def sync_source(spec: SourceSpec, *, store: ChunkStore, embedder: Embedder, chunking: ChunkingConfig,
                      limits: IngestLimits, state: SourceState, cache_root: Path, connector: Connector | None = None,
                      on_outcome: Callable[[Outcome], None] | None = None) -> SourceReport:
    """Sync one declared source (see the module docstring). ``StoreError`` when Weaviate fails, ``SourcesError``
    when its settings are wrong; a source's own failure is in the report."""
    if spec.type == "folder":
        return await _sync_folder(spec, store=store, embedder=embedder, chunking=chunking, limits=limits,
                                  state=state, on_outcome=on_outcome)
    connector = connector if connector is not None else build_connector(spec, cache_root=cache_root)
    own = [r for r in await store.documents() if r.source == spec.name]
    items: list[Document | LoadError] = []
    gone: list[str] = []
    skipped: list[str] = []
    unmapped: list[str] = []
    listed: Listed | None = None
    error: str | None = None
    try:
        async for event in connector.pull(state.cursor if own else None):
            if isinstance(event, Item):
                document = replace(event.document, source_name=spec.name)
                if event.audience is not None:
                    visibility, mapped = visibility_for(event.audience, spec.visibility)
                    document = replace(document, visibility=visibility)
                    if not mapped:
                        unmapped.append(document.document_id)
                items.append(document)
            elif isinstance(event, Gone):
                gone.append(event.document_id)
            elif isinstance(event, Skipped):
                items.append(LoadError(event.source, event.message))
                if event.document_id is not None:
                    skipped.append(event.document_id)
            else:
                listed = event
    except SourceFailed as failed:
        error = f"source '{spec.name}': {failed}"
    ingested = await ingest(items, store=store, embedder=embedder, chunking=chunking, on_outcome=on_outcome)
    failed_ids = [o.document_id for o in ingested.failures if o.document_id is not None]
    if error is None and listed is None:
        error = f"source '{spec.name}': the connector ended without listing the source: nothing removed"
    removed: tuple[DocumentRecord, ...] = ()
    kept: tuple[DocumentRecord, ...] = ()
    if error is None and listed is not None:
        seen = [d.document_id for d in items if isinstance(d, Document)]
        removed, kept = plan_removals(own, gone=gone, present=listed.present, seen=seen, kept=skipped + failed_ids)
        await store.remove_documents([r.document_id for r in removed])

    def with_status(status: Status) -> tuple[str, ...]:
        return tuple(o.document_id for o in ingested.outcomes if o.status is status and o.document_id is not None)

    report = SyncReport(False, with_status(Status.INGESTED), with_status(Status.REPLACED),
                        with_status(Status.SKIPPED), removed, kept, tuple(ingested.failures), ingested.chunks)
    clean = error is None and not ingested.failures
    cursor = listed.cursor if clean and listed is not None else state.cursor
    return SourceReport(spec.name, report, error, tuple(unmapped), _next_state(state, cursor, error, tuple(unmapped)))


async def _sync_folder(spec: SourceSpec, *, store: ChunkStore, embedder: Embedder, chunking: ChunkingConfig,
                       limits: IngestLimits, state: SourceState,
                       on_outcome: Callable[[Outcome], None] | None) -> SourceReport:
    spec.only("paths")
    paths = [Path(p).expanduser() for p in spec.texts("paths")]
    if not paths:
        raise spec.problem("paths must name at least one file or folder")
    report = await run_sync(paths, store=store, embedder=embedder, chunking=chunking, limits=limits,
                            on_outcome=on_outcome, source_name=spec.name)
    return SourceReport(spec.name, report, None, (), _next_state(state, None, None))


def _next_state(state: SourceState, cursor: str | None, error: str | None, unmapped: tuple[str, ...] = ()
                ) -> SourceState:
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if error is None:
        return SourceState(cursor, now, now, None, 0, unmapped)
    # A failed pull saw only part of the source: the documents it found unmapped are added to those known.
    return SourceState(cursor, now, state.last_success, error, state.failures + 1,
                       tuple(sorted(set(state.unmapped) | set(unmapped))))


class StateFile:
    """Each source's ``SourceState``, one JSON file in the home, per collection (another index starts over).
    Written whole to a temporary file and renamed, so a crash never leaves half a file. Blocking work runs off
    the event loop."""

    def __init__(self, path: Path, collection: str) -> None:
        self.path = path
        self._collection = collection

    async def load(self, name: str) -> SourceState:
        data = await asyncio.to_thread(self._read)
        raw = data.get(self._collection, {}).get(name)
        if not isinstance(raw, dict):
            return SourceState()
        fields = SourceState.__dataclass_fields__
        values = {k: v for k, v in raw.items() if k in fields}
        values["unmapped"] = tuple(values.get("unmapped") or ())
        return SourceState(**values)

    async def save(self, name: str, state: SourceState) -> None:
        def write() -> None:
            data = self._read()
            data.setdefault(self._collection, {})[name] = asdict(state)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(self.path.name + ".tmp")
            temporary.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
            os.replace(temporary, self.path)

        await asyncio.to_thread(write)

    def _read(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):  # unreadable or damaged: every source starts over (a full sync)
            return {}
        return data if isinstance(data, dict) else {}



async def check_source(spec: SourceSpec, *, cache_root: Path, connector: Connector | None = None) -> str:
    """One line: the source was reached (what it holds), or ``SourceFailed`` / ``SourcesError`` saying why not."""
    if spec.type == "folder":
        spec.only("paths")
        paths = [Path(p).expanduser() for p in spec.texts("paths")]
        missing = [str(p) for p in paths if not await asyncio.to_thread(p.exists)]
        if missing or not paths:
            raise SourceFailed(f"no such file or folder: {missing[0] if missing else '(no paths)'}: check `paths`")
        total = await asyncio.to_thread(count_documents, paths)
        return f"{', '.join(str(p) for p in paths)}: {total} documents"
    connector = connector if connector is not None else build_connector(spec, cache_root=cache_root)
    return await connector.check()
