"""What `verbatim review` prints for people: rich tables and text built from records. Pure: no I/O.

Every value that comes from a user or a document goes into a `rich.text.Text` (never into markup), so a
question containing "[bold]" prints as typed. A quote is shown inside its chunk's text, highlighted on a
terminal and, where styles are lost (a pipe, a file), between ``[[`` and ``]]`` so it still stands out.
The JSON forms of the same data are here too, so `--json` and the tables cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from bot.review.formatting import (
    flags_label,
    milliseconds,
    moment,
    one_line,
    outcome_label,
    percent,
    ratio,
    resolution_label,
    score,
)
from bot.review.judged import judge_heading, judged_lines
from bot.review.model import CitationView, ExchangeReview, VersionState, handling_lines
from bot.review.suppressed import suppressed_line
from storage.journal import DeadLetter
from storage.records import ChannelStats, DayStats, ExchangeSummary, FlagRecord, Metrics

OUTCOME_STYLES = {"answered": "green", "no_support": "yellow", "error": "red", "pending": "dim", "not_answered": "yellow"}
QUOTE_STYLE = "bold black on yellow"
PLAIN_OPEN, PLAIN_CLOSE = "[[", "]]"
TIMING_ORDER = ("search", "rerank", "compose", "verify", "total")


# -- list ----------------------------------------------------------------------------------------


def summary_to_json(summary: ExchangeSummary) -> dict[str, Any]:
    """One `list --json` line."""
    data = asdict(summary)
    data["created_at"] = summary.created_at.isoformat()
    return data


def queue_table(summaries: Sequence[ExchangeSummary]) -> Table:
    """The review queue: newest first, what happened, and what is waiting for a lead."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("when (UTC)", no_wrap=True)
    table.add_column("exchange", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("channel", no_wrap=True)
    table.add_column("question", overflow="fold", ratio=1)
    table.add_column("quotes", justify="right", no_wrap=True)
    table.add_column("flags", justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    for item in summaries:
        outcome = outcome_label(item.outcome) + (f" ({item.error_class})" if item.error_class else "")
        quotes = f"{item.kept_citations}" + (f" +{item.rejected_citations} rejected" if item.rejected_citations else "")
        flags = flags_label(item.lead_flags, item.unresolved_lead_flags, item.unhappy, item.handed_off)
        table.add_row(
            Text(item.created_at.strftime("%Y-%m-%d %H:%M")), Text(item.id),
            Text(outcome, style=OUTCOME_STYLES.get(item.outcome, "")), Text(item.channel_id or "–"),
            Text(one_line(item.question, 100)), Text(quotes),
            Text(flags, style="red" if item.unresolved_lead_flags or item.unhappy else ""),
            Text(milliseconds(item.total_ms)),
        )
    return table


def dead_letter_to_json(letter: DeadLetter) -> dict[str, Any]:
    """One `list --json` line for an exchange the database refused: a queue line, and why it was set aside."""
    record = letter.record
    summary = ExchangeSummary(
        id=record.id, created_at=record.created_at, source=record.source, outcome=record.outcome,
        question=record.question, channel_id=record.channel_id, user_id=record.user_id, thread_ts=record.thread_ts,
        reply_ts=record.reply_ts, error_class=record.error_class, total_ms=record.total_ms,
        kept_citations=sum(c.kept for c in record.citations),
        rejected_citations=sum(not c.kept for c in record.citations), lead_flags=0, unresolved_lead_flags=0,
    )
    return summary_to_json(summary) | {"set_aside": {
        "error": letter.error, "detail": letter.detail, "attempts": letter.attempts,
        "at": letter.set_aside_at.isoformat()}}


def dead_letters_table(letters: Sequence[DeadLetter]) -> Table:
    """Exchanges the database refused, newest first: what was asked and what the database said."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("when (UTC)", no_wrap=True)
    table.add_column("exchange", no_wrap=True)
    table.add_column("channel", no_wrap=True)
    table.add_column("question", overflow="fold", ratio=1)
    table.add_column("refused", overflow="fold", ratio=1)
    for letter in letters:
        record = letter.record
        table.add_row(
            Text(record.created_at.strftime("%Y-%m-%d %H:%M")), Text(record.id), Text(record.channel_id or "–"),
            Text(one_line(record.question, 100)), Text(f"{letter.error}: {one_line(letter.detail, 100)}", style="red"),
        )
    return table


# -- show ----------------------------------------------------------------------------------------


def version_text(view: CitationView) -> Text:
    """The cited version and what the index says about it now."""
    cited = view.citation.version or "(no version)"
    if view.state is VersionState.CURRENT:
        return Text.assemble(f"version {cited} ", ("(current)", "green"))
    if view.state is VersionState.STALE:
        now = view.indexed_version or "(no version)"
        detail = f"version {now} is indexed now" if now != cited else "the document changed since"
        return Text.assemble(f"version {cited} ", (f"STALE: {detail}", "bold red"))
    if view.state is VersionState.REMOVED:
        return Text.assemble(f"version {cited} ", ("(the document is no longer indexed)", "bold red"))
    return Text(f"version {cited}")


def quote_in_chunk(view: CitationView, *, plain: bool) -> Text:
    """The quote inside its chunk text, with the context around it; the logged quote alone when there is none."""
    if view.excerpt is None:
        return _quote(view.citation.exact_quote, plain)
    part = view.excerpt
    return Text.assemble(
        "…" if part.cut_before else "", _squash(part.before), _quote(part.quote, plain), _squash(part.after),
        "…" if part.cut_after else "",
    )


def _quote(text: str, plain: bool) -> Text:
    shown = _squash(text)
    return Text(f"{PLAIN_OPEN}{shown}{PLAIN_CLOSE}") if plain else Text(shown, style=QUOTE_STYLE)


def _squash(text: str) -> str:
    """Whitespace runs as single spaces, keeping a leading/trailing space (the excerpt's joins)."""
    if not text:
        return ""
    inner = " ".join(text.split())
    return (" " if text[0].isspace() else "") + inner + (" " if text[-1].isspace() and inner else "")


def _source(view: CitationView) -> str:
    c = view.citation
    where = " › ".join(part for part in (c.title or c.document_id, c.section or "") if part)
    page = f", p. {c.page}" if c.page is not None else ""
    return f"{where}{page}"


def _flag_line(flag: FlagRecord) -> Text:
    status = resolution_label(flag.resolution)
    by = f" by {flag.resolved_by}" if flag.resolved_by else ""
    note = f": {flag.resolution_note}" if flag.resolution_note else ""
    return Text.assemble(
        ("⚑ ", "red"), f"flagged by {flag.user_id} (:{flag.reaction}:) {moment(flag.created_at)} — ",
        (status, "red" if flag.resolution is None else "green"), by, note, ("  flag ", "dim"), (flag.id, "dim"),
    )


STALE_LINE = "A newer version of a cited document is indexed: the citations marked STALE quote an older version."
REMOVED_LINE = "A cited document has been removed from the index: the bot no longer answers from it."


def unavailable_line(review: ExchangeReview) -> Text | None:
    """The one line saying the chunk text could not be read (print it with soft_wrap: it must stay one line)."""
    if review.index_unavailable is None:
        return None
    return Text(f"chunk text unavailable: {one_line(review.index_unavailable, 400)}; showing the quotes as logged",
                style="yellow")


def review_lines(review: ExchangeReview, *, plain: bool) -> Group:
    """`verbatim review show`: everything the log holds about one exchange, quotes inside their chunks."""
    ex = review.exchange
    parts: list[RenderableType] = []
    where = " · ".join(x for x in (moment(ex.created_at), ex.source, ex.channel_id and f"channel {ex.channel_id}",
                                   ex.user_id and f"user {ex.user_id}") if x)
    parts.append(Text.assemble(("Exchange ", "bold"), (ex.id, "bold"), "  ", (where, "dim")))
    outcome = Text.assemble("Outcome: ", (outcome_label(ex.outcome), f"bold {OUTCOME_STYLES.get(ex.outcome, '')}"))
    if ex.error_class or ex.error_message:
        outcome.append(f"  {ex.error_class or 'error'}: {one_line(ex.error_message, 300)}")
    parts.append(outcome)
    parts.append(Text.assemble(("Question: ", "bold"), ex.question))
    if ex.query and ex.query != ex.question:
        parts.append(Text.assemble(("Standalone query: ", "bold"), ex.query))
    if ex.answer_text:
        parts.append(Text.assemble(("Answer:\n", "bold"), ex.answer_text))

    for marked, line in ((review.stale, STALE_LINE), (review.removed, REMOVED_LINE)):
        if marked:
            parts.append(Text(line, style="bold red"))
    suppressed = suppressed_line(ex)
    if suppressed is not None:
        parts.append(Text(suppressed, style="bold yellow"))
    for line in handling_lines(review.handling):
        parts.append(Text(line, style="bold"))
    parts.append(Text(f"\nClaims ({len(review.kept)} kept)", style="bold"))
    for view in review.kept:
        parts.extend(_citation_lines(view, plain=plain))
    if review.rejected:
        parts.append(Text(f"\nRejected quotes ({len(review.rejected)})", style="bold"))
        for view in review.rejected:
            parts.extend(_citation_lines(view, plain=plain))

    judged = judged_lines(ex.route, ex.citations)
    if judged:
        parts.append(Text(f"\n{judge_heading(ex.route)}: probability that the sentence answers the question",
                          style="bold"))
        for line in judged:
            parts.append(Text.assemble(f"  {line.probability:.3f}  {line.label:<3} ", (one_line(line.text, 160), ""),
                                       ("  (quoted)" if line.quoted else "", "green")))
    if ex.retrieved:
        parts.append(Text("\nRetrieved chunks", style="bold"))
        parts.append(retrieved_table(review))
    parts.append(Text(f"\nFlags ({len(review.lead_flags)} by leads, {len(review.open_flags)} open)", style="bold"))
    for flag in review.flags:
        line = _flag_line(flag)
        if not flag.is_lead:
            line.append("  (not a lead: context only)", style="dim")
        if flag.removed_at is not None:
            line.append(f"  (reaction removed {moment(flag.removed_at)})", style="dim")
        line.append(f"  [{flag.label or 'whole answer'}]")
        parts.append(line)
    parts.append(Text.assemble(("\nTimings: ", "bold"), timings_text(ex.timings_ms)))
    parts.append(Text.assemble(("Route: ", "bold"), route_text(ex.route, ex.prompt_version, ex.language)))
    return Group(*parts)


def _citation_lines(view: CitationView, *, plain: bool) -> list[RenderableType]:
    c = view.citation
    lines: list[RenderableType] = [Text.assemble((f" {c.label} ", "bold"), c.claim)]
    meta = Text.assemble("    ", _source(view), " · ", version_text(view), style="")
    if c.url:
        meta.append(f" · {c.url}", style="dim")
    lines.append(meta)
    if not c.kept:
        lines.append(Text(f"    rejected: {c.rejection_reason or 'no reason logged'}", style="red"))
    body = Text("    ")
    body.append_text(quote_in_chunk(view, plain=plain))
    lines.append(body)
    if view.note:
        lines.append(Text(f"    ({view.note})", style="dim"))
    for flag in view.flags:
        lines.append(Text.assemble("    ", _flag_line(flag)))
    return lines


def retrieved_table(review: ExchangeReview) -> Table:
    """What the search returned, in rank order, with both scores."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name, justify in (("rank", "right"), ("document", "left"), ("version", "left"), ("chunk", "left"),
                          ("search", "right"), ("rerank", "right")):
        table.add_column(name, justify=justify, no_wrap=name != "document")  # type: ignore[arg-type]
    for chunk in review.exchange.retrieved:
        table.add_row(
            Text(str(chunk.rank)), Text(chunk.title or chunk.document_id), Text(chunk.version or "–"),
            Text(chunk.chunk_id), Text(score(chunk.search_score)), Text(score(chunk.rerank_score)),
        )
    return table


def timings_text(timings: Mapping[str, float]) -> str:
    """Stage timings in the order of the answer path, then any others."""
    names = [name for name in TIMING_ORDER if name in timings] + sorted(set(timings) - set(TIMING_ORDER))
    return " · ".join(f"{name} {milliseconds(float(timings[name]))}" for name in names) or "not measured"


def route_text(route: Mapping[str, Any], prompt_version: str | None, language: str | None) -> str:
    """The components that produced the answer, and the prompt version."""
    items = [f"{key} {value}" for key, value in sorted(route.items()) if key != "judged"]  # shown on its own
    if prompt_version:
        items.append(f"prompt {prompt_version}")
    if language:
        items.append(f"language {language}")
    return " · ".join(items) or "not recorded"


# -- stats ---------------------------------------------------------------------------------------


def metrics_to_json(metrics: Metrics) -> dict[str, Any]:
    """A Metrics record (or DayStats / ChannelStats) as JSON-ready data, with the error rate added."""
    data = asdict(metrics)
    completed = metrics.answered + metrics.no_support + metrics.error
    data["error_rate"] = ratio(metrics.error, completed)
    if isinstance(metrics, DayStats):
        data["day"] = metrics.day.isoformat()
    return data


def headline(metrics: Metrics) -> Table:
    """The two metrics support teams track first, then volume, errors and latency."""
    completed = metrics.answered + metrics.no_support + metrics.error
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim")
    table.add_row("answers without support", percent(metrics.no_support_rate),
                  f"{metrics.no_support} of {completed} completed exchanges")
    table.add_row("handed off to a person", percent(metrics.handoff_rate),
                  f"{metrics.handed_off} of {metrics.questions} questions (\"Ask a person\")")
    table.add_row("deflection", percent(metrics.deflection_rate),
                  f"{metrics.deflected} of {metrics.questions} questions answered, not handed off, no 👎")
    table.add_row("wrong citations", percent(metrics.wrong_citation_rate),
                  f"{metrics.wrong_citations} of {metrics.quotes} quotes "
                  f"({metrics.rejected_quotes} rejected by verification, the rest flagged by leads)")
    table.add_row("volume", str(metrics.exchanges),
                  f"{metrics.answered} answered, {metrics.no_support} no support, {metrics.error} "
                  + ("error" if metrics.error == 1 else "errors")
                  + (f", {metrics.not_answered} not answered (help channels)" if metrics.not_answered else "")
                  + (f", {metrics.pending} pending" if metrics.pending else ""))
    table.add_row("error rate", percent(ratio(metrics.error, completed)), f"{metrics.error} of {completed}")
    table.add_row("latency", f"p50 {milliseconds(metrics.latency_p50_ms)}",
                  f"p95 {milliseconds(metrics.latency_p95_ms)}")
    table.add_row("flagged answers", percent(metrics.flag_rate), f"{metrics.flagged_answers} answers with a lead flag")
    table.add_row("askers unhappy", percent(metrics.unhappy_rate),
                  f"{metrics.unhelpful} 👎, {metrics.helpful} 👍 (feedback buttons)")
    return table


def breakdown_table(rows: Iterable[DayStats | ChannelStats], by: str) -> Table:
    """The same metrics per day or per channel."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column(by, no_wrap=True)
    for name in ("exchanges", "no support", "handed off", "deflection", "wrong citations", "flagged", "errors", "p50",
                 "p95"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        key = row.day.isoformat() if isinstance(row, DayStats) else (row.channel_id or "(outside Slack)")
        completed = row.answered + row.no_support + row.error
        table.add_row(
            Text(key), Text(str(row.exchanges)), Text(percent(row.no_support_rate)), Text(percent(row.handoff_rate)),
            Text(percent(row.deflection_rate)), Text(percent(row.wrong_citation_rate)), Text(percent(row.flag_rate)),
            Text(percent(ratio(row.error, completed))), Text(milliseconds(row.latency_p50_ms)),
            Text(milliseconds(row.latency_p95_ms)),
        )
    return table
