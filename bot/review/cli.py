"""`verbatim review`: the review desk on the terminal — the queue, one exchange, resolving flags, exports, stats,
coverage gaps, and writing again what the database refused.

Every command has `--json` (one object; JSON lines for `list`) and a rich rendering for people. Errors are
one line on stderr: exit 1 when something is wrong with the log or the input names nothing (a malformed or
unknown id, a database that does not connect or needs `alembic upgrade head`, a requeued exchange not written),
exit 2 for bad usage (a `--since` in no accepted form, an unusable setting, `requeue` with neither ids nor `--all`). `verbatim review` runs it (named in
`bot/cli.py`'s `COMMANDS`), and so does `python -m bot.review`.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from bot.cli_support import PLAIN_WIDTH, async_command, fail, load_settings
from bot.review import desk
from bot.review.errors import InvalidSince, ReviewError
from bot.review.formatting import (
    SINCE_FORMS,
    moment,
    parse_exchange_id,
    parse_flag_id,
    parse_since,
    resolution_label,
)
from bot.review.gaps import report_to_json
from bot.review.gaps_text import gaps_heading, gaps_table
from bot.review.lookup import IndexUnavailable
from bot.review.model import flag_to_json, review_to_json
from bot.review.queries import review_queue
from bot.review.quotes import DEFAULT_CONTEXT_CHARS
from bot.runtime.retrieval import open_gaps_embedder
from bot.runtime.review import open_chunk_lookup, open_learning
from bot.runtime.storage import open_log
from bot.review.suppressed import ChunkState, chunk_to_json, plural, suppression_to_json
from bot.review.text import (
    breakdown_table,
    dead_letter_to_json,
    dead_letters_table,
    headline,
    metrics_to_json,
    queue_table,
    review_lines,
    summary_to_json,
    unavailable_line,
)
from storage.errors import StorageError
from storage.journal import Journal
from storage.records import RESOLUTIONS
from storage.stats import channel_stats, daily_stats, window_stats

_run = async_command({InvalidSince: 2, StorageError: 1, ReviewError: 1})


def _console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, highlight=False, width=None if stream.isatty() else PLAIN_WIDTH)


def _since(text: str | None) -> datetime | None:
    """The start of a --since window (None: no lower bound)."""
    return None if text is None else parse_since(text, datetime.now(UTC))


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False))


SINCE_HELP = f"Only exchanges since then: {SINCE_FORMS}."


@click.group("review", context_settings={"help_option_names": ["-h", "--help"]})
def review() -> None:
    """The review desk: the queue of exchanges to check, each quote in its chunk, flags, trends."""


# -- list ----------------------------------------------------------------------------------------


@review.command("list")
@click.option("--flagged", is_flag=True, help="Exchanges with a lead's flag on the reply.")
@click.option("--no-support", is_flag=True, help="Exchanges answered with 'no support found'.")
@click.option("--errors", is_flag=True, help="Exchanges that ended in an error reply, and those the database "
              "refused (set aside by the journal).")
@click.option("--handed-off", is_flag=True, help="Exchanges someone handed off to a person (\"Ask a person\").")
@click.option("--all", "everything", is_flag=True, help="Every exchange, not only the review queue.")
@click.option("--since", help=SINCE_HELP)
@click.option("--channel", help="Only this Slack channel id.")
@click.option("-n", "--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@_run
async def list_command(flagged: bool, no_support: bool, errors: bool, handed_off: bool, everything: bool,
                       since: str | None, channel: str | None, limit: int, as_json: bool) -> None:
    """The review queue, newest first: flagged, asker-unhappy, handed-off, no-support and error exchanges, and
    questions stuck pending (each option narrows to it); then the exchanges the database refused, kept in the
    journal's dead-letter file."""
    start = _since(since)
    settings = load_settings()
    async with open_log(settings) as sessions, sessions() as session:
        queue = await review_queue(session, flagged=flagged, no_support=no_support, errors=errors,
                                   handed_off=handed_off, everything=everything, channel_id=channel, since=start,
                                   limit=limit)
    journal = Journal.in_home(settings.verbatim_home)
    refused = []
    if not everything and (errors or not (flagged or no_support or handed_off)):  # --errors, or the default queue
        # Not in the log at all: the journal's dead-letter file keeps them.
        letters = await asyncio.to_thread(journal.dead_letters)
        refused = sorted((letter for letter in letters
                          if (channel is None or letter.record.channel_id == channel)
                          and (start is None or letter.record.created_at >= start)),
                         key=lambda letter: (letter.record.created_at, letter.record.id), reverse=True)[:limit]
    if as_json:
        for summary in queue:
            _echo_json(summary_to_json(summary))
        for letter in refused:
            _echo_json(dead_letter_to_json(letter))
        return
    if not queue and not refused:
        click.echo("nothing to review: no exchange matches")
        return
    console = _console()
    if queue:
        console.print(queue_table(queue))
    if refused:
        console.print(f"{plural(len(refused), 'exchange')} the database refused, not in the log: set aside in "
                      f"{journal.dead_path}", soft_wrap=True, markup=False)
        console.print(dead_letters_table(refused))


# -- show ----------------------------------------------------------------------------------------


@review.command("show")
@click.argument("exchange_id")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option("--context", "context_chars", type=click.IntRange(0, 5000), default=DEFAULT_CONTEXT_CHARS,
              show_default=True, help="Characters of chunk text shown on each side of a quote.")
@click.option("--no-index", is_flag=True, help="Do not read the chunk index (Weaviate): the log only.")
@_run
async def show_command(exchange_id: str, as_json: bool, context_chars: int, no_index: bool) -> None:
    """One exchange: question, answer, each quote inside its chunk, stale versions, rejected quotes, flags."""
    exchange_id = parse_exchange_id(exchange_id)
    settings = load_settings()
    async with open_log(settings) as sessions:
        record, flags = await desk.read_exchange(sessions, exchange_id)
        handling = await desk.read_handling(sessions, exchange_id)
    if no_index:
        result = await desk.review_exchange(record, flags, IndexUnavailable("not read: --no-index"),
                                            context_chars=context_chars, handling=handling)
    else:
        async with open_chunk_lookup(settings) as lookup:
            result = await desk.review_exchange(record, flags, lookup, context_chars=context_chars,
                                                handling=handling)
    if as_json:
        _echo_json(review_to_json(result))
        return
    console = _console()
    note = unavailable_line(result)
    if note is not None:
        console.print(note, soft_wrap=True)  # one line, however long: it is the reason, not decoration
    console.print(review_lines(result, plain=not console.is_terminal))


# -- resolve -------------------------------------------------------------------------------------


def _default_reviewer() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return os.environ.get("USER") or "cli"


@review.command("resolve")
@click.argument("exchange_id")
@click.option("--flag", "flag_id", help="Resolve only this flag (an id from `show`); default: every open flag.")
@click.option("--as", "resolution", type=click.Choice(RESOLUTIONS), required=True, help="The verdict.")
@click.option("--note", help="Why: what was wrong, or what was changed in the documents.")
@click.option("--by", "by", help="Who resolved it (default: your user name).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with the resolved flags.")
@_run
async def resolve_command(exchange_id: str, flag_id: str | None, resolution: str, note: str | None,
                          by: str | None, as_json: bool) -> None:
    """Close an exchange's open flags (or one flag) with a verdict: confirmed_bad, not_a_problem, fixed_in_docs."""
    exchange_id = parse_exchange_id(exchange_id)
    flag = parse_flag_id(flag_id) if flag_id is not None else None
    settings = load_settings()
    async with open_log(settings) as sessions, open_learning(settings) as learning:
        resolved = await desk.resolve_flags(
            sessions, exchange_id, flag_id=flag, resolution=resolution,  # type: ignore[arg-type]
            note=note, by=by or _default_reviewer(), at=datetime.now(UTC), learning=learning,
        )
        suppressed = await desk.suppressions_of(sessions, exchange_id)
    if as_json:
        _echo_json({"exchange_id": exchange_id, "resolved": [flag_to_json(item) for item in resolved],
                    "suppressed": [suppression_to_json(item) for item in suppressed]})
        return
    for item in resolved:
        click.echo(f"resolved flag {item.id} on {item.label or 'the whole answer'} (flagged by {item.user_id}) as "
                   f"{resolution_label(item.resolution)}")
    if suppressed:
        click.echo(f"{plural(len(suppressed), 'citation')} suppressed for this question and near-duplicates: "
                   + ", ".join(f"{item.document_id} (chunk {item.chunk_id})" for item in suppressed))


# -- chunks ------------------------------------------------------------------------------------


@review.command("chunks")
@click.option("--min-questions", type=click.IntRange(1, 10_000), default=2, show_default=True,
              help="List a chunk once leads confirmed it bad for this many different questions.")
@click.option("--all", "everything", is_flag=True, help="Also chunks whose document has a new version since.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@_run
async def chunks_command(min_questions: int, everything: bool, as_json: bool) -> None:
    """Chunks leads confirmed bad for several different questions: what the documents' owners should fix."""
    settings = load_settings()
    async with open_log(settings) as sessions, open_chunk_lookup(settings) as lookup:
        found = await desk.suppressed_chunks(sessions, lookup, min_questions=min_questions)
    shown = [c for c in found if everything or c.state is not ChunkState.CLEARED]
    if as_json:
        for chunk in shown:
            _echo_json(chunk_to_json(chunk))
        return
    if not shown:
        click.echo(f"no chunk confirmed bad for {plural(min_questions, 'different question')} or more")
        return
    for chunk in shown:
        version = f" version {chunk.version}" if chunk.version else ""
        click.echo(f"{chunk.document_id}{version}, chunk {chunk.chunk_id}: {chunk.state.value}, confirmed bad for "
                   f"{plural(len(chunk.questions), 'question')}")
        for question in chunk.questions:
            click.echo(f"  - {question}")


# -- recheck -----------------------------------------------------------------------------------


@review.command("recheck")
@click.option("--all-flagged", is_flag=True, help="Every question a lead's flag is on, not only resolved ones.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: a summary and each question's result.")
@_run
async def recheck_command(all_flagged: bool, as_json: bool) -> None:
    """Ask again every question resolved fixed_in_docs or confirmed_bad (or every flagged one) against today's
    index; exit 1 when a citation a lead confirmed bad comes back."""
    from bot.answer.ask import Recorder  # the answer path only for this command
    from bot.review.recheck import recheck, recheck_to_json
    from bot.runtime.answer import build_answer_deps
    from bot.runtime.retrieval import open_retrieval

    settings = load_settings()
    # One engine on the log: the questions are read, the suppressions cached and the new answers recorded through
    # the same sessions (SQLite: one connection per process).
    async with open_log(settings) as sessions, open_retrieval(settings) as retrieval:
        deps = build_answer_deps(settings, retrieval, sessions)
        recorder = Recorder(sessions, Journal.in_home(settings.verbatim_home))
        results = await recheck(sessions, deps, recorder, all_flagged=all_flagged)
    came_back = [r for r in results if r.came_back]
    summary = {"rechecked": len(results), "changed": sum(r.changed for r in results),
               "still_cite_flagged": sum(bool(r.still_cites) for r in results),
               "no_support": sum(r.no_support for r in results), "confirmed_bad_back": len(came_back)}
    if as_json:
        _echo_json(summary | {"results": [recheck_to_json(r) for r in results]})
    else:
        for r in results:
            marks = [m for m, on in (("CONFIRMED BAD BACK", r.came_back), ("still cites the flagged chunk",
                     bool(r.still_cites) and not r.came_back), ("now no support", r.no_support),
                     ("changed", r.changed), ("unchanged", not r.changed)) if on]
            click.echo(f"{r.before.id} [{', '.join(r.verdicts)}] {r.before.outcome} -> {r.after.outcome}: "
                       f"{'; '.join(marks)}  ({r.before.question})")
        click.echo(f"rechecked {plural(len(results), 'question')}: {summary['changed']} changed, "
                   f"{summary['still_cite_flagged']} still cite a flagged chunk, {summary['no_support']} now no "
                   f"support, {len(came_back)} confirmed-bad citations back")
    if came_back:
        fail(f"{plural(len(came_back), 'confirmed-bad citation')} came back: "
             + ", ".join(r.before.id for r in came_back))


# -- requeue -------------------------------------------------------------------------------------


@review.command("requeue")
@click.argument("exchange_ids", nargs=-1, metavar="[ID]...")
@click.option("--all", "everything", is_flag=True, help="Every exchange the database refused.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the ids requeued, written, refused again "
              "and still waiting.")
@_run
async def requeue_command(exchange_ids: tuple[str, ...], everything: bool, as_json: bool) -> None:
    """Write the exchanges the database refused (`list --errors`) again, once the cause is fixed: back into the
    journal in the order they were set aside, then replayed at once; one refused again is set aside again. Exit 0
    when every one is in the log, 1 when one was refused again or still waits in the journal."""
    if everything == bool(exchange_ids):
        fail("name the exchanges to requeue (the ids `verbatim review list --errors` shows) or pass --all, not both",
             code=2)
    wanted = {parse_exchange_id(exchange_id) for exchange_id in exchange_ids}
    settings = load_settings()
    journal = Journal.in_home(settings.verbatim_home)
    async with open_log(settings) as sessions:  # a log that cannot take them stops the command before they move
        if wanted:
            set_aside = {letter.record.id for letter in await asyncio.to_thread(journal.dead_letters)}
            missing = sorted(wanted - set_aside)
            if missing:
                raise ReviewError(f"no exchange with id {missing[0]} is set aside: `verbatim review list --errors` "
                                  "shows the ones that are")
        moved = [record.id for record in await asyncio.to_thread(journal.requeue, wanted or None)]
        if moved:
            await journal.replay(sessions)
    refused = {letter.record.id for letter in await asyncio.to_thread(journal.dead_letters)}
    waiting = set(await asyncio.to_thread(journal.waiting_ids))
    outcome = {"requeued": moved, "written": [i for i in moved if i not in refused and i not in waiting],
               "refused_again": [i for i in moved if i in refused], "waiting": [i for i in moved if i in waiting]}
    if as_json:
        _echo_json(outcome)
    elif not moved:
        click.echo("nothing to requeue: no exchange is set aside")
    else:
        click.echo(f"requeued {plural(len(moved), 'exchange')}: {len(outcome['written'])} written to the log")
        if outcome["refused_again"]:
            click.echo(f"{plural(len(outcome['refused_again']), 'exchange')} refused again, set aside in "
                       f"{journal.dead_path}: {', '.join(outcome['refused_again'])}")
        if outcome["waiting"]:
            click.echo(f"{plural(len(outcome['waiting']), 'exchange')} still waiting in the journal (the database "
                       f"went away, or another process is replaying it; `verbatim serve` writes them when it can): "
                       f"{', '.join(outcome['waiting'])}")
    not_in_log = outcome["refused_again"] + outcome["waiting"]
    if not_in_log:
        fail(f"{len(not_in_log)} of {plural(len(moved), 'requeued exchange')} not in the log: "
             + ", ".join(not_in_log))


# -- export --------------------------------------------------------------------------------------


@review.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path, allow_dash=True))
@click.option("--flagged", is_flag=True, help="Flagged exchanges (the default when nothing else is chosen).")
@click.option("--no-support", is_flag=True, help="Also exchanges answered with 'no support found'.")
@click.option("--errors", is_flag=True, help="Also exchanges that ended in an error.")
@click.option("--since", help=SINCE_HELP)
@click.option("--channel", help="Only this Slack channel id.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of a sentence.")
@_run
async def export_command(file: Path, flagged: bool, no_support: bool, errors: bool, since: str | None,
                         channel: str | None, as_json: bool) -> None:
    """Write flagged exchanges as eval questions ({id, question, history, channel} per line) to FILE ('-': stdout).

    Grows a regression set for `verbatim eval`. Flags every lead resolved as not_a_problem are left out.
    """
    start = _since(since)
    async with open_log(load_settings()) as sessions:
        lines = await desk.export_questions(
            sessions, flagged=flagged or not (no_support or errors), no_support=no_support, errors=errors,
            channel_id=channel, since=start,
        )
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if str(file) == "-":
        click.echo(text, nl=False)
    else:
        _write_atomically(file, text)
    if as_json:
        click.echo(json.dumps({"exported": len(lines), "file": str(file)}), err=str(file) == "-")
    else:
        noun = "question" if len(lines) == 1 else "questions"
        click.echo(f"exported {len(lines)} {noun} to {file}", err=str(file) == "-")


def _write_atomically(path: Path, text: str) -> None:
    """Write the whole file or nothing: a half-written regression set would silently lose cases."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise ReviewError(f"cannot write {path}: {error.strerror or type(error).__name__}") from error


# -- stats ---------------------------------------------------------------------------------------


@review.command("stats")
@click.option("--since", default="30d", show_default=True, help=SINCE_HELP)
@click.option("--by", "by", type=click.Choice(["day", "channel"]), default="day", show_default=True)
@click.option("--channel", help="Only this Slack channel id.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: overall metrics and the breakdown.")
@_run
async def stats_command(since: str, by: str, channel: str | None, as_json: bool) -> None:
    """The share of answers without support and of wrong citations first; then volume, errors, latency."""
    start = parse_since(since, datetime.now(UTC))
    async with open_log(load_settings()) as sessions, sessions() as session:
        overall = await window_stats(session, since=start, channel_id=channel)
        if by == "day":
            rows: list[Any] = await daily_stats(session, since=start, channel_id=channel)
        else:
            rows = [row for row in await channel_stats(session, since=start)
                    if channel is None or row.channel_id == channel]
    if as_json:
        _echo_json({"since": start.isoformat(), "channel": channel, "overall": metrics_to_json(overall), "by": by,
                    "rows": [metrics_to_json(row) for row in rows]})
        return
    console = _console()
    scope = f"channel {channel}" if channel else "all channels"
    console.print(Text(f"Since {moment(start)}, {scope}", style="bold"))
    console.print(headline(overall))
    if rows:
        console.print(Text(f"\nBy {by}", style="bold"))
        console.print(breakdown_table(rows, by))


# -- gaps ----------------------------------------------------------------------------------------


@review.command("gaps")
@click.option("--since", default="30d", show_default=True, help=SINCE_HELP)
@click.option("--channel", help="Only this Slack channel id.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the window and its topics.")
@_run
async def gaps_command(since: str, channel: str | None, as_json: bool) -> None:
    """What the documents are missing: no-support questions grouped into topics, most people first."""
    now = datetime.now(UTC)
    start = parse_since(since, now)
    settings = load_settings()
    async with open_log(settings) as sessions, open_gaps_embedder(settings) as embedder:
        report = await desk.coverage_gaps(sessions, embedder, since=start, channel_id=channel, now=now)
    if as_json:
        _echo_json(report_to_json(report))
        return
    if not report.topics:
        click.echo(f"no gaps: no no-support question since {moment(start)}" + (f" in {channel}" if channel else ""))
        return
    console = _console()
    console.print(Text(gaps_heading(report), style="bold"))
    console.print(gaps_table(report))


# -- serve ---------------------------------------------------------------------------------------


@review.command("serve")
@click.option("--host", help="Bind address (default: REVIEW_HOST, 127.0.0.1). Any other needs REVIEW_TOKEN.")
@click.option("--port", type=click.IntRange(0, 65535), help="Port (default: REVIEW_PORT; 0 picks a free one).")
def serve_command(host: str | None, port: int | None) -> None:
    """The review desk as a web page for leads (server-rendered; loopback only unless REVIEW_TOKEN is set)."""
    from bot.review.web import BindRefused, serve  # aiohttp only for this command

    settings = load_settings()
    token = settings.review_token.get_secret_value() if settings.review_token is not None else None
    try:
        asyncio.run(serve(settings, host=host or settings.review_host,
                          port=settings.review_port if port is None else port, token=token))
    except BindRefused as error:
        fail(str(error), code=2)
    except (StorageError, ReviewError, OSError) as error:
        fail(str(error))
    except KeyboardInterrupt:
        pass
