"""Sync speed by connector: the first sync of N documents, a re-sync when nothing changed, and one after 1% changed.

    python -m bench.sync_speed [--documents 1000] [--sources git,zendesk,confluence,gdrive,notion]

Each source holds N short support articles (``bench/sync_corpus.py``: English, Japanese and Russian in turn, a
title and three sections each): ``git`` a real local repository (Markdown files, committed), the others their local
stand-in (``tests/standins/``, an aiohttp server in this process) seeded through its own API, as the connector tests
seed them. Everything between runs through the real engine: ``retrieval.source_sync.sync_source`` with the
connector's real client library, the real e5 embedder (ONNX Runtime, on every core this process may use; its model
loaded before timing) and a real Weaviate Embedded (the bench's own, slot 9), one fresh collection per source.

Timed per source: *first sync* (an empty index, no cursor), split into the connector's pull (from the first event
asked to the last received: the engine drains the pull before it ingests), the embedder's calls, and the rest
(chunking, the registry, what of the Weaviate writes did not overlap the embedding); *no change*: the same sync
again with the cursor it left (what a schedule costs when nothing changed); *1% changed*: a new version of 1% of the
articles (at least one) saved at the source, then a sync. Each sync is checked to have done what it should (N added;
nothing; the edited ones replaced), or the bench stops. Raw rows in bench/out/sync_speed.json (a source run again
replaces its row); the table in docs/benchmarks.md, section "sync-speed", with the CPU model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import ROOT, bench_weaviate_config, machine_line, table, write_section
from bench.sync_corpus import Article, article, html, markdown
from retrieval.chunking import ChunkingConfig
from retrieval.connectors import Connector, Event
from retrieval.connectors.confluence import ConfluenceConnector
from retrieval.connectors.gdrive import DriveConnector
from retrieval.connectors.git import GitConnector
from retrieval.connectors.notion import NotionConnector
from retrieval.connectors.zendesk import ZendeskConnector
from retrieval.embedders import Embedder
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits
from retrieval.source_sync import SourceReport, SourceState, sync_source
from retrieval.sources import SourceSpec, parse_sources
from retrieval.store import ChunkStore
from retrieval.weaviate_server import connect
from tests.retrieval.git_repo import Repo
from tests.standins.confluence import ConfluenceStandIn
from tests.standins.confluence import Page as ConfluencePage
from tests.standins.gdrive import FOLDER, GOOGLE_DOC, DriveFile, DriveStandIn, Permission
from tests.standins.notion import NotionStandIn, h2, p
from tests.standins.notion import Page as NotionPage
from tests.standins.zendesk import Article as ZendeskArticle
from tests.standins.zendesk import ZendeskStandIn

SOURCES = ("git", "zendesk", "confluence", "gdrive", "notion")
RAW = ROOT / "bench" / "out" / "sync_speed.json"
TOKEN, EMAIL = "bench-t0ken", "docs-bot@acme.test"
LOCALES = {"en": "en-us", "ja": "ja", "ru": "ru"}


# -- the sources, seeded ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seeded:
    """A source holding the articles: its declaration, a connector for it, and how to save new versions there."""

    spec: SourceSpec
    connector: Callable[[], Connector]  # a fresh one per sync, as `verbatim sync` builds one
    edit: Callable[[Sequence[Article]], None]


def declared(text: str) -> SourceSpec:
    return parse_sources(text, "sources.toml")[0]


@asynccontextmanager
async def git_source(articles: Sequence[Article], work: Path) -> AsyncIterator[Seeded]:
    repo = Repo(work / "docs-repo")

    def write(batch: Sequence[Article], message: str) -> None:
        for a in batch:
            repo.write(f"docs/{a.language}/article-{a.number:05d}.md", markdown(a))
        repo.commit(message)

    write(articles, "docs")
    spec = declared(f'[sources.docs]\ntype = "git"\nurl = "{repo.path.as_uri()}"\npaths = ["docs"]\n'
                    'web_url = "https://git.example.com/acme/docs/blob/{commit}/{path}"\n')
    yield Seeded(spec, lambda: GitConnector.from_spec(spec, work / "cache", {}), lambda batch: write(batch, "edit"))


@asynccontextmanager
async def zendesk_source(articles: Sequence[Article], work: Path) -> AsyncIterator[Seeded]:
    zd = ZendeskStandIn(token=TOKEN, email=EMAIL, page_size=100)  # Zendesk's own per_page limit
    zd.categories = {locale: [{"id": i + 1, "name": "Support"}] for i, locale in enumerate(LOCALES.values())}
    zd.sections = {locale: [{"id": 10 * (i + 1), "name": "Articles", "category_id": i + 1}]
                   for i, locale in enumerate(LOCALES.values())}
    section = {language: 10 * (i + 1) for i, language in enumerate(LOCALES)}

    def put(batch: Sequence[Article]) -> None:
        for a in batch:
            zd.put(ZendeskArticle(a.number + 1, LOCALES[a.language], a.title, html(a), section_id=section[a.language]))

    async with zd.running():
        put(articles)
        spec = declared(f'[sources.help]\ntype = "zendesk"\nurl = "{zd.base_url}"\nemail = "{EMAIL}"\n'
                        'token_env = "ZD_TOKEN"\nlocales = ["en-us", "ja", "ru"]\n'
                        '[sources.help.visibility]\neveryone = "public"\n')
        yield Seeded(spec, lambda: ZendeskConnector.from_spec(spec, {"ZD_TOKEN": TOKEN}), put)


@asynccontextmanager
async def confluence_source(articles: Sequence[Article], work: Path) -> AsyncIterator[Seeded]:
    cf = ConfluenceStandIn(token=TOKEN, email=EMAIL, page_size=50, spaces={"KB": "Support"})  # the connector's limit

    def put(batch: Sequence[Article]) -> None:
        for a in batch:
            cf.put(ConfluencePage(str(1000 + a.number), "KB", a.title, html(a)))

    async with cf.running():
        put(articles)
        spec = declared(f'[sources.wiki]\ntype = "confluence"\nurl = "{cf.url}"\nemail = "{EMAIL}"\n'
                        'token_env = "CF_TOKEN"\nspaces = ["KB"]\n[sources.wiki.visibility]\n"space:KB" = "public"\n')
        yield Seeded(spec, lambda: ConfluenceConnector.from_spec(spec, {"CF_TOKEN": TOKEN}), put)


@asynccontextmanager
async def gdrive_source(articles: Sequence[Article], work: Path) -> AsyncIterator[Seeded]:
    gd = DriveStandIn(page_size=100)  # the connector's pageSize

    def put(batch: Sequence[Article]) -> None:
        for a in batch:
            gd.put(DriveFile(f"doc{a.number:05d}", a.title, GOOGLE_DOC, parents=("F1",),
                             content=html(a, heading_ids=True), permissions=(Permission("anyone"),)))

    async with gd.running():
        key = json.dumps(gd.service_account_key())
        gd.put(DriveFile("F1", "Support handbook", FOLDER))
        put(articles)
        spec = declared(f'[sources.drive]\ntype = "gdrive"\nfolders = ["F1"]\ntoken_env = "GDRIVE_KEY"\n'
                        f'api_url = "{gd.base_url}"\n[sources.drive.visibility]\nanyone = "public"\n')
        yield Seeded(spec, lambda: DriveConnector.from_spec(spec, {"GDRIVE_KEY": key}), put)


@asynccontextmanager
async def notion_source(articles: Sequence[Article], work: Path) -> AsyncIterator[Seeded]:
    def put(batch: Sequence[Article]) -> None:
        for a in batch:
            blocks = tuple(block for heading, paragraph in a.sections for block in (h2(heading), p(paragraph)))
            standin.put(NotionPage(uuid.uuid5(uuid.NAMESPACE_URL, f"bench/{a.number}").hex, a.title, blocks))

    async with NotionStandIn(token=TOKEN, workspace="Acme", page_size=100).running() as standin:  # Notion's limit
        put(articles)
        spec = declared(f'[sources.kb]\ntype = "notion"\ntoken_env = "NOTION_TOKEN"\napi_url = "{standin.base_url}"\n'
                        '[sources.kb.visibility]\nworkspace = "public"\n')
        yield Seeded(spec, lambda: NotionConnector.from_spec(spec, {"NOTION_TOKEN": TOKEN}), put)


SEEDERS = {"git": git_source, "zendesk": zendesk_source, "confluence": confluence_source, "gdrive": gdrive_source,
           "notion": notion_source}


# -- timing -------------------------------------------------------------------------------------------


class TimedConnector:
    """The connector, with the seconds its pull took: from the first event asked for to the last one received."""

    def __init__(self, inner: Connector) -> None:
        self.inner = inner
        self.seconds = 0.0

    async def check(self) -> str:
        return await self.inner.check()

    async def pull(self, cursor: str | None) -> AsyncIterator[Event]:
        started = time.perf_counter()
        async for event in self.inner.pull(cursor):
            yield event
        self.seconds += time.perf_counter() - started


class TimedEmbedder:
    """The embedder, with the seconds spent in its calls and the texts it was given (the ingest awaits one call at
    a time, so the seconds never overlap each other)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.seconds, self.texts = 0.0, 0

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = await self.inner.embed_documents(texts)
        self.seconds += time.perf_counter() - started
        self.texts += len(texts)
        return vectors

    async def embed_query(self, text: str) -> np.ndarray:
        return await self.inner.embed_query(text)

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True)
class Timed:
    report: SourceReport
    seconds: float
    pull_s: float
    embed_s: float
    texts: int


async def timed_sync(seeded: Seeded, store: ChunkStore, embedder: Embedder, state: SourceState,
                     cache_root: Path) -> Timed:
    connector, timed = TimedConnector(seeded.connector()), TimedEmbedder(embedder)
    started = time.perf_counter()
    report = await sync_source(seeded.spec, store=store, embedder=timed, chunking=ChunkingConfig(),
                               limits=IngestLimits(), state=state, cache_root=cache_root, connector=connector)
    seconds = time.perf_counter() - started
    if report.error is not None or report.sync.failures:
        raise SystemExit(f"{seeded.spec.name}: the sync failed: {report.error or report.sync.failures[0].message}")
    return Timed(report, seconds, connector.seconds, timed.seconds, timed.texts)


def expect(source: str, what: str, got: dict[str, int], wanted: dict[str, int]) -> None:
    """A sync that did not do what the step needs measured something else: stop rather than print it."""
    if {k: got[k] for k in wanted} != wanted:
        raise SystemExit(f"{source}, {what}: expected {wanted}, the sync did {got}")


async def measure(source: str, documents: int, store: ChunkStore, embedder: Embedder) -> dict[str, object]:
    articles = [article(n) for n in range(documents)]
    edits = math.ceil(documents / 100)
    changed = articles[:: documents // edits][:edits]  # spread over the corpus: every language and topic
    with tempfile.TemporaryDirectory(prefix="sync-bench-") as work:
        async with SEEDERS[source](articles, Path(work)) as seeded:
            cache = Path(work) / "cache"
            first = await timed_sync(seeded, store, embedder, SourceState(), cache)
            expect(source, "first sync", first.report.sync.summary(), {"added": documents, "replaced": 0})
            again = await timed_sync(seeded, store, embedder, first.report.state, cache)
            expect(source, "no change", again.report.sync.summary(), {"added": 0, "replaced": 0, "removed": 0})
            seeded.edit([article(a.number, revision=1) for a in changed])
            edited = await timed_sync(seeded, store, embedder, again.report.state, cache)
            expect(source, "1% changed", edited.report.sync.summary(),
                   {"added": 0, "replaced": len(changed), "removed": 0})
    return {"source": source, "documents": documents, "chunks": first.report.sync.chunks,
            "texts_embedded": first.texts, "first_s": first.seconds, "first_pull_s": first.pull_s,
            "first_embed_s": first.embed_s, "unchanged_s": again.seconds, "unchanged_pull_s": again.pull_s,
            "unchanged_reread": len(again.report.sync.unchanged), "changed": len(changed),
            "changed_s": edited.seconds, "changed_pull_s": edited.pull_s,
            "changed_reread": len(edited.report.sync.unchanged) + len(edited.report.sync.replaced),
            "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine_line()}


async def run(sources: Sequence[str], documents: int) -> list[dict[str, object]]:
    embedder = E5Embedder()
    handle = await connect(bench_weaviate_config(slot=9))
    rows = []
    try:
        await embedder.embed_documents(["load the model before timing"])
        for source in sources:
            store = ChunkStore(handle.client, f"BenchSyncSpeed_{source}")
            await store.drop()
            await store.open(embedder.name, embedder.dim, create=True)
            try:
                rows.append(await measure(source, documents, store, embedder))
            finally:
                await store.drop()
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        await embedder.aclose()
        await handle.close()
    return rows


# -- the table ----------------------------------------------------------------------------------------


def render(rows: Sequence[dict[str, object]]) -> str:
    def f(key: str, r: dict[str, object]) -> float:
        return float(r[key])  # type: ignore[arg-type]

    body = [[r["source"], r["at"], r["documents"], r["chunks"], f"{f('first_s', r):.1f}",
             f"{f('documents', r) / f('first_s', r):.1f}", f"{f('first_pull_s', r):.1f}",
             f"{f('first_embed_s', r):.1f}", f"{f('first_s', r) - f('first_pull_s', r) - f('first_embed_s', r):.1f}",
             f"{f('unchanged_s', r):.2f}", f"{f('unchanged_pull_s', r):.2f}", r["unchanged_reread"], r["changed"],
             f"{f('changed_s', r):.2f}", r["changed_reread"]] for r in rows]
    return "\n\n".join([
        "## Sync speed by connector (`python -m bench.sync_speed`)",
        *(f"Measured on: {machine}" for machine in dict.fromkeys(str(r["machine"]) for r in rows)),
        ("Each source holds *documents* short support articles (`bench/sync_corpus.py`: English, Japanese and "
         "Russian in turn, a title and three sections each, no sentence shared): `git` a local repository, the "
         "others their stand-in (`tests/standins/`, served from this process: a real service's round trips and "
         "rate limits are not in these times, the stand-in's own work is). Synced by `sync_source` through the "
         "connector's real client library, e5 on ONNX Runtime on every core (its model loaded before timing) and "
         "Weaviate Embedded, into an empty collection. *first sync s*: no index, no cursor; *documents/s*: "
         "documents over those seconds; *pull s*: the connector's pull within it (from the first event asked for "
         "to the last; the engine takes the whole pull before it ingests); *embedding s*: the embedder's calls; "
         "*rest s*: the remainder (chunking, the registry, what of the Weaviate writes did not overlap the "
         "embedding). *no change s*: the same sync again from the cursor it left, nothing changed at the source: "
         "what a scheduled sync of a quiet source costs; *no-change pull s*: its pull; *re-read*: documents the "
         "connector handed over although unchanged (skipped by their content hash). *1% changed*: articles saved "
         "at the source with new text (spread over languages and topics), then *re-sync s*, and the documents "
         "that sync was handed (*re-read*: the changed ones and any unchanged)."),
        table(["source", "measured", "documents", "chunks", "first sync s", "documents/s", "pull s", "embedding s",
               "rest s", "no change s", "no-change pull s", "re-read", "1% changed", "re-sync s", "re-read"], body),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000, help="articles per source (default 1000)")
    parser.add_argument("--sources", default=",".join(SOURCES), help="sources to run (the others keep their rows)")
    args = parser.parse_args()
    sources = args.sources.split(",")
    unknown = sorted(set(sources) - set(SOURCES))
    if unknown:
        parser.error(f"no such source: {', '.join(unknown)} (choose from {', '.join(SOURCES)})")
    if args.documents < 1:
        parser.error("--documents must be at least 1")
    fresh = asyncio.run(run(sources, args.documents))
    last = json.loads(RAW.read_text(encoding="utf-8")) if RAW.exists() else {"rows": []}
    by_source = {r["source"]: r for r in last["rows"] + fresh}  # a fresh row replaces its last
    rows = [by_source[s] for s in SOURCES if s in by_source]
    RAW.parent.mkdir(parents=True, exist_ok=True)
    RAW.write_text(json.dumps({"rows": rows}, indent=1, ensure_ascii=False), encoding="utf-8")
    write_section("sync-speed", render(rows))
    print(render(rows))


if __name__ == "__main__":
    main()
