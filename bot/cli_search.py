"""``verbatim search``: hybrid search over the indexed chunks, for people (rich) or machines (JSON lines)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from bot.cli_support import async_command, fail, load_settings, read_jsonl
from bot.runtime.retrieval import open_retrieval
from retrieval.errors import RetrievalError
from retrieval.search import SearchResult, search

_run = async_command({RetrievalError: 1})


@click.command("search")
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
