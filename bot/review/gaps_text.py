"""`verbatim review gaps` for people: one table of topics, most people first. Pure (report in, rich table out)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from bot.review.formatting import one_line
from bot.review.gaps import GapsReport, Topic


def trend_text(topic: Topic) -> str:
    """'3 this week, 1 the week before' with first and last asked dates."""
    t = topic.trend
    return (f"{t.last_7_days} last 7 days, {t.previous_7_days} the 7 before; "
            f"{t.first_asked:%Y-%m-%d} – {t.last_asked:%Y-%m-%d}")


def nearest_text(topic: Topic) -> str:
    return "; ".join(f"{f.title or f.document_id} ({f.chunk_id}, {f.questions}×)" for f in topic.fragments) or "–"


def gaps_table(report: GapsReport) -> Table:
    """Each topic: people, questions, label, example questions, nearest fragments, trend."""
    table = Table(show_edge=False, pad_edge=False, header_style="bold", show_lines=True)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("people", justify="right", no_wrap=True)
    table.add_column("questions", justify="right", no_wrap=True)
    table.add_column("topic", overflow="fold", ratio=1)
    table.add_column("examples", overflow="fold", ratio=2)
    table.add_column("nearest fragments", overflow="fold", ratio=1)
    table.add_column("trend", overflow="fold", ratio=1)
    for number, topic in enumerate(report.topics, start=1):
        table.add_row(
            Text(str(number)), Text(str(topic.people)), Text(str(topic.questions)), Text(topic.label, style="bold"),
            Text("\n".join(one_line(example, 160) for example in topic.examples)), Text(nearest_text(topic)),
            Text(trend_text(topic)),
        )
    return table


def gaps_heading(report: GapsReport) -> str:
    scope = f"channel {report.channel_id}" if report.channel_id else "all channels"
    since = f"since {report.since:%Y-%m-%d %H:%M} UTC" if report.since else "all time"
    noun = "question" if report.questions == 1 else "questions"
    return f"{report.questions} no-support {noun} in {len(report.topics)} topics, {since}, {scope}"
