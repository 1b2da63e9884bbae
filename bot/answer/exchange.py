"""An answer (or a failure) as an exchange record for the SQL log. Pure: nothing here writes.

``answered_record`` and ``failed_record`` are called by the entry point (``bot.answer.ask``), whose ``Recorder``
writes the record through ``storage.journal.write_or_journal``, so a database that is down or locked never
loses an exchange: it waits in the journal and is replayed later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.answer.evidence import FEATURES
from bot.answer.render import answer_text, citations
from bot.answer.service import AnswerResult, Route
from bot.answer.types import Answered, NoSupport, Question
from storage.records import CitationRecord, ExchangeRecord, RetrievedRecord, Source


@dataclass(frozen=True, slots=True)
class SlackContext:
    team_id: str | None = None
    channel_id: str | None = None
    user_id: str | None = None
    thread_ts: str | None = None
    question_ts: str | None = None
    reply_ts: str | None = None
    event_id: str | None = None


def answered_record(result: AnswerResult, *, exchange_id: str, created_at: datetime, source: Source,
                    slack: SlackContext = SlackContext()) -> ExchangeRecord:
    """The exchange record of an answer or a no-support reply: what was searched, quoted and rejected."""
    outcome = result.outcome
    retrieved = tuple(
        RetrievedRecord(rank=h.rank, chunk_id=h.chunk.chunk_id, document_id=h.chunk.document_id, version=h.chunk.version,
                        title=h.chunk.title, search_score=h.score, rerank_score=h.rerank_score)
        for h in result.retrieved
    )
    records: list[CitationRecord] = []
    for view in citations(result):
        c = view.source.chunk
        records.append(CitationRecord(position=len(records) + 1, label=view.id, claim=view.claim,
                                      exact_quote=view.exact_quote, document_id=c.document_id, chunk_id=c.chunk_id,
                                      kept=True, version=c.version, title=c.title, section=c.section, page=c.page,
                                      url=c.url))
    rejected = outcome.rejected if isinstance(outcome, (Answered, NoSupport)) else ()
    for quote in rejected:
        c = quote.source.chunk if quote.source is not None else None
        records.append(CitationRecord(
            position=len(records) + 1, label=quote.source_label[:16], claim=quote.claim, exact_quote=quote.text,
            document_id=c.document_id if c else "", chunk_id=c.chunk_id if c else "", kept=False,
            version=c.version if c else None, title=c.title if c else None, section=c.section if c else None,
            page=c.page if c else None, url=c.url if c else None, rejection_reason=quote.reason.value,
        ))
    return ExchangeRecord(
        id=exchange_id, created_at=created_at, source=source, question=result.question.text,
        outcome="answered" if isinstance(outcome, Answered) else "no_support",
        query=result.query, answer_text=answer_text(result), timings_ms=dict(result.timings_ms),
        route=_route_json(result.route, result), prompt_version=result.route.prompt_version,
        language=result.language, retrieved=retrieved, citations=tuple(records),
        **_slack_fields(slack, result.question.channel),
    )


def failed_record(question: Question, error: BaseException, *, exchange_id: str, created_at: datetime,
                  source: Source, language: str | None, timings_ms: dict[str, float] | None = None,
                  slack: SlackContext = SlackContext()) -> ExchangeRecord:
    """The exchange record of a question that ended in an error (the asker got an error reply)."""
    return ExchangeRecord(
        id=exchange_id, created_at=created_at, source=source, question=question.text, outcome="error",
        error_class=type(error).__name__, error_message=str(error)[:1000], language=language,
        timings_ms=dict(timings_ms or {}), **_slack_fields(slack, question.channel),
    )


def _route_json(route: Route, result: AnswerResult) -> dict[str, object]:
    data = route.to_json()
    if result.evidence is not None:
        data["evidence"] = {k: round(v, 4) for k, v in zip(FEATURES, result.evidence.vector())}
    if result.evidence_probability is not None:
        data["evidence_probability"] = round(result.evidence_probability, 4)
    if result.judged:
        # The judge's candidates with their probabilities: the desk shows them beside the quotes and the nearest
        # fragments of a "no support" reply.
        data["judged"] = [j.to_json() for j in result.judged]
    if isinstance(result.outcome, NoSupport):
        data["no_support_reason"] = result.outcome.reason.value
    return data


def _slack_fields(slack: SlackContext, channel: str | None) -> dict[str, str | None]:
    """Slack's ids; the channel is the one whose visibility the answer was computed for, whatever the front end
    (an ``/api/ask`` or ``verbatim ask --channel`` question too), so an auditor can tell why it saw what it saw."""
    return {"team_id": slack.team_id, "channel_id": slack.channel_id or channel, "user_id": slack.user_id,
            "thread_ts": slack.thread_ts, "question_ts": slack.question_ts, "reply_ts": slack.reply_ts,
            "event_id": slack.event_id}
