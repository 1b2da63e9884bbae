"""What the desk says about confirmed-bad citations: the doc owners' list, and what a recheck found."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from bot.review.recheck import compare
from bot.review.suppressed import ChunkState, by_chunk, chunk_state, suppressed_line
from retrieval.store import DocumentRecord
from storage.records import FlagRecord, SuppressionRecord
from tests.storage.builders import at, citation, exchange


def suppression(question: str, *, chunk_id: str = "chunk-1", content_hash: str | None = "h1",
                version: str | None = "2026-01") -> SuppressionRecord:
    return SuppressionRecord(
        id=str(uuid.uuid4()), flag_id=str(uuid.uuid4()), exchange_id=str(uuid.uuid4()), chunk_id=chunk_id,
        document_id="refund-policy", version=version, content_hash=content_hash, question=question, query=question,
        embedder=None, query_vector=None, created_by="lead", created_at=at())


def indexed(content_hash: str = "h1", version: str | None = "2026-01") -> DocumentRecord:
    return DocumentRecord("refund-policy", content_hash, version, "Refund policy", 3)


@pytest.mark.parametrize(("record", "now", "read", "state"), [
    (suppression("q"), indexed(), True, ChunkState.IN_FORCE),
    (suppression("q"), indexed(content_hash="h2", version="2026-02"), True, ChunkState.CLEARED),
    (suppression("q"), indexed(content_hash="h2"), True, ChunkState.CLEARED),  # new text, same version label
    (suppression("q", content_hash=None), indexed(version="2026-02"), True, ChunkState.CLEARED),
    (suppression("q"), None, True, ChunkState.REMOVED),
    (suppression("q"), None, False, ChunkState.UNKNOWN),
])
def test_a_new_version_of_the_document_clears_a_suppression(record: SuppressionRecord, now: DocumentRecord | None,
                                                            read: bool, state: ChunkState) -> None:
    assert chunk_state(record, now, index_read=read) is state


def test_chunks_are_listed_by_how_many_different_questions_found_them_bad() -> None:
    rows = [suppression("How long is the refund window?"), suppression("how long is the refund window"),
            suppression("Можно ли вернуть деньги?"), suppression("Refund for teams?", chunk_id="chunk-2")]
    listed = by_chunk(rows, {"refund-policy": indexed()}, min_questions=1)

    assert [(c.chunk_id, len(c.questions), c.state) for c in listed] == [
        ("chunk-1", 2, ChunkState.IN_FORCE), ("chunk-2", 1, ChunkState.IN_FORCE)]
    assert [c.chunk_id for c in by_chunk(rows, None, min_questions=2)] == ["chunk-1"]


def flag(label: str | None, resolution: str | None, *, lead: bool = True) -> FlagRecord:
    return FlagRecord(id=str(uuid.uuid4()), exchange_id="e", label=label, user_id="U", reaction="x", is_lead=lead,
                      created_at=at(), resolution=resolution)  # type: ignore[arg-type]


BEFORE = exchange()  # cites chunk-1 (S1) and chunk-2 (S2)
NEW_VERSION = citation(1, chunk_id="chunk-9", version="2026-02")  # the same quote from a new version of the document


@pytest.mark.parametrize(("what", "flags", "after", "still", "back", "changed"), [
    ("the same answer, flag confirmed bad", [flag("S1", "confirmed_bad")], BEFORE, ("chunk-1",), True, False),
    ("the flagged chunk gone, another cited", [flag("S1", "confirmed_bad")],
     replace(BEFORE, citations=(citation(2),), answer_text="other"), (), False, True),
    ("the same quote in a new version comes back", [flag("S1", "confirmed_bad")],
     replace(BEFORE, citations=(NEW_VERSION,)), ("chunk-1",), True, False),
    ("fixed in docs and still cited: reported, not a failure", [flag("S1", "fixed_in_docs")], BEFORE,
     ("chunk-1",), False, False),
    ("a whole-answer flag names every kept citation", [flag(None, "confirmed_bad")], BEFORE,
     ("chunk-1", "chunk-2"), True, False),
    ("a non-lead's reaction counts for nothing", [flag("S1", "confirmed_bad", lead=False)], BEFORE, (), False, False),
    ("now no support", [flag("S1", "fixed_in_docs")],
     replace(BEFORE, outcome="no_support", citations=(), answer_text=None), (), False, True),
])
def test_recheck_reports_what_changed_and_whether_a_confirmed_bad_citation_came_back(
        what: str, flags: list[FlagRecord], after: object, still: tuple[str, ...], back: bool, changed: bool) -> None:
    result = compare(BEFORE, flags, after)  # type: ignore[arg-type]

    assert (result.still_cites, result.came_back, result.changed) == (still, back, changed)
    assert result.no_support == (result.after.outcome == "no_support")


def test_the_desk_line_counts_suppressed_and_demoted_citations() -> None:
    assert suppressed_line(BEFORE) is None
    assert suppressed_line(replace(BEFORE, route={"suppressed": ["a", "b"], "demoted": ["c"]})) == (
        "2 citations suppressed by a lead's flag; 1 citation ranked lower (flagged for a similar question)")
