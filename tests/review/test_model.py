"""What a lead reads about each citation: where its quote sits, whether its version is stale, why text is missing."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from collections.abc import Mapping, Sequence

import pytest

from bot.review.lookup import IndexUnavailable, IndexView, StaticChunks, read_index
from bot.review.model import (
    NOTE_CHUNK_GONE,
    Handling,
    NOTE_QUOTE_NOT_IN_CHUNK,
    VersionState,
    build_review,
    handling_lines,
    review_to_json,
    version_state,
)
from retrieval.chunks import Chunk
from retrieval.store import DocumentRecord
from storage.records import FlagRecord, HandoffRecord, PrivateReplyRecord
from tests.storage.builders import at, citation, exchange


def document(version: str | None) -> DocumentRecord:
    return DocumentRecord("refund-policy", f"hash-{version}", version, "Refund policy", 3)


def chunk(chunk_id: str, text: str, version: str | None = "2026-01") -> Chunk:
    return Chunk(chunk_id=chunk_id, document_id="refund-policy", version=version, content_hash=f"hash-{version}",
                 ordinal=0, title="Refund policy", section="Annual plans", page=1, url=None, updated_at=None,
                 visibility=None, language="en", text=text)


@pytest.mark.parametrize(
    ("cited", "indexed", "chunk_stored", "index_read", "expected"),
    [
        ("2026-01", document("2026-01"), True, True, VersionState.CURRENT),
        ("2026-01", document("2026-09"), False, True, VersionState.STALE),
        ("2026-01", document("2026-09"), True, True, VersionState.STALE),
        ("2026-01", document("2026-01"), False, True, VersionState.STALE),  # text changed, same version label
        (None, document(None), True, True, VersionState.CURRENT),
        (None, document(None), False, True, VersionState.STALE),
        ("2026-01", None, False, True, VersionState.REMOVED),
        ("2026-01", None, False, False, VersionState.UNKNOWN),
    ],
)
def test_a_citation_is_stale_when_the_index_holds_another_version(
    cited: str | None, indexed: DocumentRecord | None, chunk_stored: bool, index_read: bool, expected: VersionState
) -> None:
    assert version_state(cited, indexed, chunk_stored, index_read=index_read) is expected


FLAG = FlagRecord(id="f1", exchange_id="e", label="S1", user_id="U-lead", reaction="x", is_lead=True, created_at=at(1))
MEMBER = FlagRecord(id="f2", exchange_id="e", label="S1", user_id="U-m", reaction="x", is_lead=False, created_at=at(2))


def test_review_places_quotes_in_chunks_and_explains_every_missing_excerpt() -> None:
    record = exchange(citations=(
        citation(1),  # chunk-1 holds its quote
        citation(2),  # chunk-2 holds other text
        citation(3, chunk_id="chunk-gone"),  # the chunk is no longer stored
        citation(4, kept=False, reason="not_found"),  # rejected; its chunk does not hold it either
    ))
    index = IndexView(
        chunks={"chunk-1": chunk("chunk-1", "Intro. Annual plans can be refunded within 10 days. Outro."),
                "chunk-2": chunk("chunk-2", "Something else entirely."),
                "chunk-4": chunk("chunk-4", "Nothing about forty days.")},
        current={"refund-policy": document("2026-01")},
    )
    review = build_review(record, [FLAG, MEMBER], index)
    s1, s2, s3 = review.kept
    assert s1.excerpt is not None and s1.excerpt.quote == "Annual plans can be refunded within 10 days."
    assert (s1.excerpt.before, s1.excerpt.after, s1.note) == ("Intro. ", " Outro.", None)
    assert s1.state is VersionState.CURRENT and s1.flags == (FLAG,)  # a member's reaction is not a flag
    assert (s2.excerpt, s2.note, s2.state) == (None, NOTE_QUOTE_NOT_IN_CHUNK, VersionState.CURRENT)
    assert (s3.excerpt, s3.note, s3.state) == (None, NOTE_CHUNK_GONE, VersionState.STALE)
    assert [view.citation.label for view in review.rejected] == ["S4"]
    assert review.open_flags == (FLAG,) and review.stale and review.index_unavailable is None


@pytest.mark.parametrize(
    ("current", "chunks", "stale", "removed"),
    [
        pytest.param({"refund-policy": document("2026-01")}, ["chunk-1", "chunk-2"], False, False, id="current"),
        pytest.param({"refund-policy": document("2026-09")}, [], True, False, id="replaced by a new version"),
        pytest.param({}, [], False, True, id="removed from the index (sync, documents remove)"),
        pytest.param({"other-doc": document("2026-01")}, ["chunk-1"], False, True, id="removed, its old chunk id reused"),
    ],
)
def test_an_exchange_is_marked_when_a_cited_document_was_replaced_or_removed(
    current: dict[str, DocumentRecord], chunks: list[str], stale: bool, removed: bool
) -> None:
    index = IndexView({cid: chunk(cid, "Annual plans can be refunded within 10 days.") for cid in chunks}, current)
    review = build_review(exchange(), [], index)
    assert (review.stale, review.removed) == (stale, removed)
    data = review_to_json(review)
    assert (data["stale"], data["removed"]) == (stale, removed)
    assert {item["version_state"] for item in data["citations"]} >= ({"removed"} if removed else set())


def test_review_without_the_index_says_so_once_and_keeps_every_logged_quote() -> None:
    review = build_review(exchange(), [], IndexView(None, None, "cannot reach Weaviate"))
    assert review.index_unavailable == "cannot reach Weaviate"
    assert [(view.state, view.excerpt, view.note) for view in review.kept] == [(VersionState.UNKNOWN, None, None)] * 2
    data = review_to_json(review)
    assert data["chunk_text_unavailable"] == "cannot reach Weaviate"
    assert [item["exact_quote"] for item in data["citations"]] == [c.exact_quote for c in exchange().citations]
    assert data["citations"][0]["version_state"] == "unknown" and data["citations"][0]["in_chunk"] is None


def test_review_json_keeps_citation_order_and_marks_the_quote_in_its_chunk() -> None:
    record = exchange(citations=(citation(1, kept=False), citation(2)))
    index = IndexView({"chunk-2": chunk("chunk-2", "Annual plans can be refunded within 20 days.")},
                      {"refund-policy": document("2026-09")})
    data = review_to_json(build_review(record, [], index))
    assert [(item["label"], item["kept"]) for item in data["citations"]] == [("S1", False), ("S2", True)]
    s2 = data["citations"][1]
    assert s2["in_chunk"]["quote"] == "Annual plans can be refunded within 20 days."
    assert (s2["version_state"], s2["indexed_version"]) == ("stale", "2026-09")


async def test_reading_the_index_turns_failures_into_one_line_reasons() -> None:
    unavailable = await read_index(IndexUnavailable("no documents are indexed yet"), ["c"], ["d"])
    assert unavailable == IndexView(None, None, "no documents are indexed yet")

    class Hanging:
        async def get_chunks(self, chunk_ids: Sequence[str]) -> Mapping[str, Chunk]:
            await asyncio.sleep(5)
            return {}

        async def current(self, document_ids: Sequence[str]) -> Mapping[str, DocumentRecord]:
            return {}

    slow = await read_index(Hanging(), ["c"], ["d"], timeout_s=0.05)
    assert slow.unavailable == "the index did not answer within 0.05 s"

    found = await read_index(StaticChunks([chunk("c", "text")], [document("v1")]), ["c", "c", "x"], ["refund-policy"])
    assert set(found.chunks or {}) == {"c"} and set(found.current or {}) == {"refund-policy"}


HANDOFF = HandoffRecord("e1", "U0ANNA", at(5), "1700000000.000300")
SHOWN = PrivateReplyRecord("e1", "C0HELP", "U0BORIS", "1700000000.000200", {"text": "送料は全国一律550円です。"}, at(1))


@pytest.mark.parametrize(("handling", "lines"), [
    (Handling(), ()),
    (Handling(handoff=HANDOFF),
     ("Handed off to a person by U0ANNA at 2026-03-02 09:05 UTC (hand-off message 1700000000.000300)",)),
    (Handling(handoff=HandoffRecord("e1", "U0ANNA", at(5))),
     ("Handed off to a person by U0ANNA at 2026-03-02 09:05 UTC (hand-off message not noted)",)),
    (Handling(private_reply=SHOWN), ("Shown to the asker U0BORIS only (private first); not shared in the thread",)),
    (Handling(HANDOFF, replace(SHOWN, shared_by="U0BORIS", shared_at=at(3), shared_ts="1700000000.000250")),
     ("Handed off to a person by U0ANNA at 2026-03-02 09:05 UTC (hand-off message 1700000000.000300)",
      "Shown to the asker U0BORIS only (private first); shared in the thread by U0BORIS at 2026-03-02 09:03 UTC")),
])
def test_the_review_says_who_handed_an_exchange_off_and_who_shared_a_private_answer(
        handling: Handling, lines: tuple[str, ...]) -> None:
    assert handling_lines(handling) == lines
    data = review_to_json(build_review(exchange(), [], IndexView(None, None, "not read"), handling=handling))
    assert (data["handoff"] is None) == (handling.handoff is None)
    if handling.handoff is not None:
        assert data["handoff"] == {"user_id": "U0ANNA", "at": "2026-03-02T09:05:00+00:00",
                                   "message_ts": handling.handoff.message_ts}
