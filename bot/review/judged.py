"""The judge's view of an exchange, for ``review show`` and the desk: each sentence it read, its probability
that the sentence answers the question, and whether it was quoted. Pure: read from the exchange's route."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage.records import CitationRecord


@dataclass(frozen=True, slots=True)
class JudgedLine:
    probability: float
    label: str  # the source label (S1 …)
    text: str
    quoted: bool  # inside a kept citation's quote


def judged_lines(route: Mapping[str, Any], citations: Sequence[CitationRecord]) -> list[JudgedLine]:
    """The judge's candidates, most probable first (none when the judge did not decide this exchange)."""
    items = route.get("judged") if isinstance(route, Mapping) else None
    if not isinstance(items, list):
        return []
    kept = [c for c in citations if c.kept]
    out = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        text = str(item.get("text", ""))
        quoted = any(c.chunk_id == item.get("chunk_id") and text and text in c.exact_quote for c in kept)
        out.append(JudgedLine(float(item.get("probability", 0.0)), str(item.get("label", "")), text, quoted))
    return sorted(out, key=lambda line: line.probability, reverse=True)


def judge_heading(route: Mapping[str, Any]) -> str:
    version = route.get("judge") if isinstance(route, Mapping) else None
    return f"Judge ({version})" if version else "Judge"
