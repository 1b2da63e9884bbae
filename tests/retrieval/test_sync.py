"""A sync against the real Weaviate: the index mirrors its folders, per folder, and never loses what failed to load."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

from weaviate.classes.config import Configure, DataType, Property, Tokenization
from weaviate.classes.query import Filter

from retrieval.chunking import ChunkingConfig
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits, Status, ingest, load_paths
from retrieval.store import ChunkStore
from retrieval.sync_run import SyncReport, preview_sync, run_sync
from retrieval.weaviate_server import WeaviateHandle
from tests.retrieval.test_ingest_and_search import top_documents

LIMITS = IngestLimits(max_file_bytes=1_000_000, max_document_chars=200_000)

REFUNDS = "# Refund policy\n\nAnnual plans can be refunded in full within 30 days of purchase.\n"
RETURNS_JA = "# 返品\n\n返品は商品到着後30日以内に受け付けます。送料は550円です。\n"
FIRST_LINE_RU = ("# Первая линия\n\nЕсли оператор не может решить вопрос за 15 минут, обращение передаётся "
                 "на вторую линию.\n")
KB = ('{"document_id": "kb-hours", "title": "Support hours", "text": "Chat support is open from 8:00 to 20:00."}\n'
      '{"document_id": "kb-sla", "title": "SLA", "text": "Priority tickets get a first reply within one hour."}\n')


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


async def sync(store: ChunkStore, embedder: E5Embedder, *paths: Path) -> SyncReport:
    return await run_sync(list(paths), store=store, embedder=embedder, chunking=ChunkingConfig(), limits=LIMITS)


def changes(report: SyncReport) -> dict[str, list[str]]:
    got = {"added": sorted(report.added), "replaced": sorted(report.replaced),
           "removed": sorted(r.document_id for r in report.removed), "kept": sorted(r.document_id for r in report.kept),
           "failed": sorted(o.source for o in report.failures)}
    return {k: v for k, v in got.items() if v}


async def stored_objects(weaviate: WeaviateHandle, collection: str, document_id: str) -> int:
    response = await weaviate.client.collections.use(collection).query.fetch_objects(
        filters=Filter.by_property("document_id").equal(document_id), limit=1000)
    return len(response.objects)


async def test_a_folder_in_three_languages_is_mirrored_and_a_dry_run_changes_nothing(
    store: ChunkStore, embedder: E5Embedder, weaviate: WeaviateHandle, tmp_path: Path
) -> None:
    wiki = tmp_path / "wiki"
    write(wiki / "en" / "refunds.md", REFUNDS)
    write(wiki / "ja" / "返品.md", RETURNS_JA)
    write(wiki / "ru" / "first-line.md", FIRST_LINE_RU)
    write(wiki / "kb.jsonl", KB)
    first = await sync(store, embedder, wiki)
    assert changes(first) == {"added": ["en/refunds.md", "ja/返品.md", "kb-hours", "kb-sla", "ru/first-line.md"]}
    assert (await top_documents(store, embedder, "Когда обращение передаётся на вторую линию?"))[0] == "ru/first-line.md"
    assert await stored_objects(weaviate, store.sentences_name, "ru/first-line.md") > 0

    write(wiki / "ja" / "返品.md", RETURNS_JA.replace("550円", "770円"))
    (wiki / "ru" / "first-line.md").unlink()
    write(wiki / "kb.jsonl", KB.splitlines(keepends=True)[0])
    write(wiki / "en" / "shipping.md", "# Shipping\n\nOrders ship within two business days.\n")
    expected = {"added": ["en/shipping.md"], "replaced": ["ja/返品.md"], "removed": ["kb-sla", "ru/first-line.md"]}

    registry_before, chunks_before = await store.documents(), await store.count()
    preview = await preview_sync([wiki], registry_before, limits=LIMITS)
    assert preview.dry_run and changes(preview) == expected
    assert sorted(preview.unchanged) == ["en/refunds.md", "kb-hours"]
    assert await store.documents() == registry_before and await store.count() == chunks_before

    second = await sync(store, embedder, wiki)
    assert changes(second) == expected and sorted(second.unchanged) == ["en/refunds.md", "kb-hours"]
    assert {r.document_id for r in await store.documents()} == {"en/refunds.md", "en/shipping.md", "ja/返品.md",
                                                                 "kb-hours"}
    for gone in ("ru/first-line.md", "kb-sla"):  # chunks, sentence vectors and registry entry all deleted
        assert await stored_objects(weaviate, store.name, gone) == 0
        assert await stored_objects(weaviate, store.sentences_name, gone) == 0
    assert "ru/first-line.md" not in await top_documents(store, embedder, "Когда обращение передаётся на вторую линию?")
    assert changes(await sync(store, embedder, wiki)) == {}  # nothing left to do


async def test_syncing_one_folder_never_removes_another_folders_documents(
    store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    wiki, wiki_old = tmp_path / "wiki", tmp_path / "wiki-old"  # one name the prefix of the other
    write(wiki / "refunds.md", REFUNDS)
    write(wiki / "返品.md", RETURNS_JA)
    write(wiki_old / "first-line.md", FIRST_LINE_RU)
    await sync(store, embedder, wiki)
    await sync(store, embedder, wiki_old)

    (wiki / "返品.md").unlink()
    assert changes(await sync(store, embedder, wiki)) == {"removed": ["返品.md"]}
    (wiki_old / "first-line.md").unlink()
    assert changes(await sync(store, embedder, wiki / "refunds.md")) == {}  # a file of the folder: only itself
    assert {r.document_id for r in await store.documents()} == {"refunds.md", "first-line.md"}


async def test_a_file_that_fails_to_load_keeps_its_documents(store: ChunkStore, embedder: E5Embedder,
                                                            tmp_path: Path) -> None:
    wiki = tmp_path / "wiki"
    write(wiki / "refunds.md", REFUNDS)
    write(wiki / "kb.jsonl", KB)
    await sync(store, embedder, wiki)

    write(wiki / "refunds.md", REFUNDS.encode("utf-8") + "Café".encode("latin-1"))  # no longer UTF-8
    write(wiki / "kb.jsonl", KB.splitlines(keepends=True)[0] + "{oops\n")  # kb-sla's line broken
    report = await sync(store, embedder, wiki)
    assert changes(report) == {"kept": ["kb-sla", "refunds.md"], "failed": [f"{wiki}/kb.jsonl:2", f"{wiki}/refunds.md"]}
    assert [o.message.split(" (")[0] for o in report.failures] == ["not valid JSON", "not UTF-8 text"]
    assert (await top_documents(store, embedder, "refund within 30 days"))[0] == "refunds.md"

    (wiki / "refunds.md").unlink()  # gone for real now: removed
    assert changes(await sync(store, embedder, wiki)) == {"removed": ["refunds.md"], "kept": ["kb-sla"],
                                                          "failed": [f"{wiki}/kb.jsonl:2"]}


async def test_an_index_from_before_sources_were_recorded_keeps_working(
    weaviate: WeaviateHandle, embedder: E5Embedder, tmp_path: Path
) -> None:
    """A registry without the source_path property gets it; its documents are never removed by a sync until a
    sync has seen them, and seeing an unchanged one only records its source (nothing is embedded again)."""
    name = f"Test{uuid.uuid4().hex[:12]}"
    await weaviate.client.collections.create(  # the registry as Verbatim made it before this change
        f"{name}Document", vector_config=Configure.Vectors.self_provided(),
        properties=[Property(name="document_id", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                    Property(name="content_hash", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                    Property(name="version", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                    Property(name="title", data_type=DataType.TEXT, index_searchable=False),
                    Property(name="chunk_count", data_type=DataType.INT)],
    )
    store = ChunkStore(weaviate.client, name)
    try:
        await store.open(embedder.name, embedder.dim, create=True)
        registry = await weaviate.client.collections.use(store.registry_name).config.get()
        assert "source_path" in {prop.name for prop in registry.properties}

        wiki = tmp_path / "wiki"
        write(wiki / "refunds.md", REFUNDS)
        write(wiki / "返品.md", RETURNS_JA)
        legacy = [replace(d, source_path=None) for d in load_paths([wiki], LIMITS)]  # what an older ingest wrote
        await ingest(legacy, store=store, embedder=embedder, chunking=ChunkingConfig())
        assert {r.source_path for r in await store.documents()} == {None}

        (wiki / "返品.md").unlink()
        report = await sync(store, embedder, wiki)
        assert changes(report) == {} and report.unchanged == ("refunds.md",) and report.chunks == 0
        recorded = {r.document_id: r.source_path for r in await store.documents()}
        assert recorded == {"refunds.md": str(wiki.resolve() / "refunds.md"), "返品.md": None}

        (wiki / "refunds.md").unlink()
        assert changes(await sync(store, embedder, wiki)) == {"removed": ["refunds.md"]}
        assert [r.document_id for r in await store.documents()] == ["返品.md"]  # never seen by a sync: kept
    finally:
        await store.drop()


async def test_removing_documents_by_id_takes_them_out_of_search(store: ChunkStore, embedder: E5Embedder,
                                                                weaviate: WeaviateHandle, tmp_path: Path) -> None:
    write(tmp_path / "kb.jsonl", KB)
    report = await ingest(load_paths([tmp_path], LIMITS), store=store, embedder=embedder, chunking=ChunkingConfig())
    assert report.count(Status.INGESTED) == 2
    await store.remove_documents(["kb-sla", "never-indexed"])
    assert [r.document_id for r in await store.documents()] == ["kb-hours"]
    assert await stored_objects(weaviate, store.name, "kb-sla") == 0
    assert "kb-sla" not in await top_documents(store, embedder, "How fast is the first reply to a priority ticket?")
