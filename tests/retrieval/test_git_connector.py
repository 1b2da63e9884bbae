"""The git connector against real local repositories and the real Weaviate: a docs folder synced by commit, with
deletions and renames found by the diff, links to the file and heading, in three languages."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.chunking import ChunkingConfig
from retrieval.connectors import SourceFailed
from retrieval.connectors.git import GitConnector
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits
from retrieval.source_sync import SourceReport, SourceState, sync_source
from retrieval.sources import parse_sources
from retrieval.store import ChunkStore
from tests.retrieval.git_repo import Repo
from retrieval.chunks import Chunk
from retrieval.search import search
from retrieval.search_config import SearchConfig
from tests.retrieval.test_ingest_and_search import top_documents
from tests.retrieval.test_sync import changes

REFUNDS = "# Refund policy\n\nIntro.\n\n## Annual plans\n\nAnnual plans can be refunded in full within 30 days.\n"
RETURNS_JA = "# 返品\n\n## 返品の期限\n\n返品は商品到着後30日以内に受け付けます。送料は550円です。\n"
FIRST_LINE_RU = ("# Первая линия\n\nЕсли оператор не может решить вопрос за 15 минут, обращение передаётся "
                 "на вторую линию.\n")


def spec_for(repo: Repo, extra: str = ""):
    text = (f'[sources.docs]\ntype = "git"\nurl = "{repo.path.as_uri()}"\npaths = ["docs"]\n'
            'web_url = "https://git.example.com/acme/docs/blob/{commit}/{path}"\n' + extra)
    return parse_sources(text, "sources.toml")[0]


async def top_chunk(store: ChunkStore, embedder: E5Embedder, query: str) -> Chunk:
    return (await search(query, store=store, embedder=embedder, config=SearchConfig(), limit=5)).hits[0].chunk


async def sync(spec, store: ChunkStore, embedder: E5Embedder, state: SourceState, cache: Path) -> SourceReport:
    return await sync_source(spec, store=store, embedder=embedder, chunking=ChunkingConfig(), limits=IngestLimits(),
                             state=state, cache_root=cache)


async def test_a_repository_is_synced_by_commit_with_deletions_renames_and_links(
    store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "docs-repo")
    repo.write("docs/billing/refunds.md", REFUNDS)
    repo.write("docs/ja/返品.md", RETURNS_JA)
    repo.write("docs/ru/first-line.md", FIRST_LINE_RU)
    repo.write("README.md", "# Not synced\n\nOutside the docs folder.\n")
    repo.write("docs/logo.png", "not a document")
    first_commit = repo.commit("docs")
    spec, cache = spec_for(repo), tmp_path / "cache"

    first = await sync(spec, store, embedder, SourceState(), cache)
    assert first.error is None and first.state.cursor == first_commit
    assert changes(first.sync) == {"added": ["docs:docs/billing/refunds.md", "docs:docs/ja/返品.md",
                                             "docs:docs/ru/first-line.md"]}
    assert {r.source for r in await store.documents()} == {"docs"}
    chunk = await top_chunk(store, embedder, "refunded in full within 30 days")
    assert chunk.document_id == "docs:docs/billing/refunds.md" and chunk.section == "Annual plans"
    assert chunk.url == (f"https://git.example.com/acme/docs/blob/{first_commit}/docs/billing/refunds.md"
                         "#annual-plans")
    assert chunk.version == first_commit[:12] and chunk.updated_at is not None
    ja = await top_chunk(store, embedder, "返品の期限はいつまでですか")
    assert ja.url is not None and ja.url.endswith("/docs/ja/返品.md#返品の期限")

    # One commit: a page edited, one deleted, one renamed, one added outside the synced folder.
    repo.write("docs/billing/refunds.md", REFUNDS.replace("30 days", "14 days"))
    (repo.path / "docs/ru/first-line.md").unlink()
    repo.git("mv", "docs/ja/返品.md", "docs/ja/returns.md")
    repo.write("notes/todo.md", "# Todo\n\nNot in docs.\n")
    second_commit = repo.commit("edit, delete, rename")
    second = await sync(spec, store, embedder, first.state, cache)
    assert second.error is None and second.state.cursor == second_commit
    assert changes(second.sync) == {"added": ["docs:docs/ja/returns.md"], "replaced": ["docs:docs/billing/refunds.md"],
                                    "removed": ["docs:docs/ja/返品.md", "docs:docs/ru/first-line.md"]}
    assert second.sync.unchanged == ()  # only what the diff named was read
    assert "docs:docs/ru/first-line.md" not in await top_documents(store, embedder,
                                                                     "Когда обращение передаётся на вторую линию?")
    edited = await top_chunk(store, embedder, "refunded in full")
    assert "14 days" in edited.text and edited.version == second_commit[:12]

    again = await sync(spec, store, embedder, second.state, cache)  # nothing committed: nothing read
    assert changes(again.sync) == {} and again.sync.unchanged == () and again.state.cursor == second_commit


async def test_an_index_without_the_sources_documents_is_filled_again_despite_its_cursor(
    store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "docs-repo")
    repo.write("docs/refunds.md", REFUNDS)
    head = repo.commit("docs")
    report = await sync(spec_for(repo), store, embedder, SourceState(cursor=head), tmp_path / "cache")
    assert changes(report.sync) == {"added": ["docs:docs/refunds.md"]}


async def test_a_repository_that_cannot_be_reached_keeps_its_documents(
    store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "docs-repo")
    repo.write("docs/refunds.md", REFUNDS)
    repo.commit("docs")
    spec, cache = spec_for(repo), tmp_path / "cache"
    first = await sync(spec, store, embedder, SourceState(), cache)
    moved = tmp_path / "elsewhere"
    repo.path.rename(moved)
    report = await sync(spec, store, embedder, first.state, cache)
    assert report.error is not None and report.error.startswith("source 'docs': git fetch failed: ")
    assert changes(report.sync) == {}
    assert [r.document_id for r in await store.documents()] == ["docs:docs/refunds.md"]
    assert report.state.cursor == first.state.cursor and report.state.failures == 1
    assert report.state.last_success == first.state.last_success


async def test_a_private_https_token_is_never_in_a_message(tmp_path: Path) -> None:
    spec = parse_sources('[sources.wiki]\ntype = "git"\nurl = "https://user:s3cret@127.0.0.1:9/acme/docs.wiki.git"\n'
                         'token_env = "WIKI_TOKEN"\n', "sources.toml")[0]
    connector = GitConnector.from_spec(spec, tmp_path, {"WIKI_TOKEN": "t0ken-value"})
    assert "s3cret" not in repr(connector) and "t0ken" not in repr(connector)
    with pytest.raises(SourceFailed) as raised:
        await connector.check()
    assert "s3cret" not in str(raised.value) and "t0ken" not in str(raised.value)
    assert str(raised.value).startswith("git clone failed: ")
