"""What an answer looks like outside the Slack edge: the numbered citations, the plain answer text in the
asker's language, and the ``ask --json`` object (the contract in DESIGN.md; ``ask_json``, the one place it
is built). Pure functions.

Citations are numbered S1, S2 … in the order they are shown; a lead's :one: … :nine: reaction flags
that citation. Every field of a citation but the claim comes from the index, never from a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.answer.types import Answered, NoSupport, NoSupportReason, Source
from bot.answer.wording import source_line, wording_for

if TYPE_CHECKING:  # types only: importing the service (or the entry point) would pull in its clients
    from bot.answer.ask import Asked
    from bot.answer.service import AnswerResult

EXCERPT_CHARS = 300


@dataclass(frozen=True, slots=True)
class CitationView:
    id: str
    claim: str
    exact_quote: str  # verbatim text of the chunk (for nearest fragments: an excerpt, also verbatim)
    source: Source

    def to_json(self) -> dict[str, object]:
        c = self.source.chunk
        return {"id": self.id, "claim": self.claim, "exact_quote": self.exact_quote, "document_id": c.document_id,
                "chunk_id": c.chunk_id, "title": c.title, "section": c.section, "page": c.page,
                "version": c.version, "url": c.url}


def citations(result: AnswerResult) -> list[CitationView]:
    if not isinstance(result.outcome, Answered):
        return []
    views = []
    for claim in result.outcome.claims:
        for quote in claim.quotes:
            views.append(CitationView(f"S{len(views) + 1}", claim.text, quote.text, quote.source))
    return views


def excerpt(result: AnswerResult, source: Source) -> str:
    """A short verbatim fragment of ``source``: its sentence closest to the question (or its beginning)."""
    best = next((s for s in result.best_sentences if s.source.chunk.chunk_id == source.chunk.chunk_id), None)
    text = best.text if best is not None else source.chunk.text
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = text.rfind(" ", 0, EXCERPT_CHARS)
    return text[: cut if cut > EXCERPT_CHARS // 2 else EXCERPT_CHARS]


def nearest(result: AnswerResult) -> list[CitationView]:
    if not isinstance(result.outcome, NoSupport):
        return []
    return [CitationView(f"N{i + 1}", "", excerpt(result, s), s) for i, s in enumerate(result.outcome.nearest)]


def answer_text(result: AnswerResult) -> str:
    """The answer as plain text in the asker's language (terminal output, the JSON "answer" field)."""
    w = wording_for(result.language)
    lines: list[str] = []
    if isinstance(result.outcome, Answered):
        for view in citations(result):
            c = view.source.chunk
            quote = f"{w.open_quote}{view.exact_quote}{w.close_quote}"
            where = source_line(result.language, c.title, c.section, c.page, c.version)
            if view.claim != view.exact_quote:
                lines.append(f"{view.claim}")
                lines.append(f"  [{view.id}] {quote} ({where})")
            else:
                lines.append(f"[{view.id}] {quote} ({where})")
        return "\n".join(lines)
    outcome = result.outcome
    if outcome.reason is NoSupportReason.NOTHING_FOUND:
        return w.nothing_found
    lines.append(w.no_support)
    fragments = nearest(result)
    if fragments:
        lines.append(w.nearest)
        for view in fragments:
            c = view.source.chunk
            lines.append(f"- {source_line(result.language, c.title, c.section, c.page, c.version)}: "
                         f"{w.open_quote}{view.exact_quote}{w.close_quote}")
    return "\n".join(lines)


def to_json(result: AnswerResult, exchange_id: str) -> dict[str, object]:
    """The ``ask --json`` object of an answer (answered or no support)."""
    status = "answered" if isinstance(result.outcome, Answered) else "no_support"
    return {
        "status": status,
        "answer": answer_text(result),
        "citations": [v.to_json() for v in citations(result)],
        "nearest": [v.to_json() for v in nearest(result)],
        "exchange_id": exchange_id,
        "timings_ms": {k: round(v, 1) for k, v in result.timings_ms.items()},
    }


def ask_json(asked: Asked) -> dict[str, object]:
    """The ``ask --json`` object of one question, for every front end that prints it (``/api/ask``,
    ``verbatim ask --json``, ``verbatim eval``): exactly the contract's fields (DESIGN.md "Contracts").

    A failed question is ``"status": "error"`` with the error reply in the asker's language. The error's own
    text is never in it (it may be a library's, with hosts or queries): the log line and the exchange record
    (``error_class``, ``error_message``) keep it for whoever looks the exchange up.
    """
    if asked.error is None and asked.result is not None:
        return to_json(asked.result, asked.exchange_id)
    record = asked.record
    return {"status": "error", "answer": wording_for(record.language or "").error, "citations": [], "nearest": [],
            "exchange_id": asked.exchange_id, "timings_ms": {k: round(v, 1) for k, v in record.timings_ms.items()}}
