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
    load_settings,
    outcome_printer,
    print_failure,
    say_cores,
    workers_option,
)
from bot.runtime import open_retrieval
from retrieval.errors import RetrievalError
from retrieval.ingest import IngestLimits
from retrieval.loaders import count_documents, source_path
from retrieval.store import DocumentRecord, IndexMissing
from retrieval.sync import is_under
from retrieval.sync_run import SyncReport, preview_sync, run_sync
from storage.errors import StorageError

_run = async_command({RetrievalError: 1, StorageError: 1})


# -- sync ----------------------------------------------------------------------------------------


@click.command("sync")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (summary, changes, failures).")
@workers_option
@_run
async def sync_command(paths: tuple[Path, ...], dry_run: bool, as_json: bool, workers: int | None) -> None:
    """Make the index mirror PATHS: new and changed documents in, documents whose file left PATHS out.

    Only documents recorded under PATHS are ever removed; a file that fails to load keeps its documents.
    """
    settings = load_settings()
    limits = IngestLimits(max_file_bytes=settings.max_file_bytes, max_document_chars=settings.max_document_chars)
    if dry_run:
        try:
            async with open_retrieval(settings) as r:
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


def _print_sync(report: SyncReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({
            "dry_run": report.dry_run,
            "summary": report.summary(),
            "added": list(report.added), "replaced": list(report.replaced),
            "removed": [_record_json(r) for r in report.removed], "kept": [_record_json(r) for r in report.kept],
            "failures": [{"source": o.source, "document_id": o.document_id, "message": o.message}
                         for o in report.failures],
        }, ensure_ascii=False))
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
        out.print(f"{'would remove' if report.dry_run else 'removed'} {escape(record.document_id)} "
                  f"({escape(record.source_path or '')})")
    for record in report.kept:
        out.print(f"kept {escape(record.document_id)}: its file {escape(record.source_path or '')} did not load")
    summary = report.summary()
    line = ", ".join(f"{k} {v}" for k, v in summary.items() if k != "chunks")
    click.echo(f"dry run, nothing changed: {line}" if report.dry_run else f"{line} ({summary['chunks']} chunks written)")


def _record_json(record: DocumentRecord) -> dict[str, object]:
    return {"document_id": record.document_id, "title": record.title, "version": record.version,
            "chunks": record.chunk_count, "source": record.source_path}


# -- documents -----------------------------------------------------------------------------------


@click.group("documents")
def documents() -> None:
    """The documents the index holds: list them, remove some."""


@documents.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per document: id, title, version, chunks, source.")
@click.option("--source", "source", type=click.Path(path_type=Path),
              help="Only documents whose file is this file or lies in this folder.")
@_run
async def list_command(as_json: bool, source: Path | None) -> None:
    """Every indexed document, with its version, chunk count and the file it came from."""
    settings = load_settings()
    async with open_retrieval(settings) as r:
        records = await r.store.documents()
    if source is not None:
        root = source_path(source)
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
                      escape(r.source_path or "(not recorded)"))
    return table


@documents.command("remove")
@click.argument("document_ids", nargs=-1, required=True)
@_run
async def remove_command(document_ids: tuple[str, ...]) -> None:
    """Remove documents by id: their chunks (so no answer cites them), sentence vectors and registry entries."""
    settings = load_settings()
    ids = list(dict.fromkeys(document_ids))
    async with open_retrieval(settings) as r:
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
