"""The zendesk connector through its real httpx client against a local Help Center stand-in, into the real
Weaviate: articles in English, Japanese and Russian, paginated, incremental, drafts never indexed, archived and
restricted articles leaving, user segments mapped to channels, and 401, 429 + Retry-After and a 500 mid-sync."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.chunking import ChunkingConfig
from retrieval.connectors import SourceFailed
from retrieval.connectors.zendesk import ZendeskConnector
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.source_sync import SourceReport, SourceState, check_source, sync_source
from retrieval.sources import NOBODY, SourceSpec, parse_sources
from retrieval.store import ChunkStore
from tests.retrieval.test_sync import changes
from tests.retrieval.sources_common import visible
from tests.standins.zendesk import Article, ZendeskStandIn, real, status

TOKEN, EMAIL = "zd-t0ken-secret", "docs-bot@acme.test"
REFUNDS = "<h2>Annual plans</h2><p>Annual plans can be refunded in full within 30 days of purchase.</p>"
RETURNS_JA = "<h2>返品の期限</h2><p>返品は商品到着後30日以内に受け付けます。送料は550円です。</p>"
FIRST_LINE_RU = ("<h2>Передача обращения</h2><p>Если оператор не может решить вопрос за 15 минут, обращение "
                 "передаётся на вторую линию.</p>")
ESCALATION = "<p>Agents escalate a priority ticket to the duty engineer after one hour without a reply.</p>"
PAYROLL = "<p>Payroll questions go to the HR business partner of your region.</p>"


@pytest.fixture
async def zendesk() -> AsyncIterator[ZendeskStandIn]:
    zd = ZendeskStandIn(token=TOKEN, email=EMAIL)
    zd.categories = {"en-us": [{"id": 1, "name": "Billing"}], "ja": [{"id": 2, "name": "配送"}],
                     "ru": [{"id": 3, "name": "Поддержка"}]}
    zd.sections = {"en-us": [{"id": 10, "name": "Refunds", "category_id": 1}],
                   "ja": [{"id": 20, "name": "返品", "category_id": 2}],
                   "ru": [{"id": 30, "name": "Линии", "category_id": 3}]}
    async with zd.running():
        yield zd


def spec_for(zd: ZendeskStandIn, max_wait_s: float = 30) -> SourceSpec:
    return parse_sources(f'''[sources.help]
type = "zendesk"
url = "{zd.base_url}"
email = "{EMAIL}"
token_env = "ZD_TOKEN"
locales = ["en-us", "ja", "ru"]
max_wait_s = {max_wait_s}

[sources.help.visibility]
everyone = "public"
"segment:7" = ["C0AGENTS"]
''', "sources.toml")[0]


async def sync(zd: ZendeskStandIn, store: ChunkStore, embedder: E5Embedder, state: SourceState, tmp_path: Path,
               *, token: str = TOKEN, max_wait_s: float = 30) -> SourceReport:
    spec = spec_for(zd, max_wait_s)
    connector = ZendeskConnector.from_spec(spec, {"ZD_TOKEN": token})
    return await sync_source(spec, store=store, embedder=embedder, chunking=ChunkingConfig(), limits=IngestLimits(),
                             state=state, cache_root=tmp_path, connector=connector)


def seed(zd: ZendeskStandIn) -> None:
    zd.put(Article(101, "en-us", "Refund policy", REFUNDS, section_id=10))
    zd.put(Article(102, "ja", "返品について", RETURNS_JA, section_id=20))
    zd.put(Article(103, "ru", "Первая линия", FIRST_LINE_RU, section_id=30))
    zd.put(Article(104, "en-us", "Escalation", ESCALATION, user_segment_id=7))
    zd.put(Article(105, "en-us", "Payroll", PAYROLL, user_segment_id=99))
    zd.put(Article(106, "en-us", "Unreleased pricing", "<p>Prices rise by 40% next quarter.</p>", draft=True))


async def test_a_help_center_is_synced_by_locale_incrementally_with_drafts_archives_and_segments(
    zendesk: ZendeskStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(zendesk)
    first = await sync(zendesk, store, embedder, SourceState(), tmp_path)
    assert first.error is None
    assert changes(first.sync) == {"added": ["help:101/en-us", "help:102/ja", "help:103/ru", "help:104/en-us",
                                             "help:105/en-us"]}
    assert first.unmapped == ("help:105/en-us",)
    pages = [q.get("page", "1") for p, q, _ in zendesk.requests if p.endswith("/incremental/articles")]
    assert pages == ["1", "2", "3"]  # six articles, two a page

    hits = (await search("How long can an annual plan be refunded?", store=store, embedder=embedder,
                         config=SearchConfig(), limit=3)).hits
    assert hits[0].chunk.document_id == "help:101/en-us"
    assert hits[0].chunk.section == "Billing > Refunds > Annual plans"
    assert hits[0].chunk.url == f"{zendesk.base_url}/hc/en-us/articles/101"
    assert hits[0].chunk.version is not None and hits[0].chunk.version.endswith("Z")
    assert (await visible(store, embedder, "返品は何日以内ですか"))[0] == "help:102/ja"
    assert (await visible(store, embedder, "Когда обращение передаётся на вторую линию?"))[0] == "help:103/ru"
    assert "help:104/en-us" not in await visible(store, embedder, "When is a priority ticket escalated?")
    assert (await visible(store, embedder, "When is a priority ticket escalated?", "C0AGENTS"))[0] == "help:104/en-us"
    assert "help:106/en-us" not in await visible(store, embedder, "Do prices rise next quarter?", "C0AGENTS")
    payroll = (await store.current(["help:105/en-us"]))["help:105/en-us"]
    assert payroll.source == "help"
    assert "help:105/en-us" not in await visible(store, embedder, "Who answers payroll questions?", NOBODY + "x")

    zendesk.tick()
    zendesk.requests.clear()
    zendesk.put(Article(101, "en-us", "Refund policy", REFUNDS.replace("30 days", "14 days"), section_id=10))
    zendesk.remove(102, "ja")  # archived
    zendesk.put(Article(103, "ru", "Первая линия", FIRST_LINE_RU, section_id=30, draft=True))  # back to draft
    zendesk.put(Article(104, "en-us", "Escalation", ESCALATION, user_segment_id=99))  # restricted further
    second = await sync(zendesk, store, embedder, first.state, tmp_path)
    assert second.error is None
    assert changes(second.sync) == {"replaced": ["help:101/en-us", "help:104/en-us"],
                                    "removed": ["help:102/ja", "help:103/ru"]}
    incremental = [q for p, q, _ in zendesk.requests if p.endswith("/incremental/articles")]
    assert incremental[0]["start_time"] == first.state.cursor  # only what changed since the last sync was read
    assert "help:104/en-us" not in await visible(store, embedder, "When is a priority ticket escalated?", "C0AGENTS")
    assert "help:102/ja" not in await visible(store, embedder, "返品は何日以内ですか")

    third = await sync(zendesk, store, embedder, second.state, tmp_path)
    assert changes(third.sync) == {} and third.sync.unchanged == ()


async def test_429_is_waited_out_as_retry_after_asks_and_a_500_mid_sync_keeps_what_is_indexed(
    zendesk: ZendeskStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(zendesk)
    zendesk.script("/api/v2/help_center/incremental/articles", status(429, retry_after=1))
    first = await sync(zendesk, store, embedder, SourceState(), tmp_path)
    assert first.error is None and len(first.sync.added) == 5
    limited, retried = [t for p, _, t in zendesk.requests if p.endswith("/incremental/articles")][:2]
    assert retried - limited >= 1.0  # it waited as long as Retry-After said before asking again

    zendesk.tick()
    zendesk.put(Article(101, "en-us", "Refund policy", REFUNDS.replace("30 days", "14 days"), section_id=10))
    zendesk.put(Article(107, "en-us", "Shipping", "<p>Orders ship within two business days.</p>", section_id=10))
    zendesk.put(Article(108, "en-us", "Invoices", "<p>Invoices are emailed on the first of the month.</p>"))
    zendesk.remove(102, "ja")
    zendesk.script("/api/v2/help_center/incremental/articles", real(), status(500))  # page 2 fails
    failed = await sync(zendesk, store, embedder, first.state, tmp_path)
    assert failed.error == ("source 'help': Zendesk answered HTTP 500 for /api/v2/help_center/incremental/articles: "
                            "try again later; its indexed documents are kept")
    assert failed.sync.removed == ()  # the archived article is only removed by a sync that read everything
    assert failed.sync.replaced == ("help:101/en-us",)  # what the first page brought is written
    assert "help:102/ja" in {r.document_id for r in await store.documents()}
    assert failed.state.cursor == first.state.cursor and failed.state.failures == 1

    healed = await sync(zendesk, store, embedder, failed.state, tmp_path)
    assert healed.error is None and healed.state.failures == 0
    assert "help:102/ja" in {r.document_id for r in healed.sync.removed}
    assert {"help:107/en-us", "help:108/en-us"} <= set(healed.sync.added) | set(healed.sync.unchanged) | set(
        failed.sync.added)


async def test_a_refused_token_is_one_line_without_the_secret_and_nothing_is_removed(
    zendesk: ZendeskStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(zendesk)
    first = await sync(zendesk, store, embedder, SourceState(), tmp_path)
    refused = await sync(zendesk, store, embedder, first.state, tmp_path, token="revoked-token")
    assert refused.error == ("source 'help': Zendesk refused the credentials (HTTP 401): check the API token, its "
                             "email and that the user may read the Help Center")
    assert len(await store.documents()) == 5
    with pytest.raises(SourceFailed) as raised:
        await check_source(spec_for(zendesk), cache_root=tmp_path,
                           connector=ZendeskConnector.from_spec(spec_for(zendesk), {"ZD_TOKEN": "revoked-token"}))
    assert "HTTP 401" in str(raised.value) and "revoked" not in str(raised.value)
    assert "revoked" not in repr(ZendeskConnector.from_spec(spec_for(zendesk), {"ZD_TOKEN": "revoked-token"}))
    ok = await check_source(spec_for(zendesk), cache_root=tmp_path,
                            connector=ZendeskConnector.from_spec(spec_for(zendesk), {"ZD_TOKEN": TOKEN}))
    assert ok == f"{zendesk.base_url}: signed in as {EMAIL}, locales en-us, ja, ru"


async def test_429s_past_the_patience_end_the_sync_with_one_line(
    zendesk: ZendeskStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(zendesk)
    zendesk.script("/api/v2/help_center/", status(429, retry_after=3600))
    report = await sync(zendesk, store, embedder, SourceState(), tmp_path, max_wait_s=5)
    assert report.error == ("source 'help': Zendesk is rate limiting (HTTP 429, Retry-After 3600) past max_wait_s: "
                            "sync again later, or raise max_wait_s")
