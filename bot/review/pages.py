"""The review desk's pages, rendered on the server: records in, one HTML document out. Pure.

No front-end build and no script: filters are GET forms, resolving is a POST form, charts are inline SVG
(`charts`). Every value is escaped by `html_safe.fmt`, so a `<script>` in a question or a document shows as
text. Links from the index are only made clickable for http(s) and mailto addresses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlencode, urlsplit

from bot.review.charts import Series, line_chart
from bot.review.formatting import (
    SINCE_FORMS,
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
from bot.review.html_safe import Markup, esc, fmt, join
from bot.review.judged import judge_heading, judged_lines
from bot.review.model import CitationView, ExchangeReview, VersionState, handling_lines
from bot.review.suppressed import suppressed_line
from bot.review.text import route_text, timings_text
from storage.records import (
    RESOLUTIONS,
    ChannelStats,
    DayStats,
    ExchangeSummary,
    FlagRecord,
    Metrics,
)

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{background:#1d232b;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center}
header a{color:#fff;text-decoration:none}header a.active{border-bottom:2px solid #ffcf4a}
header .brand{font-weight:700;margin-right:1rem}header form{margin-left:auto}
main{max-width:1100px;margin:1rem auto;padding:0 1.2rem}
h1{font-size:1.35rem;margin:.4rem 0 .2rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{font-size:.8rem;text-transform:uppercase;color:#5b6573}
td.num,th.num{text-align:right;white-space:nowrap}
.meta{color:#5b6573;font-size:.9rem}
.badge{display:inline-block;padding:0 .45rem;border-radius:.6rem;font-size:.8rem;font-weight:600;white-space:nowrap}
td.nowrap{white-space:nowrap}
.answered{background:#dff3e4;color:#17622e}.no_support{background:#fff1c7;color:#7a5400}
.error{background:#fde0e0;color:#922}.pending{background:#e8eaee;color:#555}
.current{background:#dff3e4;color:#17622e}.stale,.removed{background:#fde0e0;color:#922}.unknown{background:#e8eaee}
.card{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:.8rem 1rem;margin:.6rem 0}
.card.rejected{border-left:4px solid #c33}.card.flagged{border-left:4px solid #e08a00}
blockquote.chunk{white-space:pre-wrap;margin:.5rem 0;padding:.5rem .8rem;background:#fafbfc;border-left:3px solid #ccd}
mark{background:#ffe066;padding:0 .1rem}
.note{color:#5b6573;font-style:italic}
.banner{padding:.6rem .9rem;border-radius:6px;margin:.6rem 0}
.banner.warn{background:#fff1c7}.banner.bad{background:#fde0e0}.banner.ok{background:#dff3e4}
form.filters{display:flex;flex-wrap:wrap;gap:.8rem;align-items:end;background:#fff;padding:.6rem .8rem;
border:1px solid #e3e6ea;border-radius:6px}
form.filters label{font-size:.85rem}
form.resolve{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin:.3rem 0}
input[type=text],input[type=password],select{padding:.25rem .4rem;border:1px solid #c5cbd3;border-radius:4px}
button{padding:.3rem .8rem;border:0;border-radius:4px;background:#2b5fd9;color:#fff;cursor:pointer}
header button{background:#3a4350}
.answer{white-space:pre-wrap;background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:.6rem .9rem}
.metrics{display:flex;gap:1rem;flex-wrap:wrap;margin-top:.8rem}
.metric{background:#fff;border:1px solid #e3e6ea;border-radius:6px;
padding:.6rem 1rem;min-width:11rem}.metric b{display:block;font-size:1.6rem}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:.6rem}
svg.chart{background:#fff;border:1px solid #e3e6ea;border-radius:6px;width:100%;height:auto}
svg .grid{stroke:#e3e6ea}svg .axis{font-size:11px;fill:#5b6573}svg .title{font-size:13px;font-weight:600}
svg .legend{font-size:11px}svg .empty{font-size:13px;fill:#8a93a0}
section.topic h2{margin:.2rem 0}section.topic .counts{font-weight:600}section.topic ul{margin:.3rem 0 .3rem 1.2rem}
"""

LINK_SCHEMES = ("http", "https", "mailto")


@dataclass(frozen=True, slots=True)
class QueueFilters:
    """The queue page's GET form, as typed (since stays text so a bad value can be shown back)."""

    flagged: bool = False
    no_support: bool = False
    errors: bool = False
    everything: bool = False
    channel: str = ""
    since: str = ""
    limit: int = 100


def page(title: str, body: Markup, *, active: str, logout_csrf: str | None = None) -> Markup:
    """The whole document around a page body: nav, CSS; a sign-out button when a token protects the desk."""
    nav = join(
        fmt('<a href="{href}" class="{cls}">{text}</a>', href=href, text=text, cls="active" if key == active else "")
        for key, href, text in (("queue", "/", "Queue"), ("gaps", "/gaps", "Gaps"), ("trends", "/trends", "Trends"))
    )
    logout = (
        fmt('<form method="post" action="/logout"><input type="hidden" name="csrf" value="{csrf}">'
            '<button type="submit">Sign out</button></form>', csrf=logout_csrf)
        if logout_csrf is not None else Markup("")
    )
    return fmt(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>{title} · Verbatim review</title><style>{css}</style></head>'
        '<body><header><span class="brand">Verbatim review</span>{nav}{logout}</header>'
        '<main>{body}</main></body></html>',
        title=title, css=Markup(CSS), nav=nav, logout=logout, body=body,
    )


def banner(text: str | None, kind: str) -> Markup:
    """A one-line notice (ok / warn / bad); nothing when there is no text."""
    return fmt('<p class="banner {kind}" role="status">{text}</p>', kind=kind, text=text) if text else Markup("")


def outcome_badge(outcome: str) -> Markup:
    return fmt('<span class="badge {cls}">{text}</span>', cls=outcome, text=outcome_label(outcome))


def link(url: str | None, text: str | None = None) -> Markup:
    """A link for an index URL when its scheme is a safe one; the text alone otherwise."""
    if not url:
        return esc(text or "")
    if urlsplit(url).scheme.lower() not in LINK_SCHEMES:
        return esc(text or url)
    return fmt('<a href="{url}" rel="noreferrer noopener">{text}</a>', url=url, text=text or url)


# -- queue -----------------------------------------------------------------------------------------


def queue_page(items: Sequence[ExchangeSummary], filters: QueueFilters, *, error: str | None = None,
               logout_csrf: str | None = None) -> Markup:
    """The review queue: a GET form of filters over a table of exchanges, newest first."""

    def box(name: str, checked: bool, text: str) -> Markup:
        return fmt('<label><input type="checkbox" name="{name}" value="1"{checked}> {text}</label>',
                   name=name, checked=Markup(" checked") if checked else Markup(""), text=text)

    form = fmt(
        '<form class="filters" method="get" action="/">{flagged}{no_support}{errors}{everything}'
        '<label>Channel <input type="text" name="channel" value="{channel}" size="12"></label>'
        '<label>Since <input type="text" name="since" value="{since}" size="12" placeholder="7d or 2026-11-01" '
        'title="{forms}"></label>'
        '<label>Limit <input type="text" name="limit" value="{limit}" size="4"></label>'
        '<button type="submit">Filter</button></form>',
        flagged=box("flagged", filters.flagged, "flagged"),
        no_support=box("no_support", filters.no_support, "no support"),
        errors=box("errors", filters.errors, "errors"), everything=box("all", filters.everything, "every exchange"),
        channel=filters.channel, since=filters.since, limit=filters.limit, forms=SINCE_FORMS,
    )
    rows = join(
        fmt('<tr><td class="num">{when}</td><td class="nowrap">{outcome}{error_class}</td>'
            '<td class="nowrap">{channel}</td>'
            '<td><a href="/exchanges/{id}">{question}</a></td><td class="num">{quotes}</td>'
            '<td class="num">{flags}</td><td class="num">{total}</td></tr>',
            when=item.created_at.strftime("%Y-%m-%d %H:%M"), outcome=outcome_badge(item.outcome),
            error_class=f" {item.error_class}" if item.error_class else "", channel=item.channel_id or "–",
            id=item.id, question=one_line(item.question, 140) or "(empty question)",
            quotes=f"{item.kept_citations}"
            + (f" (+{item.rejected_citations} rejected)" if item.rejected_citations else ""),
            flags=flags_label(item.lead_flags, item.unresolved_lead_flags, item.unhappy, item.handed_off),
            total=milliseconds(item.total_ms))
        for item in items
    )
    scope = "every exchange" if filters.everything else _queue_scope(filters)
    table = (
        fmt('<table><thead><tr><th class="num">When (UTC)</th><th>Outcome</th><th>Channel</th><th>Question</th>'
            '<th class="num">Quotes</th><th class="num">Flags</th><th class="num">Total</th></tr></thead>'
            '<tbody>{rows}</tbody></table>', rows=rows)
        if items else fmt('<p class="note">Nothing to review: no exchange matches these filters.</p>')
    )
    body = fmt('<h1>Review queue</h1><p class="meta">{scope}, newest first ({count} shown)</p>{error}{form}{table}'
               '<p class="meta">What the documents are missing: <a class="gaps-link" href="/gaps">no-support '
               'questions by topic</a>.</p>',
               scope=scope, count=len(items), error=banner(error, "bad"), form=form, table=table)
    return page("Queue", body, active="queue", logout_csrf=logout_csrf)


def _queue_scope(filters: QueueFilters) -> str:
    chosen = [name for name, on in (("flagged", filters.flagged), ("no support", filters.no_support),
                                    ("errors", filters.errors)) if on]
    return "Flagged, no-support and error exchanges" if not chosen else "Exchanges: " + ", ".join(chosen)


# -- one exchange ----------------------------------------------------------------------------------


STATE_TEXT = {
    VersionState.CURRENT: "current",
    VersionState.STALE: "stale",
    VersionState.REMOVED: "no longer indexed",
    VersionState.UNKNOWN: "index unavailable",
}


def version_badge(view: CitationView) -> Markup:
    """The cited version, and a badge saying whether it is still the indexed one."""
    cited = view.citation.version or "(no version)"
    detail = ""
    if view.state is VersionState.STALE:
        now = view.indexed_version or "(no version)"
        detail = f": version {now} is indexed now" if now != cited else ": the document changed since"
    return fmt('version {cited} <span class="badge {cls}" title="{title}">{state}</span>{detail}',
               cited=cited, cls=view.state.value, state=STATE_TEXT[view.state], detail=detail,
               title="whether the cited version is still the one in the index")


def quote_block(view: CitationView) -> Markup:
    """The quote highlighted inside its chunk's text, or the logged quote alone when there is no chunk text."""
    part = view.excerpt
    if part is None:
        return fmt('<blockquote class="chunk"><mark>{quote}</mark></blockquote>', quote=view.citation.exact_quote)
    return fmt('<blockquote class="chunk">{lead}{before}<mark>{quote}</mark>{after}{tail}</blockquote>',
               lead="…" if part.cut_before else "", before=part.before, quote=part.quote, after=part.after,
               tail="…" if part.cut_after else "")


def citation_card(view: CitationView, *, flag_notes: Markup) -> Markup:
    c = view.citation
    source = " › ".join(x for x in (c.title or c.document_id, c.section or "") if x)
    classes = "card" + (" rejected" if not c.kept else "") + (" flagged" if view.flags else "")
    rejected = fmt('<p class="banner bad">Rejected by verification: {reason}</p>',
                   reason=c.rejection_reason or "no reason logged") if not c.kept else Markup("")
    note = fmt('<p class="note">{note}</p>', note=view.note) if view.note else Markup("")
    return fmt(
        '<section class="{classes}" id="{label}" data-state="{state}"><div><b>{label}</b> {claim}</div>'
        '<div class="meta">{source}{page} · {version} · {link}</div>{rejected}{quote}{note}{flags}</section>',
        classes=classes, label=c.label, state=view.state.value, claim=c.claim, source=source,
        page=f", p. {c.page}" if c.page is not None else "", version=version_badge(view),
        link=link(c.url, "open document") if c.url else c.document_id, rejected=rejected, quote=quote_block(view),
        note=note, flags=flag_notes,
    )


def resolve_form(exchange_id: str, *, csrf: str, reviewer: str, flag_id: str | None, button: str) -> Markup:
    """A POST form that resolves one flag (or, without a flag id, every open flag) of the exchange."""
    options = join(fmt('<option value="{value}">{text}</option>', value=value, text=resolution_label(value))
                   for value in RESOLUTIONS)
    flag_field = fmt('<input type="hidden" name="flag_id" value="{id}">', id=flag_id) if flag_id else Markup("")
    return fmt(
        '<form class="resolve" method="post" action="/exchanges/{exchange}/resolve">'
        '<input type="hidden" name="csrf" value="{csrf}">{flag_field}'
        '<select name="resolution" aria-label="verdict">{options}</select>'
        '<input type="text" name="note" placeholder="note (optional)" size="28">'
        '<input type="text" name="by" value="{reviewer}" placeholder="your name" size="12" aria-label="resolved by">'
        '<button type="submit" class="resolve-button">{button}</button></form>',
        exchange=exchange_id, csrf=csrf, flag_field=flag_field, options=options, reviewer=reviewer, button=button,
    )


def flag_row(flag: FlagRecord, *, exchange_id: str, csrf: str, reviewer: str) -> Markup:
    if flag.resolution is not None:
        status = fmt('<span class="badge current">{verdict}</span> by {by}{note}',
                     verdict=resolution_label(flag.resolution), by=flag.resolved_by or "?",
                     note=f": {flag.resolution_note}" if flag.resolution_note else "")
    elif flag.is_flag:
        status = fmt('<span class="badge stale">open</span>')
    else:
        status = fmt('<span class="meta">{why}</span>',
                     why="reaction removed" if flag.removed_at is not None else "not a lead: context only")
    button = "Resolve" if flag.resolution is None else "Change verdict"
    action = (resolve_form(exchange_id, csrf=csrf, reviewer=reviewer, flag_id=flag.id, button=button)
              if flag.is_flag else Markup(""))
    return fmt(
        '<tr class="flag" data-flag="{id}" data-resolution="{resolution}"><td>{label}</td><td>{user} :{reaction}:</td>'
        '<td class="num">{when}</td><td>{status}{action}</td></tr>',
        id=flag.id, resolution=flag.resolution or "", label=flag.label or "whole answer", user=flag.user_id,
        reaction=flag.reaction, when=moment(flag.created_at), status=status, action=action,
    )


def exchange_page(review: ExchangeReview, *, csrf: str, reviewer: str, notice: str | None = None,
                  error: str | None = None, logout_csrf: str | None = None) -> Markup:
    """One exchange: the question and answer, each quote inside its chunk, versions, rejections, flags."""
    ex = review.exchange
    meta = " · ".join(x for x in (moment(ex.created_at), ex.source, ex.channel_id and f"channel {ex.channel_id}",
                                   ex.user_id and f"user {ex.user_id}", ex.thread_ts and f"thread {ex.thread_ts}") if x)
    banners = [banner(notice, "ok"), banner(error, "bad")]
    if review.index_unavailable:
        banners.append(banner(f"Chunk text unavailable: {one_line(review.index_unavailable, 400)}; "
                              "showing the quotes as logged.", "warn"))
    if review.stale:
        banners.append(banner("A newer version of a cited document is indexed: the citations marked stale quote "
                               "an older version.", "warn"))
    suppressed = suppressed_line(ex)
    if suppressed is not None:
        banners.append(banner(suppressed + ".", "warn"))
    banners.extend(banner(line + ".", "ok") for line in handling_lines(review.handling))
    if review.removed:
        banners.append(banner("A cited document has been removed from the index: the citations marked no longer "
                               "indexed quote a document the bot no longer answers from.", "warn"))
    error_line = (fmt('<p class="banner bad">{cls}: {message}</p>', cls=ex.error_class or "error",
                      message=one_line(ex.error_message, 400)) if ex.error_class or ex.error_message else Markup(""))
    query = (fmt('<p><b>Standalone query:</b> {query}</p>', query=ex.query)
             if ex.query and ex.query != ex.question else Markup(""))
    answer = (fmt('<h2>Answer</h2><div class="answer">{text}</div>', text=ex.answer_text)
              if ex.answer_text else Markup(""))

    def notes_for(view: CitationView) -> Markup:
        return join(_flag_note(flag) for flag in view.flags)

    kept = join(citation_card(view, flag_notes=notes_for(view)) for view in review.kept) or fmt(
        '<p class="note">No claims were kept.</p>')
    rejected = (fmt('<h2>Rejected quotes ({count})</h2>{cards}', count=len(review.rejected),
                    cards=join(citation_card(view, flag_notes=notes_for(view)) for view in review.rejected))
                if review.rejected else Markup(""))
    flag_rows = join(flag_row(flag, exchange_id=ex.id, csrf=csrf, reviewer=reviewer) for flag in review.flags)
    resolve_all = (resolve_form(ex.id, csrf=csrf, reviewer=reviewer, flag_id=None,
                                button=f"Resolve all {len(review.open_flags)} open flags")
                   if len(review.open_flags) > 1 else Markup(""))
    flags = (fmt('<table><thead><tr><th>On</th><th>Who</th><th class="num">When</th><th>Status</th></tr></thead>'
                 '<tbody>{rows}</tbody></table>{all}', rows=flag_rows, all=resolve_all)
             if review.flags else fmt('<p class="note">No reactions on this reply.</p>'))
    retrieved = join(
        fmt('<tr><td class="num">{rank}</td><td>{title}</td><td>{version}</td><td class="meta">{chunk}</td>'
            '<td class="num">{search}</td><td class="num">{rerank}</td></tr>', rank=chunk.rank,
            title=chunk.title or chunk.document_id, version=chunk.version or "–", chunk=chunk.chunk_id,
            search=score(chunk.search_score), rerank=score(chunk.rerank_score))
        for chunk in ex.retrieved
    )
    judged_rows = join(
        fmt('<tr><td class="num">{p}</td><td>{label}</td><td>{text}</td><td>{quoted}</td></tr>',
            p=f"{line.probability:.3f}", label=line.label, text=one_line(line.text, 300),
            quoted="quoted" if line.quoted else "")
        for line in judged_lines(ex.route, ex.citations))
    judged = (fmt('<h2>{heading}</h2><p class="note">The probability that each sentence it read answers the '
                  'question.</p><table><thead><tr><th class="num">Probability</th><th>Source</th><th>Sentence</th>'
                  '<th></th></tr></thead><tbody>{rows}</tbody></table>', heading=judge_heading(ex.route),
                  rows=judged_rows) if judged_rows else Markup(""))
    body = fmt(
        '<p class="meta"><a href="/">← queue</a></p><h1 class="question">{question}</h1>'
        '<p class="meta">{outcome} {meta}</p><p class="meta">exchange {id}</p>{banners}{error}{query}{answer}'
        '<h2>Claims ({kept_count} kept)</h2>{kept}{rejected}{judged}'
        '<h2 id="flags">Flags ({lead} by leads, {open} open)</h2>{flags}'
        '<h2>Retrieved chunks</h2><table><thead><tr><th class="num">Rank</th><th>Document</th><th>Version</th>'
        '<th>Chunk</th><th class="num">Search</th><th class="num">Rerank</th></tr></thead><tbody>{retrieved}</tbody>'
        '</table><h2>Timings and route</h2><p>{timings}</p><p class="meta">{route}</p>',
        question=ex.question or "(empty question)", outcome=outcome_badge(ex.outcome), meta=meta, id=ex.id,
        banners=join(banners), error=error_line, query=query, answer=answer, kept_count=len(review.kept), kept=kept,
        rejected=rejected, judged=judged, lead=len(review.lead_flags), open=len(review.open_flags), flags=flags, retrieved=retrieved,
        timings=timings_text(ex.timings_ms), route=route_text(ex.route, ex.prompt_version, ex.language),
    )
    return page(one_line(ex.question, 60) or "Exchange", body, active="queue", logout_csrf=logout_csrf)


def _flag_note(flag: FlagRecord) -> Markup:
    return fmt('<p class="meta">⚑ flagged by {user} (:{reaction}:) — {status}</p>', user=flag.user_id,
               reaction=flag.reaction, status=resolution_label(flag.resolution))


# -- trends ----------------------------------------------------------------------------------------


def trends_page(
    overall: Metrics,
    days: Sequence[DayStats],
    channels: Sequence[ChannelStats],
    *,
    since_text: str,
    start: date,
    end: date,
    channel: str | None,
    error: str | None = None,
    logout_csrf: str | None = None,
) -> Markup:
    """The two metrics leads track, and their trends per day, for all channels or one."""
    completed = overall.answered + overall.no_support + overall.error
    metrics = join(
        fmt('<div class="metric">{label}<b>{value}</b><span class="meta">{detail}</span></div>',
            label=name, value=value, detail=detail)
        for name, value, detail in (
            ("Answers without support", percent(overall.no_support_rate), f"{overall.no_support} of {completed}"),
            ("Handed off to a person", percent(overall.handoff_rate), f"{overall.handed_off} of {overall.questions}"),
            ("Deflection", percent(overall.deflection_rate),
             f"{overall.deflected} of {overall.questions} answered, not handed off, no 👎"),
            ("Wrong citations", percent(overall.wrong_citation_rate),
             f"{overall.wrong_citations} of {overall.quotes} quotes"),
            ("Volume", str(overall.exchanges), f"{overall.error} errors ({percent(ratio(overall.error, completed))})"),
            ("Latency p50 / p95", f"{milliseconds(overall.latency_p50_ms)}",
             f"p95 {milliseconds(overall.latency_p95_ms)}"),
        )
    )
    options = join(
        fmt('<option value="{value}"{selected}>{text}</option>', value=row.channel_id or "",
            selected=Markup(" selected") if row.channel_id == channel else Markup(""),
            text=row.channel_id or "(outside Slack)")
        for row in channels if row.channel_id is not None
    )
    form = fmt(
        '<form class="filters" method="get" action="/trends">'
        '<label>Since <input type="text" name="since" value="{since}" size="12" title="{forms}"></label>'
        '<label>Channel <select name="channel"><option value="">all channels</option>{options}</select></label>'
        '<button type="submit">Show</button></form>',
        since=since_text, forms=SINCE_FORMS, options=options,
    )

    def rate(name: str, color: str, attribute: str) -> Series:
        return Series(name, color, [(row.day, getattr(row, attribute)) for row in days])

    charts = join((
        line_chart("No-support rate", [rate("no support", "#d08c00", "no_support_rate")],
                   start=start, end=end, unit="rate"),
        line_chart("Deflection and hand-offs", [rate("deflection", "#1e8449", "deflection_rate"),
                                                rate("handed off", "#d35400", "handoff_rate")],
                   start=start, end=end, unit="rate"),
        line_chart("Wrong-citation rate", [rate("wrong citations", "#c0392b", "wrong_citation_rate")],
                   start=start, end=end, unit="rate"),
        line_chart("Flag rate", [rate("flagged answers", "#8e44ad", "flag_rate")], start=start, end=end, unit="rate"),
        line_chart("Askers unhappy (👎 share of feedback)", [rate("unhappy", "#b03a2e", "unhappy_rate")],
                   start=start, end=end, unit="rate"),
        line_chart("Rejected-quote rate", [rate("rejected quotes", "#2c3e50", "rejected_quote_rate")],
                   start=start, end=end, unit="rate"),
        line_chart("Latency", [rate("p50", "#2b5fd9", "latency_p50_ms"), rate("p95", "#e67e22", "latency_p95_ms")],
                   start=start, end=end, unit="ms"),
    ))
    table_rows = join(
        fmt('<tr><td>{channel}</td><td class="num">{count}</td><td class="num">{no_support}</td>'
            '<td class="num">{handed_off}</td><td class="num">{deflection}</td>'
            '<td class="num">{wrong}</td><td class="num">{flagged}</td><td class="num">{p50}</td>'
            '<td class="num">{p95}</td></tr>', channel=row.channel_id or "(outside Slack)", count=row.exchanges,
            no_support=percent(row.no_support_rate), handed_off=percent(row.handoff_rate),
            deflection=percent(row.deflection_rate), wrong=percent(row.wrong_citation_rate),
            flagged=percent(row.flag_rate), p50=milliseconds(row.latency_p50_ms), p95=milliseconds(row.latency_p95_ms))
        for row in channels if channel is None or row.channel_id == channel
    )
    scope = f"channel {channel}" if channel else "all channels"
    body = fmt(
        '<h1>Trends</h1><p class="meta">Since {since} UTC, {scope}; one point per day with exchanges.</p>{error}{form}'
        '<div class="metrics">{metrics}</div><h2>Per day</h2><div class="charts">{charts}</div><h2>Per channel</h2>'
        '<table><thead><tr><th>Channel</th><th class="num">Exchanges</th><th class="num">No support</th>'
        '<th class="num">Handed off</th><th class="num">Deflection</th><th class="num">Wrong citations</th><th class="num">Flagged</th><th class="num">p50</th>'
        '<th class="num">p95</th></tr></thead><tbody>{rows}</tbody></table>',
        since=start.isoformat(), scope=scope, error=banner(error, "bad"), form=form, metrics=metrics, charts=charts,
        rows=table_rows,
    )
    return page("Trends", body, active="trends", logout_csrf=logout_csrf)


# -- login and errors ------------------------------------------------------------------------------


def login_page(*, next_path: str, error: str | None = None) -> Markup:
    """The token form (the token is typed, posted, and never shown back)."""
    body = fmt(
        '<h1>Sign in</h1><p class="meta">This review desk needs its access token (REVIEW_TOKEN).</p>{error}'
        '<form class="filters" method="post" action="/login?{query}">'
        '<label>Token <input type="password" name="token" autocomplete="current-password" autofocus></label>'
        '<button type="submit">Sign in</button></form>',
        error=banner(error, "bad"), query=urlencode({"next": next_path}),
    )
    return page("Sign in", body, active="")


def message_page(title: str, message: str) -> Markup:
    """A page for a 4xx/5xx: what went wrong, in one line, and the way back."""
    body = fmt('<h1>{title}</h1><p class="banner bad">{message}</p><p><a href="/">← queue</a></p>',
               title=title, message=message)
    return page(title, body, active="")
