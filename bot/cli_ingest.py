"""``verbatim ingest``: files and folders into the index, each document's outcome as it comes."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click

from bot.cli_support import (
    async_command,
    embed_cores,
    load_settings,
    outcome_printer,
    say_cores,
    stop_requested,
    workers_option,
)
from bot.runtime.retrieval import open_retrieval
from retrieval.errors import RetrievalError
from retrieval.ingest import FirstBatch, IngestLimits, IngestReport, ingest, load_paths
from retrieval.loaders import count_documents

_run = async_command({RetrievalError: 1})


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (summary and failures); no progress bar.")
@click.option("--rebuild", is_flag=True, help="Drop the whole index first (after changing VERBATIM_EMBEDDER).")
@workers_option
@_run
async def ingest_command(paths: tuple[Path, ...], as_json: bool, rebuild: bool, workers: int | None) -> None:
    """Index files and folders (.md .txt .html .pdf .jsonl). Unchanged documents are skipped."""
    settings = load_settings()
    limits = IngestLimits(max_file_bytes=settings.max_file_bytes, max_document_chars=settings.max_document_chars)
    cores, notice = embed_cores(workers)
    total = None if as_json else await asyncio.to_thread(count_documents, paths)
    report = IngestReport()
    first = FirstBatch(load_paths(paths, limits), settings.chunking_config())  # embedded while Weaviate starts
    try:
        async with open_retrieval(settings, create=True, rebuild=rebuild, embed_threads=cores,
                                  while_starting=first.embed) as r:
            say_cores(settings, cores, notice, as_json=as_json)
            with outcome_printer("ingesting", as_json=as_json, total=total) as on_outcome:
                await ingest(first, store=r.store, embedder=r.embedder,
                             chunking=settings.chunking_config(), on_outcome=on_outcome, report=report)
    finally:
        if stop_requested():  # Ctrl-C or SIGTERM: what is in the index, once what it started is stopped
            click.echo(_ingest_stopped(report, total), err=True)
    _print_ingest_report(report, as_json)
    if report.failures:
        sys.exit(1)


def _ingest_stopped(report: IngestReport, total: int | None) -> str:
    """What a stopped ingest leaves: the documents it wrote are in the index; the others are not."""
    summary = report.summary()
    done = ", ".join(f"{k} {v}" for k, v in summary.items() if k != "chunks")
    left = f"{total - len(report.outcomes)} of {total}" if total is not None else "the other"
    return (f"stopped: {done} ({summary['chunks']} chunks written, kept in the index); {left} documents were not "
            "ingested: run the same command again to finish (what is indexed and unchanged is skipped)")


def _print_ingest_report(report: IngestReport, as_json: bool) -> None:
    summary = report.summary()
    if as_json:
        click.echo(json.dumps({
            "summary": summary,
            "failures": [{"source": o.source, "document_id": o.document_id, "message": o.message} for o in report.failures],
        }, ensure_ascii=False))
        return
    click.echo(", ".join(f"{k} {v}" for k, v in summary.items() if k != "chunks") + f" ({summary['chunks']} chunks written)")
