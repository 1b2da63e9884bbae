"""The ``verbatim`` command: one group, ``--json`` for machines, a rich terminal for people.

Domain errors become one line on stderr and a non-zero exit here, and only here:
exit 0 = done; 1 = something failed (a file not ingested, Weaviate unreachable …); 2 = bad usage.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from bot.answer.ask import Asked, Origin, Recorder, ask
from bot.answer.render import ask_json, citations
from bot.answer.service import AnswerDeps, AnswerResult
from bot.answer.types import Question, Turn
from bot.cli_sources import documents, sources, sync_command
from bot.cli_support import (
    async_command,
    embed_cores,
    fail,
    load_settings,
    outcome_printer,
    read_jsonl,
    say_cores,
    stop_requested,
    workers_option,
)
from bot.db_cli import db
from bot.log_format import CLI_FORMAT, configure_logging
from bot.review.cli import review
from bot.runtime import Storage, build_answer_deps, open_retrieval, open_storage
from bot.serve import serve_command
from retrieval.errors import RetrievalError
from retrieval.ingest import FirstBatch, IngestLimits, IngestReport, ingest, load_paths
from retrieval.loaders import count_documents
from retrieval.search import SearchResult, search
from retrieval.weaviate_install import ServerInstallError, install_server
from storage.errors import StorageError
from storage.records import Source

_EXPECTED_ERRORS = (RetrievalError, StorageError)


_run = async_command({error: 1 for error in _EXPECTED_ERRORS})


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="verbatim", message="verbatim %(version)s")
@click.option("-v", "--verbose", is_flag=True, help="Log what happens to stderr.")
def main(verbose: bool) -> None:
    """Verbatim: answers from your documents, every claim with a verified verbatim quote."""
    # Named, so that `serve` replaces this handler with its own (LOG_FORMAT) instead of adding a second one.
    configure_logging("INFO" if verbose else "WARNING", text_format=CLI_FORMAT)


main.add_command(review)
main.add_command(serve_command)
main.add_command(sync_command)
main.add_command(documents)
main.add_command(sources)
main.add_command(db)


# -- weaviate ------------------------------------------------------------------------------------


@main.group()
def weaviate() -> None:
    """The Weaviate server that Weaviate Embedded runs."""


@weaviate.command("install")
def weaviate_install() -> None:
    """Build the pinned Weaviate server with Go, unless it is already installed (takes minutes once)."""
    settings = load_settings()
    config = settings.weaviate_config()
    err = Console(stderr=True)
    try:
        with err.status(f"building Weaviate {config.version} from its Go module (a few minutes, once)…"):
            path, built = install_server(config.binary_dir, config.version)
    except ServerInstallError as error:
        fail(str(error))
    click.echo(f"{'built' if built else 'already installed'}: Weaviate {config.version} at {path}")


# -- ingest --------------------------------------------------------------------------------------


@main.command("ingest")
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
        fail("give either a QUERY or --queries FILE.jsonl", code=2)
    settings = load_settings()
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
    def problem(item: object) -> str | None:
        query = item.get("query") if isinstance(item, dict) else None
        return None if isinstance(query, str) and query.strip() else 'expected {"id": ..., "query": "..."}'

    lines, bad = read_jsonl(path, "queries", problem)
    return [(str(item.get("id", number)), item["query"]) for number, item in lines], bad


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


# -- ask / eval ----------------------------------------------------------------------------------


async def _ask(question: Question, deps: AnswerDeps, db: Storage, source: Source) -> tuple[dict, Asked]:
    """Answer and record one question through the one entry point; the ``ask --json`` object and the outcome."""
    asked = await ask(question, deps, Recorder(db.sessions, db.journal), Origin(source))
    return ask_json(asked), asked


@main.command("ask")
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON object (the `ask --json` contract).")
@click.option("--channel", help="Answer as in this Slack channel: only documents visible there (default: public only).")
@_run
async def ask_command(question: str, as_json: bool, channel: str | None) -> None:
    """Answer one question from the documents, every claim with a verified verbatim quote."""
    if not question.strip():
        fail("the question is empty", code=2)
    settings = load_settings()
    async with open_retrieval(settings) as r, open_storage(settings) as db:
        payload, asked = await _ask(Question(question, channel), build_answer_deps(settings, r, db.sessions), db,
                              "cli")
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False))
    else:
        _print_answer(payload, asked.result)
    if payload["status"] == "error":
        # Why is in the log line above (stderr) and in the exchange record; not in the answer or the JSON.
        fail(f"the question could not be answered (exchange {payload['exchange_id']}; see the log above)")
    if not asked.recorded:
        fail("the exchange could not be written to the database nor to the journal (see the log above)")


def _print_answer(payload: dict, result: AnswerResult | None) -> None:
    out = Console()
    out.print(escape(str(payload["answer"])), highlight=False, soft_wrap=True)
    if result is not None:
        for view in citations(result):
            if view.source.chunk.url:
                out.print(f"[dim]  {view.id}: {escape(view.source.chunk.url)}[/dim]", highlight=False)
    out.print(f"[dim]exchange {payload['exchange_id']} · {payload['timings_ms'].get('total', 0):.0f} ms[/dim]")


@main.command("eval")
@click.argument("questions_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", "out_file", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Where to write one `ask --json` object (with its id) per question.")
@_run
async def eval_command(questions_file: Path, out_file: Path) -> None:
    """Answer every question of a JSONL file ({id, question, history?, channel?}) and summarise."""
    settings = load_settings()
    questions, bad = _read_eval_questions(questions_file)
    results: list[dict] = []
    rejected = 0
    try:
        async with open_retrieval(settings) as r, open_storage(settings) as db:
            deps = build_answer_deps(settings, r, db.sessions)
            with out_file.open("w", encoding="utf-8") as out:
                for question_id, question in questions:
                    payload, asked = await _ask(question, deps, db, "eval")
                    if stop_requested():  # stopped while answering: this answer is the interruption's, not kept
                        raise asyncio.CancelledError
                    rejected += len(asked.result.outcome.rejected) if asked.result is not None else 0
                    payload = {"id": question_id} | payload
                    out.write(json.dumps(payload, ensure_ascii=False) + "\n")
                    out.flush()  # a line at a time: a stopped eval keeps every answer it wrote
                    results.append(payload)
            shown = {c["chunk_id"] for p in results for c in p["citations"] + p["nearest"]}
            chunks = await r.store.get_chunks(sorted(shown))
    finally:
        if stop_requested():  # Ctrl-C or SIGTERM: what was answered, once what it started is stopped
            click.echo(f"stopped: {len(results)} of {len(questions)} questions answered, their lines in {out_file}; "
                       f"{len(questions) - len(results)} not answered and no summary: run it again for all of them",
                       err=True)
    summary = eval_summary(results, rejected, {cid: c.text for cid, c in chunks.items()})
    summary["bad_lines"] = bad
    click.echo(json.dumps(summary, ensure_ascii=False, indent=1))
    if bad or summary["quote_verbatim_rate"] not in (None, 1.0):
        sys.exit(1)


def eval_summary(results: list[dict], rejected: int, chunk_texts: dict[str, str]) -> dict[str, object]:
    """The support team's metrics first: no-support share and wrong-quote share; then the rest."""
    n = len(results)
    by_status = {s: sum(1 for p in results if p["status"] == s) for s in ("answered", "no_support", "error")}
    shown = [c for p in results for c in p["citations"]]
    verbatim = [c["exact_quote"] in chunk_texts.get(c["chunk_id"], "") for c in shown]
    totals = sorted(float(p["timings_ms"].get("total", 0.0)) for p in results if p["timings_ms"])

    def share(k: int, of: int) -> float | None:
        return round(k / of, 4) if of else None

    def pct(q: float) -> float | None:
        return round(totals[max(0, min(len(totals) - 1, -(-len(totals) * q // 100) - 1))], 1) if totals else None

    return {
        "questions": n,
        "no_support_rate": share(by_status["no_support"], n),
        "wrong_quote_rate": share(rejected, rejected + len(shown)),
        "answered": by_status["answered"], "no_support": by_status["no_support"], "error": by_status["error"],
        "quotes_shown": len(shown),
        "quote_verbatim_rate": share(sum(verbatim), len(verbatim)),
        "latency_ms_p50": pct(50), "latency_ms_p95": pct(95),
    }


def _read_eval_questions(path: Path) -> tuple[list[tuple[str, Question]], int]:
    lines, bad = read_jsonl(path, "questions", _eval_line_problem)
    questions = []
    for number, item in lines:
        history = tuple(
            Turn("user", h) if isinstance(h, str) else Turn(str(h.get("role", "user")), str(h.get("text", "")))
            for h in item.get("history") or []
        )
        questions.append((str(item.get("id", number)), Question(item["question"], item.get("channel"), history)))
    return questions, bad


def _eval_line_problem(item: object) -> str | None:
    assert isinstance(item, dict)
    if not isinstance(item.get("question"), str) or not item["question"].strip():
        return '"question" must be a non-empty string'
    history = item.get("history")
    if history is not None and (not isinstance(history, list) or not all(
            isinstance(h, str) or (isinstance(h, dict) and isinstance(h.get("text"), str)) for h in history)):
        return '"history" must be a list of strings or {"role", "text"} objects'
    if item.get("channel") is not None and not isinstance(item["channel"], str):
        return '"channel" must be a string'
    return None
