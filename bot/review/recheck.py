"""`verbatim review recheck`: the regression run of the leads' verdicts against today's index.

Each question whose flag was resolved as a problem (`fixed_in_docs` or `confirmed_bad`; with `all_flagged`, every
question a lead's flag is still on) is asked again through the one entry point (`bot.answer.ask`, recorded as an
``eval`` exchange, with the thread's earlier turns and the channel it was asked in), and compared (`compare`, pure)
with what the bot said then:

    changed       the answer text or the outcome is not the same
    still_cites   a kept citation is a flagged one: the same chunk, or the same quote from the same document (the
                  text survived into a new version)
    no_support    the bot now says "no support found"
    came_back     it still cites a citation a lead confirmed bad: `recheck` exits non-zero (a docs CI gate)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.answer.ask import Asked, Origin, Recorder, ask
from bot.answer.service import AnswerDeps
from bot.answer.types import Question, Turn
from bot.review.desk import Sessions, prior_turns
from bot.review.learning import flagged_citations
from bot.review.queries import review_queue
from storage.exchanges import get_exchange
from storage.flags import flags_for
from storage.records import CitationRecord, ExchangeRecord, FlagRecord

PROBLEMS = ("fixed_in_docs", "confirmed_bad")


@dataclass(frozen=True, slots=True)
class Recheck:
    before: ExchangeRecord
    after: ExchangeRecord
    verdicts: tuple[str, ...]  # the resolutions of the flags that chose it ("open" for an unresolved flag)
    changed: bool
    still_cites: tuple[str, ...]  # chunk ids of flagged citations cited again
    no_support: bool
    came_back: bool


def compare(before: ExchangeRecord, flags: Sequence[FlagRecord], after: ExchangeRecord) -> Recheck:
    """What changed between an exchange and the same question asked again (see the module docstring)."""
    counted = [flag for flag in flags if flag.is_flag]
    flagged = {flag.id: flagged_citations(before, flag) for flag in counted}
    bad = {chunk for flag in counted if flag.resolution == "confirmed_bad" for chunk, _, _ in flagged[flag.id]}
    old = {c.chunk_id: c for c in before.citations if c.kept}
    again: list[str] = []
    for citation in (c for c in after.citations if c.kept):
        for chunk_id in {chunk for cited in flagged.values() for chunk, _, _ in cited}:
            if _same_citation(citation, chunk_id, old.get(chunk_id)) and chunk_id not in again:
                again.append(chunk_id)
    return Recheck(
        before=before, after=after, verdicts=tuple(dict.fromkeys(f.resolution or "open" for f in counted)),
        changed=(after.answer_text, after.outcome) != (before.answer_text, before.outcome),
        still_cites=tuple(again), no_support=after.outcome == "no_support",
        came_back=any(chunk in bad for chunk in again),
    )


def _same_citation(citation: CitationRecord, chunk_id: str, flagged: CitationRecord | None) -> bool:
    if citation.chunk_id == chunk_id:
        return True
    return flagged is not None and citation.document_id == flagged.document_id and \
        citation.exact_quote == flagged.exact_quote


async def chosen(sessions: Sessions, *, all_flagged: bool) -> list[tuple[ExchangeRecord, list[FlagRecord]]]:
    """The exchanges to ask again, oldest first, each with its reactions."""
    out: list[tuple[ExchangeRecord, list[FlagRecord]]] = []
    async with sessions() as session:
        queue = await review_queue(session, flagged=True, limit=1_000_000)
        for summary in reversed(queue):
            flags = await flags_for(session, summary.id)
            counted = [f for f in flags if f.is_flag]
            if not counted or not (all_flagged or any(f.resolution in PROBLEMS for f in counted)):
                continue
            record = await get_exchange(session, summary.id)
            if record is not None:
                out.append((record, flags))
    return out


async def recheck(sessions: Sessions, deps: AnswerDeps, recorder: Recorder, *, all_flagged: bool) -> list[Recheck]:
    """Ask each chosen question again and compare; every new answer is recorded as an eval exchange."""
    results: list[Recheck] = []
    for record, flags in await chosen(sessions, all_flagged=all_flagged):
        async with sessions() as session:
            turns = await prior_turns(session, channel_id=record.channel_id, thread_ts=record.thread_ts,
                                      before=record.created_at, exclude_id=record.id)
        history = tuple(t for turn in turns for t in _turns(turn.question, turn.answer))
        asked: Asked = await ask(Question(record.question, record.channel_id, history), deps, recorder,
                                 Origin("eval"))
        results.append(compare(record, flags, asked.record))
    return results


def _turns(question: str, answer: str | None) -> list[Turn]:
    return [Turn("user", question)] + ([Turn("assistant", answer)] if answer else [])


def recheck_to_json(item: Recheck) -> dict[str, Any]:
    return {
        "exchange_id": item.before.id, "question": item.before.question, "verdicts": list(item.verdicts),
        "before": item.before.outcome, "outcome": item.after.outcome, "new_exchange_id": item.after.id,
        "changed": item.changed, "still_cites": list(item.still_cites), "no_support": item.no_support,
        "came_back": item.came_back,
    }
