"""Ingest and hybrid search against the real Weaviate: what an operator and a searcher would notice."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from retrieval.chunking import ChunkingConfig
from retrieval.chunks import Chunk
from retrieval.documents import Document
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import FirstBatch, IngestLimits, IngestReport, Status, ingest, load_paths
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.store import (
    ChunkStore,
    DocumentRecord,
    IndexedChunk,
    IndexMismatch,
    IndexMissing,
)
from tests.conftest import DEMO_CORPUS

LIMITS = IngestLimits(max_file_bytes=1_000_000, max_document_chars=200_000)


async def ingest_paths(store: ChunkStore, embedder: E5Embedder, *paths: Path, limits: IngestLimits = LIMITS) -> IngestReport:
    return await ingest(load_paths(list(paths), limits), store=store, embedder=embedder, chunking=ChunkingConfig())


async def top_documents(store: ChunkStore, embedder: E5Embedder, query: str, channel: str | None = None, k: int = 5) -> list[str]:
    result = await search(query, store=store, embedder=embedder, config=SearchConfig(), channel=channel, limit=k)
    return [hit.chunk.document_id for hit in result.hits]


async def test_demo_corpus_is_ingested_then_skipped_when_unchanged(store: ChunkStore, embedder: E5Embedder) -> None:
    """The first ingest writes every document; an identical second one writes nothing."""
    first = await ingest_paths(store, embedder, DEMO_CORPUS)
    assert first.failures == []
    assert first.count(Status.INGESTED) == 7  # 5 files + 2 JSONL documents
    assert first.chunks == await store.count()

    again = await ingest_paths(store, embedder, DEMO_CORPUS)
    assert again.count(Status.SKIPPED) == 7
    assert again.count(Status.INGESTED) == again.count(Status.REPLACED) == 0


async def test_a_first_batch_embedded_before_the_store_opens_is_written_with_those_vectors(
        store: ChunkStore, embedder: E5Embedder) -> None:
    """What `ingest` does while Weaviate starts: the first batch's texts are embedded early, and the run writes the
    batch with them, embedding none twice; the documents are found as after a plain ingest."""
    first = FirstBatch(load_paths([DEMO_CORPUS], LIMITS), ChunkingConfig())
    await first.embed(embedder)
    early = first.memo.embedded
    assert early > 0
    report = await ingest(first, store=store, embedder=embedder, chunking=ChunkingConfig())
    assert report.failures == [] and report.count(Status.INGESTED) == 7
    assert first.memo.embedded == early  # the demo corpus is one batch: nothing embedded again
    assert first.memo.reused >= early
    assert (await top_documents(store, embedder, "返品は何日以内に受け付けますか"))[0] == "ja-shipping-returns"


async def test_a_first_batch_stopped_midway_loses_no_document(store: ChunkStore, embedder: E5Embedder) -> None:
    """Weaviate may serve before the early embedding is done: it is stopped, and every document still goes in."""
    first = FirstBatch(load_paths([DEMO_CORPUS], LIMITS), ChunkingConfig())
    early = asyncio.create_task(first.embed(embedder))
    while first.memo.embedded == 0:  # stopped after its first slice, before the last
        await asyncio.sleep(0.01)
    early.cancel()
    with pytest.raises(asyncio.CancelledError):
        await early
    kept = first.memo.embedded
    report = await ingest(first, store=store, embedder=embedder, chunking=ChunkingConfig())
    assert report.failures == [] and report.count(Status.INGESTED) == 7
    assert first.memo.embedded > kept  # the rest embedded by the run itself
    assert (await top_documents(store, embedder, "Когда обращение передаётся на вторую линию?"))[0] == "ru-first-line-guide"


async def test_an_ingest_of_many_batches_reports_each_document_once_in_the_order_read(
        tmp_path: Path, store: ChunkStore, embedder: E5Embedder) -> None:
    """Batches are read ahead while the one before is embedded: every document is still written once, reported in
    the order it was read, and a bad line fails alone."""
    lines = [json.dumps({"document_id": f"faq-{i:03d}", "title": f"FAQ {i}",
                         "text": f"Item {i}: a refund for order type {i} is possible within {i + 7} days."})
             for i in range(150)]
    lines.insert(75, "{not json")
    faq = tmp_path / "faq.jsonl"
    faq.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = await ingest_paths(store, embedder, faq)
    assert [o.document_id for o in report.outcomes if o.status is Status.INGESTED] == [f"faq-{i:03d}" for i in range(150)]
    assert [o.source for o in report.failures] == [f"{faq}:76"]
    assert report.chunks == await store.count() == 150


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How long do I have to get a refund for an annual plan?", "billing-refunds"),
        ("How many failed sign-in attempts lock an account?", "accounts-password-reset"),
        ("返品は何日以内に受け付けますか", "ja-shipping-returns"),
        ("送料はいくらですか", "ja-shipping-returns"),
        ("Когда обращение передаётся на вторую линию?", "ru-first-line-guide"),
        ("Who posts status updates during an incident?", "status-page.html"),
    ],
)
async def test_questions_in_each_language_find_their_document_first(
    demo_store: ChunkStore, embedder: E5Embedder, query: str, expected: str
) -> None:
    assert (await top_documents(demo_store, embedder, query))[0] == expected


async def test_results_carry_the_metadata_of_their_document(demo_store: ChunkStore, embedder: E5Embedder) -> None:
    result = await search("refund processing fee after 30 days", store=demo_store, embedder=embedder, config=SearchConfig(), limit=1)
    chunk = result.hits[0].chunk
    assert (chunk.document_id, chunk.title, chunk.section, chunk.version, chunk.url) == (
        "billing-refunds", "Refund policy", "Eligibility", "2026-09", "https://docs.example.com/billing/refunds")
    assert "minus a 10% processing fee" in chunk.text
    assert chunk.language == "en"


async def test_a_channel_only_sees_documents_visible_to_it(demo_store: ChunkStore, embedder: E5Embedder) -> None:
    question = "Can a team lead approve a goodwill credit without finance?"
    assert "leads-escalation-matrix" not in await top_documents(demo_store, embedder, question, k=20)
    assert "leads-escalation-matrix" not in await top_documents(demo_store, embedder, question, channel="C0OTHER", k=20)
    assert (await top_documents(demo_store, embedder, question, channel="C0LEADS"))[0] == "leads-escalation-matrix"


async def test_a_new_version_replaces_every_chunk_of_the_old_one(
    tmp_path: Path, store: ChunkStore, embedder: E5Embedder
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO_CORPUS, corpus)
    await ingest_paths(store, embedder, corpus)
    refunds = corpus / "billing" / "refunds.md"
    refunds.write_text(
        refunds.read_text(encoding="utf-8")
        .replace('version: "2026-09"', 'version: "2026-11"')
        .replace("within 30 days of purchase", "within 45 days of purchase"),
        encoding="utf-8",
    )

    report = await ingest_paths(store, embedder, corpus)
    assert report.count(Status.REPLACED) == 1 and report.count(Status.SKIPPED) == 6

    result = await search("annual plans refunded in full within days of purchase", store=store, embedder=embedder,
                          config=SearchConfig(), limit=50)
    refund_chunks = [h.chunk for h in result.hits if h.chunk.document_id == "billing-refunds"]
    assert refund_chunks and {c.version for c in refund_chunks} == {"2026-11"}
    assert not any("within 30 days of purchase" in c.text for c in refund_chunks)
    assert (await store.current(["billing-refunds"]))["billing-refunds"].version == "2026-11"


async def test_bad_files_fail_one_by_one_and_the_rest_goes_in(
    tmp_path: Path, store: ChunkStore, embedder: E5Embedder
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThis document is fine and gets indexed.\n", encoding="utf-8")
    (folder / "empty.txt").write_text("", encoding="utf-8")
    (folder / "binary.txt").write_bytes(b"\x00\x01\x02 not text")
    (folder / "latin1.txt").write_bytes("café crème".encode("latin-1"))
    (folder / "notes.docx").write_bytes(b"PK\x03\x04")
    (folder / "huge.txt").write_text("word " * 50_000, encoding="utf-8")
    (folder / "docs.jsonl").write_text(
        '{"document_id": "j1", "title": "One", "text": "First good line."}\n'
        "{not json}\n"
        '{"document_id": "j3", "title": "Three"}\n'
        '{"document_id": "j4", "title": "Four", "text": "Fourth good line."}\n',
        encoding="utf-8",
    )

    report = await ingest_paths(store, embedder, folder, limits=IngestLimits(max_file_bytes=1_000_000, max_document_chars=100_000))

    assert report.count(Status.INGESTED) == 3  # good.md, j1, j4
    failed = {f.source.replace(str(folder) + "/", ""): f.message for f in report.failures}
    assert set(failed) == {"empty.txt", "binary.txt", "latin1.txt", "notes.docx", "huge.txt", "docs.jsonl:2", "docs.jsonl:3"}
    assert "text" in failed["docs.jsonl:3"]
    assert "UTF-8" in failed["latin1.txt"]


async def test_two_files_claiming_one_document_id_fail_the_second(
    tmp_path: Path, store: ChunkStore, embedder: E5Embedder
) -> None:
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(f"---\ndocument_id: same\n---\n# {name}\n\nSome text in {name}.\n", encoding="utf-8")
    report = await ingest_paths(store, embedder, tmp_path / "a.md", tmp_path / "b.md")
    assert report.count(Status.INGESTED) == 1
    assert [f.source for f in report.failures] == [str(tmp_path / "b.md")]
    assert "document_id 'same'" in (report.failures[0].message or "")


async def test_a_chunk_weaviate_rejects_fails_its_document_only(store: ChunkStore, embedder: E5Embedder) -> None:
    def chunk(doc: str) -> Chunk:
        return Chunk(chunk_id=str(uuid.uuid5(uuid.NAMESPACE_URL, doc)), document_id=doc, version="1",
                     content_hash="h", ordinal=0, title=doc, section=None, page=None, url=None, updated_at=None,
                     visibility=None, language="en", text=f"text of {doc}")

    good, bad = chunk("good"), chunk("bad")
    vector = await embedder.embed_query("x")
    await store.replace_documents([(DocumentRecord("good", "h", "1", "good", 1), [IndexedChunk(good, vector)])])
    # A vector of the wrong dimension is refused by Weaviate for that object alone.
    outcomes = await store.replace_documents([
        (DocumentRecord("good", "h2", "2", "good", 1), [IndexedChunk(good, vector)]),
        (DocumentRecord("bad", "h", "1", "bad", 1), [IndexedChunk(bad, vector[:10])]),
    ])
    assert outcomes[0].error is None
    assert outcomes[1].error is not None and "rejected" in outcomes[1].error
    assert "bad" not in await store.current(["bad"])
    assert (await store.current(["good"]))["good"].version == "2"


async def test_sentences_of_the_top_chunks_are_ranked_by_similarity(demo_store: ChunkStore, embedder: E5Embedder) -> None:
    question = "How long is the password reset link valid?"
    result = await search(question, store=demo_store, embedder=embedder, config=SearchConfig(), limit=3)
    chunks = {h.chunk.chunk_id: h.chunk for h in result.hits}
    sentences = await demo_store.sentence_hits(await embedder.embed_query(question), list(chunks))
    assert {s.chunk_id for s in sentences} <= set(chunks)
    best = sentences[0]
    assert chunks[best.chunk_id].text[best.start : best.end] == "The reset link is valid for 60 minutes and can be used once."
    assert [s.score for s in sentences] == sorted((s.score for s in sentences), reverse=True)


async def test_an_index_built_by_another_embedder_is_refused(demo_store: ChunkStore, weaviate) -> None:
    other = ChunkStore(weaviate.client, demo_store.name)
    with pytest.raises(IndexMismatch, match="VERBATIM_EMBEDDER"):
        await other.open("use-multilingual-v3", 512, create=False)


async def test_searching_before_any_ingest_says_what_to_do(weaviate) -> None:
    with pytest.raises(IndexMissing, match="verbatim ingest"):
        await ChunkStore(weaviate.client, "NeverCreated").open("e5-small-q4", 384, create=False)


async def test_a_search_for_several_channels_sees_the_documents_of_each(
        demo_store: ChunkStore, embedder: E5Embedder) -> None:
    """The visibility filter takes a set: public documents and those of any channel in it, nothing else."""
    question = "Can a team lead approve a goodwill credit without finance?"
    vector = await embedder.embed_query(question)

    async def documents(channels: tuple[str, ...]) -> set[str]:
        hits = await demo_store.search(question, vector, language="en", channels=channels, limit=20, alpha=0.5)
        return {h.chunk.document_id for h in hits}

    assert "leads-escalation-matrix" in await documents(("C0HR", "C0LEADS"))
    assert "leads-escalation-matrix" not in await documents(("C0HR", "C0OTHER"))
    assert "leads-escalation-matrix" not in await documents(())


async def test_sources_narrow_a_search_to_named_sources_and_id_prefixes_never_past_visibility(
        store: ChunkStore, embedder: E5Embedder) -> None:
    """A help channel's ``sources``: by the source a document was synced from (its id need not say it), or by the
    beginning of its id; the top-k is filled from those documents only, and a hidden one stays hidden."""
    handbook = ("billing", "accounts")  # a folder source's documents: ids are their front matter's, not "handbook:"
    loaded = (replace(d, source_name="handbook") if isinstance(d, Document) and d.source_path
              and any(f"/{part}/" in d.source_path for part in handbook) else d
              for d in load_paths([DEMO_CORPUS], LIMITS))
    report = await ingest(loaded, store=store, embedder=embedder, chunking=ChunkingConfig())
    assert report.failures == []
    question = "Как быстро отвечает поддержка и когда возвращают деньги?"
    vector = await embedder.embed_query(question)

    async def documents(sources: tuple[str, ...] | None, channels: tuple[str, ...] = ()) -> set[str]:
        hits = await store.search(question, vector, language="ru", channels=channels, limit=50, alpha=0.5,
                                  sources=sources)
        return {h.chunk.document_id for h in hits}

    everything = await documents(None)
    assert {"billing-refunds", "ru-first-line-guide", "ja-shipping-returns"} <= everything
    assert await documents(("handbook",)) == {"billing-refunds", "accounts-password-reset"}
    assert await documents(("ru-",)) == {"ru-first-line-guide"}
    assert await documents(("handbook", "ja-")) == {"billing-refunds", "accounts-password-reset",
                                                    "ja-shipping-returns"}
    assert await documents(("no-such-source",)) == set()
    assert await documents(("leads-",)) == set(), "narrowing never shows what the channel may not see"
    assert await documents(("leads-",), channels=("C0LEADS",)) == {"leads-escalation-matrix"}
