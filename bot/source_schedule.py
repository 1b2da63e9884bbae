"""`verbatim serve`'s background sync: every declared source synced on its own interval, off the answer path.

    is_due(state, interval_minutes, now) -> bool          pure, table-tested
    sync_due_sources(settings, retrieval, metrics, now=)  one pass: each due source synced, one after the other
    sync_sources_forever(settings, retrieval, metrics)    a pass every TICK_S until cancelled

A source is due when it never synced, or its last attempt ended ``interval_minutes`` ago or more (a failed one
too: it is retried on its interval, not in a loop). The sources file is read again on every pass, so a source
added to it is picked up without a restart; a wrong file is one log line per pass and nothing syncs. A source's
failure is one log line naming the source and the cause (never a secret) and counted in ``/metrics``; the others go
on. Loading, git and hashing run in worker threads inside the sync, so questions are answered meanwhile.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

from bot.metrics import Metrics
from bot.runtime.retrieval import Retrieval
from bot.settings import Settings
from retrieval.ingest import IngestLimits
from retrieval.source_sync import SourceState, StateFile, sync_source
from retrieval.sources import SourcesError, read_sources
from retrieval.store import StoreError

log = logging.getLogger(__name__)

TICK_S = 30.0


def is_due(state: SourceState, interval_minutes: float, now: dt.datetime) -> bool:
    if state.last_sync is None:
        return True
    try:
        last = dt.datetime.fromisoformat(state.last_sync)
    except ValueError:
        return True
    return (now - last).total_seconds() >= interval_minutes * 60


def state_file(settings: Settings) -> StateFile:
    return StateFile(settings.verbatim_home / "sources-state.json", settings.verbatim_collection)


async def sync_due_sources(settings: Settings, retrieval: Retrieval, metrics: Metrics,
                           now: dt.datetime | None = None) -> list[str]:
    """Sync each due source once; the names of those synced."""
    try:
        specs = await asyncio.to_thread(read_sources, settings.sources_path())
    except SourcesError as error:
        log.error("sources not synced: %s", error)
        return []
    states = state_file(settings)
    limits = IngestLimits(max_file_bytes=settings.max_file_bytes, max_document_chars=settings.max_document_chars)
    synced = []
    for spec in specs:
        state = await states.load(spec.name)
        if not is_due(state, spec.interval_minutes, now or dt.datetime.now(dt.UTC)):
            continue
        try:
            report = await sync_source(spec, store=retrieval.store, embedder=retrieval.embedder,
                                       chunking=settings.chunking_config(), limits=limits, state=state,
                                       cache_root=settings.verbatim_home / "sources")
        except SourcesError as error:
            log.error("source '%s' not synced: %s", spec.name, error)
            metrics.source_failures.labels(spec.name).inc()
            continue
        await states.save(spec.name, report.state)
        synced.append(spec.name)
        if report.error is not None:
            metrics.source_failures.labels(spec.name).inc()
            log.error("%s; its indexed documents are kept", report.error)
        else:
            log.info("source '%s' synced: %s", spec.name, report.sync.summary())
        _observe(metrics, spec.name, report.state, await retrieval.store.documents())
    return synced


def _observe(metrics: Metrics, name: str, state: SourceState, registry: list) -> None:
    metrics.source_documents.labels(name).set(sum(1 for record in registry if record.source == name))
    if state.last_success is not None:
        success = dt.datetime.fromisoformat(state.last_success)
        metrics.source_last_success.labels(name).set(success.timestamp())
        metrics.source_lag.labels(name).set(max(0.0, (dt.datetime.now(dt.UTC) - success).total_seconds()))


async def sync_sources_forever(settings: Settings, retrieval: Retrieval, metrics: Metrics,
                               tick_s: float = TICK_S) -> None:
    while True:
        try:
            await sync_due_sources(settings, retrieval, metrics)
        except StoreError as error:  # Weaviate failed: the next pass tries again (the store heals itself)
            log.error("sources not synced: %s", error)
        await asyncio.sleep(tick_s)
