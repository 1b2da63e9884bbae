"""``verbatim ask`` and ``verbatim eval``: questions answered and recorded through the one entry point."""

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
from bot.cli_support import async_command, fail, load_settings, read_jsonl, stop_requested
from bot.runtime.answer import build_answer_deps
from bot.runtime.retrieval import open_retrieval
from bot.runtime.storage import Storage, open_storage
from retrieval.errors import RetrievalError
from storage.errors import StorageError
from storage.records import Source

_run = async_command({RetrievalError: 1, StorageError: 1})


async def _ask(question: Question, deps: AnswerDeps, db: Storage, source: Source) -> tuple[dict, Asked]:
    """Answer and record one question through the one entry point; the ``ask --json`` object and the outcome."""
    asked = await ask(question, deps, Recorder(db.sessions, db.journal), Origin(source))
    return ask_json(asked), asked


@click.command("ask")
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


@click.command("eval")
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
