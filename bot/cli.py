"""The ``verbatim`` command: one group, ``--json`` for machines, a rich terminal for people.

Domain errors become one line on stderr and a non-zero exit here, and only here:
exit 0 = done; 1 = something failed (a file not ingested, Weaviate unreachable …); 2 = bad usage.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from bot.runtime import open_retrieval
from bot.settings import Settings
from retrieval.embedders import EmbeddingError
from retrieval.ingest import IngestLimits, IngestReport, Outcome, Status, ingest, load_paths
from retrieval.search import SearchResult, search
from retrieval.store import StoreError
from retrieval.weaviate_server import ServerInstallError, StoreUnavailable, install_server

T = TypeVar("T")
_EXPECTED_ERRORS = (StoreUnavailable, StoreError, ServerInstallError, EmbeddingError)


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as error:
        first = error.errors()[0]
        name = str(first["loc"][0]).upper() if first["loc"] else "a setting"
        _fail(f"{name} is invalid ({first['msg']}): fix it in the environment or .env", code=2)


def _run(coro_fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async command body; our expected errors become one line and exit code 1."""

    @functools.wraps(coro_fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return asyncio.run(coro_fn(*args, **kwargs))
        except _EXPECTED_ERRORS as error:
            _fail(str(error))
        except KeyboardInterrupt:
            _fail("interrupted", code=130)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log what happens to stderr.")
def main(verbose: bool) -> None:
    """Verbatim: answers from your documents, every claim with a verified verbatim quote."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")


# -- weaviate ------------------------------------------------------------------------------------


@main.group()
def weaviate() -> None:
    """The Weaviate server that Weaviate Embedded runs."""


@weaviate.command("install")
def weaviate_install() -> None:
    """Build the pinned Weaviate server with Go, unless it is already installed (takes minutes once)."""
    settings = _load_settings()
    config = settings.weaviate_config()
    err = Console(stderr=True)
    try:
        with err.status(f"building Weaviate {config.version} from its Go module (a few minutes, once)…"):
            path, built = install_server(config.binary_dir, config.version)
    except ServerInstallError as error:
        _fail(str(error))
    click.echo(f"{'built' if built else 'already installed'}: Weaviate {config.version} at {path}")


# -- ingest --------------------------------------------------------------------------------------


@main.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (summary and failures); no progress bar.")
@click.option("--rebuild", is_flag=True, help="Drop the whole index first (after changing VERBATIM_EMBEDDER).")
@_run
async def ingest_command(paths: tuple[Path, ...], as_json: bool, rebuild: bool) -> None:
    """Index files and folders (.md .txt .html .pdf .jsonl). Unchanged documents are skipped."""
    settings = _load_settings()
    err = Console(stderr=True)
    show_progress = not as_json and err.is_terminal
    limits = IngestLimits(max_file_bytes=settings.max_file_bytes, max_document_chars=settings.max_document_chars)
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                        TextColumn("{task.completed} documents"), TimeElapsedColumn(),
                        console=err, disable=not show_progress, transient=True)

    async with open_retrieval(settings, create=True, rebuild=rebuild) as r:
        with progress:
            task = progress.add_task("ingesting", total=None)

            def on_outcome(outcome: Outcome) -> None:
                progress.update(task, advance=1, description=escape(outcome.source[-50:]))
                if outcome.status is Status.FAILED and not as_json:
                    err.print(f"[red]failed[/red] {escape(outcome.source)}: {escape(outcome.message or '')}",
                              highlight=False, soft_wrap=True)

            report = await ingest(load_paths(paths, limits), store=r.store, embedder=r.embedder,
                                  chunking=settings.chunking_config(), on_outcome=on_outcome)
    _print_ingest_report(report, as_json)
    if report.failures:
        sys.exit(1)


def _print_ingest_report(report: IngestReport, as_json: bool) -> None:
    summary = report.summary()
    if as_json:
        click.echo(json.dumps({
            "summary": summary,
            "failures": [{"source": o.source, "document_id": o.document_id, "message": o.message} for o in report.failures],
        }, ensure_ascii=False))
        return
    click.echo(", ".join(f"{k} {v}" for k, v in summary.items() if k != "chunks") + f" ({summary['chunks']} chunks written)")


# -- search --------------------------------------------------------------------------------------


@main.command("search")
@click.argument("query", required=False)
@click.option("--queries", "queries_file", type=click.Path(path_type=Path, dir_okay=False),
              help="A JSONL file of {id, query} lines: one JSON object out per line.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: {id, results: [...]} per query.")
@click.option("--channel", help="Search as this Slack channel id sees the documents (default: public documents only).")
@click.option("-k", "--limit", type=click.IntRange(1, 1000), help="How many results (default: SEARCH_LIMIT).")
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "vector"]), default="hybrid", hidden=True)
@_run
async def search_command(query: str | None, queries_file: Path | None, as_json: bool, channel: str | None,
                         limit: int | None, mode: str) -> None:
    """Hybrid search (BM25 + vectors) over the indexed chunks."""
    if (query is None) == (queries_file is None):
        _fail("give either a QUERY or --queries FILE.jsonl", code=2)
    settings = _load_settings()
    if queries_file is not None:
        queries, bad = _read_queries(queries_file)
    else:
        queries, bad = [("query", query or "")], 0
    as_json = as_json or queries_file is not None and not sys.stdout.isatty()
    async with open_retrieval(settings) as r:
        for query_id, text in queries:
            result = await search(text, store=r.store, embedder=r.embedder, config=settings.search_config(),
                                  channel=channel, limit=limit or settings.search_limit, mode=mode)  # type: ignore[arg-type]
            _print_search(query_id, result, as_json)
    if bad:
        sys.exit(1)


def _read_queries(path: Path) -> tuple[list[tuple[str, str]], int]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        _fail(f"{path}: cannot read the queries file ({type(error).__name__}): it must be UTF-8 JSONL")
    queries: list[tuple[str, str]] = []
    bad = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            item = None
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            click.echo(f"error: {path}:{number}: expected {{\"id\": ..., \"query\": \"...\"}}; line skipped", err=True)
            bad += 1
            continue
        queries.append((str(item.get("id", number)), item["query"]))
    return queries, bad


def _print_search(query_id: str, result: SearchResult, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"id": query_id, "results": [
            {"chunk_id": h.chunk.chunk_id, "document_id": h.chunk.document_id, "title": h.chunk.title,
             "section": h.chunk.section, "page": h.chunk.page, "version": h.chunk.version, "url": h.chunk.url,
             "text": h.chunk.text, "score": round(h.score, 6)}
            for h in result.hits
        ]}, ensure_ascii=False))
        return
    out = Console()
    if not result.hits:
        out.print(f"no results for {escape(result.query)!s}")
        return
    for hit in result.hits:
        c = hit.chunk
        where = " › ".join(x for x in (c.title, c.section or "") if x)
        extra = "".join([f", p. {c.page}" if c.page is not None else "", f", version {c.version}" if c.version else ""])
        out.print(f"[bold]{hit.rank}.[/bold] {escape(where)}{escape(extra)}  [dim]score {hit.score:.3f}[/dim]")
        excerpt = " ".join(c.text.split())
        out.print(f"   {escape(excerpt[:300])}{'…' if len(excerpt) > 300 else ''}", highlight=False)
        if c.url:
            out.print(f"   [dim]{escape(c.url)}[/dim]")
