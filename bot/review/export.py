"""Flagged exchanges as eval questions, so every bad citation a lead finds can become a regression case.

`verbatim eval` reads JSONL lines `{id, question, history?, channel?}`. An exported line keeps the exchange id
(so a result can be traced back to the review), the question as the user asked it, the thread's earlier turns
as `history` (a follow-up only makes sense with them; the answer path rebuilds the standalone query from
them), and the channel (it decides which documents are visible). Pure: no I/O.

History is a list of messages, oldest first: `{"role": "user", "text": ...}` for a question and
`{"role": "assistant", "text": ...}` for the bot's reply to it (left out when the turn has no reply text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storage.records import ExchangeRecord, ExchangeSummary


@dataclass(frozen=True, slots=True)
class PriorTurn:
    """An earlier turn of the same Slack thread: the question and what the bot replied."""

    question: str
    answer: str | None


def history_messages(turns: Sequence[PriorTurn]) -> list[dict[str, str]]:
    """The earlier turns as the eval file's `history` messages, oldest first."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        messages.append({"role": "user", "text": turn.question})
        if turn.answer:
            messages.append({"role": "assistant", "text": turn.answer})
    return messages


def eval_question(exchange: ExchangeRecord | ExchangeSummary, turns: Sequence[PriorTurn]) -> dict[str, Any]:
    """One line of an eval questions file: `history` always (empty outside threads), `channel` when known."""
    line: dict[str, Any] = {"id": exchange.id, "question": exchange.question, "history": history_messages(turns)}
    if exchange.channel_id:
        line["channel"] = exchange.channel_id
    return line
