"""The review desk's /gaps page: the no-support questions grouped into topics, most people first. Pure.

Built with `html_safe.fmt` like every page, so a `<script>` in a question, a title or a label is text.
"""

from __future__ import annotations

from bot.review.formatting import SINCE_FORMS, one_line
from bot.review.gaps import GapsReport, Topic
from bot.review.gaps_text import trend_text
from bot.review.html_safe import Markup, fmt, join
from bot.review.pages import banner, page


def topic_card(number: int, topic: Topic) -> Markup:
    examples = join(fmt('<li class="example">{text}</li>', text=one_line(text, 240)) for text in topic.examples)
    fragments = join(
        fmt('<li class="fragment">{title} <span class="meta">{chunk} · found for {count} of the questions · best '
            'rank {rank}</span></li>', title=f.title or f.document_id, chunk=f.chunk_id, count=f.questions,
            rank=f.best_rank)
        for f in topic.fragments
    ) or fmt('<li class="meta">nothing was retrieved</li>')
    asked = join((fmt('<a href="/exchanges/{id}">{n}</a>', id=exchange_id, n=n)
                  for n, exchange_id in enumerate(topic.exchange_ids[:10], start=1)), " ")
    return fmt(
        '<section class="card topic" data-people="{people}" data-questions="{questions}">'
        '<h2 class="label">{number}. {label}</h2>'
        '<p class="counts">{people} {people_noun} asked {questions} {question_noun}</p>'
        '<p class="meta trend">{trend}</p><b>Examples</b><ul>{examples}</ul>'
        '<b>Nearest fragments the bot found</b><ul>{fragments}</ul><p class="meta">Exchanges: {asked}</p></section>',
        people=topic.people, questions=topic.questions, number=number, label=topic.label,
        people_noun="person" if topic.people == 1 else "people",
        question_noun="question" if topic.questions == 1 else "questions", trend=trend_text(topic),
        examples=examples, fragments=fragments, asked=asked,
    )


def gaps_page(report: GapsReport | None, *, since_text: str, channel: str | None, error: str | None = None,
              logout_csrf: str | None = None) -> Markup:
    """The filters form, then one card per topic; `report` None when the filters could not be used."""
    form = fmt(
        '<form class="filters" method="get" action="/gaps">'
        '<label>Since <input type="text" name="since" value="{since}" size="12" title="{forms}"></label>'
        '<label>Channel <input type="text" name="channel" value="{channel}" size="12"></label>'
        '<button type="submit">Show</button></form>',
        since=since_text, forms=SINCE_FORMS, channel=channel or "",
    )
    if report is None:
        summary, cards = Markup(""), Markup("")
    else:
        scope = f"channel {report.channel_id}" if report.channel_id else "all channels"
        summary = fmt('<p class="meta summary">{count} no-support questions in {topics} topics since {since} UTC, '
                      '{scope}; most people first.</p>', count=report.questions, topics=len(report.topics),
                      since=f"{report.since:%Y-%m-%d %H:%M}" if report.since else "the start", scope=scope)
        cards = join(topic_card(number, topic) for number, topic in enumerate(report.topics, start=1)) or fmt(
            '<p class="note">No gaps: every question in this window found support.</p>')
    body = fmt('<h1>Coverage gaps</h1><p class="meta">What the documents are missing: questions the bot '
               'could not support, grouped by topic.</p>{error}{form}{summary}{cards}',
               error=banner(error, "bad"), form=form, summary=summary, cards=cards)
    return page("Coverage gaps", body, active="gaps", logout_csrf=logout_csrf)
