"""`verbatim serve`'s background sync: a source is synced on its interval, and /metrics says how each one does."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bot.metrics import Metrics
from bot.runtime.retrieval import Retrieval
from bot.settings import Settings
from bot.source_schedule import is_due, state_file, sync_due_sources
from retrieval.embedders.local import E5Embedder
from retrieval.source_sync import SourceState
from retrieval.store import ChunkStore
from retrieval.weaviate_server import WeaviateHandle
from tests.retrieval.git_repo import Repo

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(("last_sync", "interval", "due"), [
    (None, 60, True),  # never synced
    ("2026-05-01T11:00:00+00:00", 60, True),
    ("2026-05-01T11:30:00+00:00", 60, False),
    ("2026-05-01T11:55:00+00:00", 5, True),
    ("not a time", 60, True),
])
def test_a_source_is_due_on_its_interval(last_sync: str | None, interval: float, due: bool) -> None:
    assert is_due(SourceState(last_sync=last_sync), interval, NOW) is due


async def test_a_pass_syncs_the_due_sources_and_metrics_count_documents_and_failures(
    store: ChunkStore, embedder: E5Embedder, weaviate: WeaviateHandle, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "docs-repo")
    repo.write("docs/refunds.md", "# Refunds\n\nAnnual plans can be refunded in full within 30 days.\n")
    repo.write("docs/ru/first-line.md", "# Первая линия\n\nОбращение передаётся на вторую линию через 15 минут.\n")
    repo.commit("docs")
    home = tmp_path / "home"
    home.mkdir()
    (home / "sources.toml").write_text(f'[sources.docs]\ntype = "git"\nurl = "{repo.path}"\ninterval_minutes = 30\n\n'
                                       f'[sources.gone]\ntype = "git"\nurl = "{tmp_path / "missing"}"\n',
                                       encoding="utf-8")
    settings = Settings(verbatim_home=home, verbatim_collection=store.name, _env_file=None)
    retrieval = Retrieval(settings=settings, weaviate=weaviate, store=store, embedder=embedder, cohere=None)
    metrics = Metrics.create()

    assert await sync_due_sources(settings, retrieval, metrics) == ["docs", "gone"]
    assert {r.document_id for r in await store.documents()} == {"docs:docs/refunds.md", "docs:docs/ru/first-line.md"}
    exposition = metrics.exposition().decode()
    assert 'verbatim_source_documents{source="docs"} 2.0' in exposition
    assert 'verbatim_source_sync_failures_total{source="gone"} 1.0' in exposition
    assert 'verbatim_source_last_success_timestamp_seconds{source="docs"}' in exposition
    assert 'verbatim_source_last_success_timestamp_seconds{source="gone"}' not in exposition

    assert await sync_due_sources(settings, retrieval, metrics) == []  # neither is due yet
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=31)
    (repo.path / "docs/ru/first-line.md").unlink()
    repo.commit("first line moved")
    assert await sync_due_sources(settings, retrieval, metrics, now=later) == ["docs"]
    assert {r.document_id for r in await store.documents()} == {"docs:docs/refunds.md"}
    assert (await state_file(settings).load("gone")).failures == 1  # its hour is not over: not retried yet
