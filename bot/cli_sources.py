"""``verbatim sync`` and ``verbatim documents``: the index follows its sources, and what it holds can be listed
and removed by hand. Exit codes as every command: 0 done; 1 something failed; 2 bad usage."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bot.cli_support import (
    PLAIN_WIDTH,
    async_command,
    embed_cores,
    fail,
    load_settings,
    outcome_printer,
    print_failure,
    say_cores,
    workers_option,
)
from bot.runtime.retrieval import open_retrieval
from bot.settings import Settings
from retrieval.connectors import SourceFailed
from retrieval.errors import RetrievalError
from retrieval.ingest import IngestLimits
from retrieval.loaders import count_documents, source_path
from retrieval.source_sync import StateFile, check_source, sync_source
from retrieval.sources import SourcesError, find_source, read_sources
from retrieval.store import DocumentRecord, IndexMissing
from retrieval.sync import is_under
from retrieval.sync_run import SyncReport, preview_sync, run_sync
from storage.errors import StorageError

_run = async_command({RetrievalError: 1, StorageError: 1})


# -- sync ----------------------------------------------------------------------------------------


@click.command("sync")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--source", "source_names", multiple=True, metavar="NAME",
              help="Sync this declared source (sources.toml); may be given more than once.")
@click.option("--all", "all_sources", is_flag=True, help="Sync every declared source.")
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing (PATHS only).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (summary, changes, failures).")
@workers_option
@_run
async def sync_command(paths: tuple[Path, ...], source_names: tuple[str, ...], all_sources: bool, dry_run: bool,
                       as_json: bool, workers: int | None) -> None:
    """Make the index mirror PATHS, or the declared sources (--source NAME, --all): new and changed documents in,
    documents that left them out.

    Only documents recorded under PATHS (or from that source) are ever removed; a file that fails to load, or a
    source that fails, keeps its documents.
    """
    if sum((bool(paths), bool(source_names), all_sources)) != 1:
        fail("give PATHS, --source NAME or --all (one of them)", code=2)
    settings = load_settings()
    if not paths:
        if dry_run:
            fail("--dry-run is for PATHS: a declared source is only read by a real sync", code=2)
        await _sync_sources(settings, source_names, as_json, workers)
        return
    limits = _limits(settings)
    if dry_run:
        try:
            async with open_retrieval(settings, embeds=False) as r:
                registry = await r.store.documents()
        except IndexMissing:  # nothing indexed yet: everything found would be added
            registry = []
        report = await preview_sync(paths, registry, limits=limits)
    else:
        cores, notice = embed_cores(workers)
        total = None if as_json else await asyncio.to_thread(count_documents, paths)
        async with open_retrieval(settings, create=True, embed_threads=cores) as r:
            say_cores(settings, cores, notice, as_json=as_json)
            with outcome_printer("syncing", as_json=as_json, total=total) as on_outcome:
                report = await run_sync(paths, store=r.store, embedder=r.embedder, chunking=settings.chunking_config(),
                                        limits=limits, on_outcome=on_outcome)
    _print_sync(report, as_json)
    if report.failures:
        sys.exit(1)


def _limits(settings: Settings) -> IngestLimits:
    return IngestLimits(max_file_bytes=settings.max_file_bytes, max_document_chars=settings.max_document_chars)


async def _sync_sources(settings: Settings, names: tuple[str, ...], as_json: bool, workers: int | None) -> None:
    """Sync the named sources (all when none are named), one after the other: one that fails is reported on one
    line and the others go on; exit 1 when any failed."""
    path = settings.sources_path()
    specs = await asyncio.to_thread(read_sources, path)
    chosen = [find_source(specs, name, path) for name in dict.fromkeys(names)] if names else list(specs)
    if not chosen:
        fail(f"{path}: no sources are declared: add a [sources.NAME] table (see the README, \"Sources\")")
    state = _state_file(settings)
    cores, notice = embed_cores(workers)
    failed = False
    reports: list[dict[str, object]] = []
    async with open_retrieval(settings, create=True, embed_threads=cores) as r:
        say_cores(settings, cores, notice, as_json=as_json)
        for spec in chosen:
            try:
                with outcome_printer(f"syncing {spec.name}", as_json=as_json) as on_outcome:
                    report = await sync_source(spec, store=r.store, embedder=r.embedder,
                                               chunking=settings.chunking_config(), limits=_limits(settings),
                                               state=await state.load(spec.name), cache_root=_cache_root(settings),
                                               on_outcome=on_outcome)
            except SourcesError as error:  # this source's settings are wrong: the others still sync
                failed = True
                click.echo(f"error: {error}", err=True)
                reports.append({"source": spec.name, "error": str(error)})
                continue
            await state.save(spec.name, report.state)
            failed = failed or report.error is not None or bool(report.sync.failures)
            if report.error is not None:
                click.echo(f"error: {report.error}; its indexed documents are kept", err=True)
            if as_json:
                reports.append({"source": spec.name, "error": report.error, "unmapped": list(report.unmapped)}
                               | _sync_json(report.sync))
            else:
                _print_sync(report.sync, False, prefix=f"{spec.name}: ")
                if report.unmapped:
                    click.echo(f"{spec.name}: {len(report.unmapped)} documents visible to nobody (the visibility "
                               "rule maps none of their audience): see `verbatim sources check "
                               f"{spec.name}`", err=True)
    if as_json:
        click.echo(json.dumps({"sources": reports}, ensure_ascii=False))
    if failed:
        sys.exit(1)


def _state_file(settings: Settings) -> StateFile:
    return StateFile(settings.verbatim_home / "sources-state.json", settings.verbatim_collection)


def _cache_root(settings: Settings) -> Path:
    return settings.verbatim_home / "sources"


def _sync_json(report: SyncReport) -> dict[str, object]:
    return {
        "dry_run": report.dry_run,
        "summary": report.summary(),
        "added": list(report.added), "replaced": list(report.replaced),
        "removed": [_record_json(r) for r in report.removed], "kept": [_record_json(r) for r in report.kept],
        "failures": [{"source": o.source, "document_id": o.document_id, "message": o.message}
                     for o in report.failures],
    }


def _print_sync(report: SyncReport, as_json: bool, prefix: str = "") -> None:
    if as_json:
        click.echo(json.dumps(_sync_json(report), ensure_ascii=False))
        return
    out = Console(highlight=False, soft_wrap=True)
    if report.dry_run:
        for verb, ids in (("add", report.added), ("replace", report.replaced)):
            for document_id in ids:
                out.print(f"would {verb} {escape(document_id)}")
        err = Console(stderr=True)
        for failure in report.failures:  # a real run prints them as they happen
            print_failure(err, failure.source, failure.message)
    for record in report.removed:
        where = f" ({escape(record.source_path)})" if record.source_path else ""
        out.print(f"{prefix}{'would remove' if report.dry_run else 'removed'} {escape(record.document_id)}{where}")
    for record in report.kept:
        why = f"its file {escape(record.source_path)}" if record.source_path else "it"
        out.print(f"{prefix}kept {escape(record.document_id)}: {why} did not load")
    summary = report.summary()
    line = ", ".join(f"{k} {v}" for k, v in summary.items() if k != "chunks")
    click.echo(f"dry run, nothing changed: {line}" if report.dry_run
               else f"{prefix}{line} ({summary['chunks']} chunks written)")


def _record_json(record: DocumentRecord) -> dict[str, object]:
    return {"document_id": record.document_id, "title": record.title, "version": record.version,
            "chunks": record.chunk_count, "source": record.source_path, "source_name": record.source}


# -- documents -----------------------------------------------------------------------------------


@click.group("documents")
def documents() -> None:
    """The documents the index holds: list them, remove some."""


@documents.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per document: id, title, version, chunks, source.")
@click.option("--source", "source",
              help="Only documents of this declared source (sources.toml), or whose file is this file or lies in "
                   "this folder.")
@_run
async def list_command(as_json: bool, source: str | None) -> None:
    """Every indexed document, with its version, chunk count and the file or source it came from."""
    settings = load_settings()
    async with open_retrieval(settings, embeds=False) as r:
        records = await r.store.documents()
    if source is not None:
        declared = {spec.name for spec in await asyncio.to_thread(read_sources, settings.sources_path())}
        if source in declared or any(record.source == source for record in records):
            records = [record for record in records if record.source == source]
        else:
            root = source_path(Path(source))
            records = [record for record in records if is_under(record.source_path, root)]
    records.sort(key=lambda record: (record.source_path or "", record.document_id))
    if as_json:
        for record in records:
            click.echo(json.dumps(_record_json(record), ensure_ascii=False))
        return
    if not records:
        click.echo("no documents are indexed" + (f" from {source}" if source is not None else ""))
        return
    Console(highlight=False, width=None if sys.stdout.isatty() else PLAIN_WIDTH).print(_documents_table(records))


def _documents_table(records: Sequence[DocumentRecord]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name, justify in (("document", "left"), ("title", "left"), ("version", "left"), ("chunks", "right"),
                          ("source", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in records:
        table.add_row(escape(r.document_id), escape(r.title), escape(r.version or "–"), str(r.chunk_count),
                      escape(r.source_path or r.source or "(not recorded)"))
    return table


@documents.command("remove")
@click.argument("document_ids", nargs=-1, required=True)
@_run
async def remove_command(document_ids: tuple[str, ...]) -> None:
    """Remove documents by id: their chunks (so no answer cites them), sentence vectors and registry entries."""
    settings = load_settings()
    ids = list(dict.fromkeys(document_ids))
    async with open_retrieval(settings, embeds=False) as r:
        known = await r.store.current(ids)
        await r.store.remove_documents([i for i in ids if i in known])
    unknown = [i for i in ids if i not in known]
    for document_id in ids:
        if document_id in known:
            click.echo(f"removed {document_id}")
    for document_id in unknown:
        click.echo(f"error: no indexed document has the id '{document_id}': see `verbatim documents list`", err=True)
    if unknown:
        sys.exit(1)


# -- sources -------------------------------------------------------------------------------------


@click.group("sources")
def sources() -> None:
    """The declared sources (SOURCES_FILE, default VERBATIM_HOME/sources.toml): list them, check one."""


@sources.command("list")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per source: name, type, documents, last_sync, last_success, last_error.")
@_run
async def sources_list_command(as_json: bool) -> None:
    """Every declared source: its type, how many documents it has in the index, its last sync and error."""
    settings = load_settings()
    path = settings.sources_path()
    specs = await asyncio.to_thread(read_sources, path)
    try:
        async with open_retrieval(settings, embeds=False) as r:
            registry = await r.store.documents()
    except IndexMissing:  # nothing synced yet: every source has no documents
        registry = []
    state = _state_file(settings)
    rows = []
    for spec in specs:
        known = await state.load(spec.name)
        rows.append({"name": spec.name, "type": spec.type,
                     "documents": sum(1 for record in registry if record.source == spec.name),
                     "last_sync": known.last_sync, "last_success": known.last_success, "last_error": known.last_error})
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))
        return
    if not rows:
        click.echo(f"no sources are declared in {path}")
        return
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name in ("source", "type", "documents", "last sync", "last error"):
        table.add_column(name, justify="right" if name == "documents" else "left", overflow="fold")
    for row in rows:
        table.add_row(escape(str(row["name"])), str(row["type"]), str(row["documents"]), str(row["last_sync"] or "never"),
                      escape(str(row["last_error"] or "–")))
    Console(highlight=False, width=None if sys.stdout.isatty() else PLAIN_WIDTH).print(table)


@sources.command("check")
@click.argument("name")
@_run
async def sources_check_command(name: str) -> None:
    """Reach the source NAME with its credentials: one line, exit 0 when it answers, 1 when it does not. Also
    lists the documents its last sync made visible to nobody (the visibility rule maps none of their audience)."""
    settings = load_settings()
    path = settings.sources_path()
    spec = find_source(await asyncio.to_thread(read_sources, path), name, path)
    try:
        reached = await check_source(spec, cache_root=_cache_root(settings))
    except SourceFailed as error:
        fail(f"source '{spec.name}' ({spec.type}): {error}")
    click.echo(f"ok: source '{spec.name}' ({spec.type}): {reached}")
    for document_id in (await _state_file(settings).load(spec.name)).unmapped:
        click.echo(f"visible to nobody: {document_id} (add its audience to [sources.{spec.name}.visibility])")
