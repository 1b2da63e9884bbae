"""The notion connector through the real notion-client against a local stand-in of Notion's API, into the real
Weaviate: pages in English, Japanese and Russian shared with an integration, under a root page, paginated,
incremental by last_edited_time, child pages and database entries as documents of their own, headings as
sections linking to their block, trashed, unshared and moved pages leaving, an empty page reported, and 401,
429 + Retry-After and a 500 mid-sync."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from bot.answer.evidence import load_models
from bot.answer.render import to_json
from bot.answer.service import AnswerConfig, AnswerDeps, answer
from bot.answer.types import Question
from retrieval.chunking import ChunkingConfig
from retrieval.connectors import Gone, Item, Skipped, SourceFailed
from retrieval.connectors.notion import NotionBlock, NotionConnector, NotionPage, page_event
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.source_sync import SourceReport, SourceState, check_source, sync_source
from retrieval.sources import SourceSpec, SourcesError, parse_sources
from retrieval.store import ChunkStore
from tests.retrieval.test_sync import changes
from tests.retrieval.sources_common import visible
from tests.standins.notion import (DataSource, NotionStandIn, Page, block_id_at, child_page, divider, h1, h2, image,
                                   li, p, real, status, toggle)

TOKEN = "ntn_s3cret_integration_token"
ROOT, INDEX = "1f2e3d4c5b6a79881f2e3d4c5b6a7988", "2a2a2a2a2a2a4b2b8c2c2c2c2c2c2c2c"
REFUNDS = "3b3b3b3b3b3b4c3c9d3d3d3d3d3d3d3d"
RETURNS_JA, FIRST_LINE_RU = "4c4c4c4c4c4c4d4da4e4e4e4e4e4e4e4", "5d5d5d5d5d5d4e5eb5f5f5f5f5f5f5f5"
INVOICES, PAYROLL = "6e6e6e6e6e6e4f6fc6a6a6a6a6a6a6a6", "7f7f7f7f7f7f4a7ad7b7b7b7b7b7b7b7"
SHIPPING = "8a8a8a8a8a8a4b8be8c8c8c8c8c8c8c8"
FAQ_SOURCE, FAQ_DATABASE = "9b9b9b9b9b9b4c9cf9d9d9d9d9d9d9d9", "0c0c0c0c0c0c4d0da0e0e0e0e0e0e0e0"

ANNUAL = "Annual plans can be refunded in full within 30 days of purchase."
RETURNS = "返品は商品到着後30日以内に受け付けます。送料は550円です。"
HANDOVER = "Если оператор не может решить вопрос за 15 минут, обращение передаётся на вторую линию."


@pytest.fixture
async def notion() -> AsyncIterator[NotionStandIn]:
    async with NotionStandIn(token=TOKEN, workspace="Acme 株式会社").running() as standin:
        yield standin


def spec_for(notion: NotionStandIn, *, roots: bool = True, max_wait_s: float = 30) -> SourceSpec:
    root_pages = f'root_pages = ["https://www.notion.so/acme/Support-handbook-{ROOT}?pvs=4"]\n' if roots else ""
    return parse_sources(f'''[sources.kb]
type = "notion"
token_env = "NOTION_TOKEN"
api_url = "{notion.base_url}"
max_wait_s = {max_wait_s}
{root_pages}
[sources.kb.visibility]
everyone = "public"
workspace = ["C0SUPPORT"]
''', "sources.toml")[0]


async def sync(notion: NotionStandIn, store: ChunkStore, embedder: E5Embedder, state: SourceState, tmp_path: Path,
               *, token: str = TOKEN, roots: bool = True, max_wait_s: float = 30) -> SourceReport:
    spec = spec_for(notion, roots=roots, max_wait_s=max_wait_s)
    connector = NotionConnector.from_spec(spec, {"NOTION_TOKEN": token})
    return await sync_source(spec, store=store, embedder=embedder, chunking=ChunkingConfig(), limits=IngestLimits(),
                             state=state, cache_root=tmp_path, connector=connector)


def kb(key: str) -> str:
    return f"kb:{key}"


def refunds(days: str = "30 days") -> Page:
    return Page(REFUNDS, "Refund policy", (h2("Annual plans"), p(ANNUAL.replace("30 days", days)),
                                           h2("Monthly plans"), li("Monthly plans are not refunded.")),
                parent=("page_id", INDEX), public=True)


def seed(notion: NotionStandIn) -> None:
    """A root page with an index page of policies, a Japanese page, a Russian child page inside a toggle, a
    database of FAQ entries under the root, and a page outside the root."""
    notion.data_sources[FAQ_SOURCE] = DataSource(FAQ_SOURCE, FAQ_DATABASE, "FAQ", ("page_id", ROOT))
    notion.put(Page(ROOT, "Support handbook", (p("This handbook answers the questions customers ask support."),
                                               child_page(INDEX, "Policies"),
                                               toggle("Линии поддержки", child_page(FIRST_LINE_RU, "Первая линия")))))
    notion.put(Page(INDEX, "Policies", (h1("Policies"), child_page(REFUNDS, "Refund policy")), ("page_id", ROOT)))
    notion.put(refunds())
    notion.put(Page(RETURNS_JA, "返品について", (h2("返品の期限"), p(RETURNS)), ("page_id", ROOT)))
    notion.put(Page(FIRST_LINE_RU, "Первая линия", (h2("Передача обращения"), p(HANDOVER)),
                    ("block_id", block_id_at(ROOT, 2))))
    notion.put(Page(INVOICES, "Invoices", (p("Invoices are emailed on the first business day of the month."),),
                    ("data_source_id", FAQ_SOURCE)))
    notion.put(Page(PAYROLL, "Payroll", (p("Payroll questions go to the HR business partner of your region."),)))


async def test_shared_pages_under_the_root_are_synced_incrementally_and_trashed_unshared_or_moved_pages_leave(
    notion: NotionStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(notion)
    first = await sync(notion, store, embedder, SourceState(), tmp_path)
    assert first.error is None
    # The index page holds only child pages (no document of its own); the payroll page is outside the root.
    assert changes(first.sync) == {"added": sorted(kb(k) for k in (ROOT, REFUNDS, RETURNS_JA, FIRST_LINE_RU,
                                                                   INVOICES))}
    searches = [body for method, path, _, body in notion.requests if path == "/v1/search"]
    page_searches = [b for b in searches if b["filter"]["value"] == "page"]
    assert [("start_cursor" in b) for b in page_searches] == [False, True, True, True]  # seven pages, two a page
    assert all(b["sort"] == {"direction": "descending", "timestamp": "last_edited_time"} for b in page_searches)
    assert notion.block_reads().count(REFUNDS) == 2  # four blocks, two a page

    hits = (await search("How long can an annual plan be refunded?", store=store, embedder=embedder,
                         config=SearchConfig(), limit=3)).hits
    assert hits[0].chunk.document_id == kb(REFUNDS)  # published to the web: public
    assert hits[0].chunk.title == "Refund policy" and hits[0].chunk.section == "Annual plans"
    assert hits[0].chunk.url == f"https://www.notion.so/Refund-policy-{REFUNDS}#{block_id_at(REFUNDS, 0)}"
    edited = hits[0].chunk.version
    assert edited is not None and edited.endswith(":00.000Z")  # the page's last_edited_time
    assert kb(RETURNS_JA) not in await visible(store, embedder, "返品は何日以内ですか")  # the workspace's only
    assert (await visible(store, embedder, "返品は何日以内ですか", "C0SUPPORT"))[0] == kb(RETURNS_JA)
    assert (await visible(store, embedder, "Когда обращение передаётся на вторую линию?", "C0SUPPORT"))[0] == \
        kb(FIRST_LINE_RU)
    assert (await visible(store, embedder, "When are invoices emailed?", "C0SUPPORT"))[0] == kb(INVOICES)
    indexed = {r.document_id for r in await store.documents()}
    assert kb(PAYROLL) not in indexed and kb(INDEX) not in indexed

    notion.requests.clear()
    notion.put(refunds("14 days"))
    notion.put(replace(notion.pages[RETURNS_JA], in_trash=True))
    notion.unshare(FIRST_LINE_RU)
    notion.put(replace(notion.pages[INVOICES], parent=("page_id", PAYROLL)))  # moved out of the root
    second = await sync(notion, store, embedder, first.state, tmp_path)
    assert second.error is None
    assert changes(second.sync) == {"replaced": [kb(REFUNDS)],
                                    "removed": sorted(kb(k) for k in (RETURNS_JA, FIRST_LINE_RU, INVOICES))}
    assert set(notion.block_reads()) == {REFUNDS}  # only the page edited since the last sync was read again
    top = (await search("How long can an annual plan be refunded?", store=store, embedder=embedder,
                        config=SearchConfig(), limit=1)).hits[0].chunk
    assert "14 days" in top.text and top.version != edited
    assert kb(RETURNS_JA) not in await visible(store, embedder, "返品は何日以内ですか", "C0SUPPORT")
    assert kb(INVOICES) not in await visible(store, embedder, "When are invoices emailed?", "C0SUPPORT")

    third = await sync(notion, store, embedder, second.state, tmp_path)
    assert third.error is None and changes(third.sync) == {}


async def test_an_empty_page_is_reported_not_indexed_and_a_page_unshared_while_syncing_leaves(
    notion: NotionStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    empty = Page(SHIPPING, "Доставка", (h1("Доставка"), image(), divider()))
    notion.put(empty)
    notion.put(Page(RETURNS_JA, "返品について", (h2("返品の期限"), p(RETURNS))))
    first = await sync(notion, store, embedder, SourceState(), tmp_path, roots=False)
    assert first.error is None and first.sync.added == (kb(RETURNS_JA),)
    assert [(f.source, f.message) for f in first.sync.failures] == [
        (f"https://www.notion.so/Доставка-{SHIPPING}", "the Notion page 'Доставка' has no text (only headings, "
         "media, embeds or empty blocks): it is not indexed; add text to it, or leave it out of the integration's "
         "pages")]
    assert not any(body["filter"]["value"] == "data_source" for _, path, _, body in notion.requests
                   if path == "/v1/search")  # without roots, databases need not be placed

    notion.put(replace(empty, blocks=(h1("Доставка"), p("Заказы отправляются в течение двух рабочих дней."))))
    notion.put(Page(RETURNS_JA, "返品について", (h2("返品の期限"), p(RETURNS.replace("550", "600")))))
    notion.script(f"/v1/blocks/{RETURNS_JA}/children", status(404))  # unshared between the search and the read
    second = await sync(notion, store, embedder, first.state, tmp_path, roots=False)
    assert second.error is None
    assert changes(second.sync) == {"added": [kb(SHIPPING)], "removed": [kb(RETURNS_JA)]}
    assert (await visible(store, embedder, "Когда отправляются заказы?", "C0SUPPORT"))[0] == kb(SHIPPING)


async def test_429_is_waited_out_as_retry_after_asks_and_a_500_mid_sync_keeps_what_is_indexed(
    notion: NotionStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(notion)
    notion.script("/v1/search", status(429, retry_after=1))
    first = await sync(notion, store, embedder, SourceState(), tmp_path)
    assert first.error is None and len(first.sync.added) == 5
    assert [path for _, path, _, _ in notion.requests[:2]] == ["/v1/search", "/v1/search"]  # asked again

    notion.put(replace(notion.pages[RETURNS_JA], in_trash=True))
    notion.put(Page(SHIPPING, "Shipping", (p("Orders ship within two business days."),), ("page_id", ROOT)))
    notion.put(refunds("14 days"))
    # Newest first: the refunds page's two reads pass, the shipping page's fails.
    notion.script("/v1/blocks/", real(), real(), status(500))
    failed = await sync(notion, store, embedder, first.state, tmp_path)
    assert failed.error == (f"source 'kb': Notion answered HTTP 500 (internal_server_error) for GET /v1/blocks/"
                            f"{SHIPPING}/children: try again later; its indexed documents are kept")
    assert failed.sync.replaced == (kb(REFUNDS),)  # what it had read is written
    assert failed.sync.removed == ()  # the trashed page leaves only with a sync that read everything
    assert kb(RETURNS_JA) in {r.document_id for r in await store.documents()}
    assert failed.state.cursor == first.state.cursor and failed.state.failures == 1

    healed = await sync(notion, store, embedder, failed.state, tmp_path)
    assert healed.error is None and healed.state.failures == 0
    assert changes(healed.sync) == {"added": [kb(SHIPPING)], "removed": [kb(RETURNS_JA)]}

    # Two waits of a second each, with a second and a half to spend: the second is refused without waiting.
    notion.script("/v1/search", status(429, retry_after=1), status(429, retry_after=1))
    limited = await sync(notion, store, embedder, healed.state, tmp_path, max_wait_s=1.5)
    assert limited.error == ("source 'kb': Notion is rate limiting (HTTP 429, Retry-After 1) past max_wait_s: sync "
                             "again later, or raise max_wait_s")
    assert limited.sync.removed == ()


async def test_a_refused_token_is_one_line_without_the_secret_and_check_names_the_workspace(
    notion: NotionStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(notion)
    first = await sync(notion, store, embedder, SourceState(), tmp_path)
    refused = await sync(notion, store, embedder, first.state, tmp_path, token="ntn_revoked_token")
    assert refused.error == ("source 'kb': Notion refused the token (HTTP 401 unauthorized): check the internal "
                             "integration secret in the variable token_env names")
    assert len(await store.documents()) == 5
    spec = spec_for(notion)
    revoked = NotionConnector.from_spec(spec, {"NOTION_TOKEN": "ntn_revoked_token"})
    with pytest.raises(SourceFailed) as raised:
        await check_source(spec, cache_root=tmp_path, connector=revoked)
    assert "HTTP 401" in str(raised.value) and "revoked" not in str(raised.value)
    good = NotionConnector.from_spec(spec, {"NOTION_TOKEN": TOKEN})
    assert "revoked" not in repr(revoked) and TOKEN not in repr(good)
    ok = await check_source(spec, cache_root=tmp_path, connector=good)
    assert ok == "Notion workspace 'Acme 株式会社': signed in as Verbatim docs, root pages Support handbook"
    notion.unshare(ROOT)
    with pytest.raises(SourceFailed) as unshared:
        await check_source(spec, cache_root=tmp_path, connector=good)
    assert str(unshared.value) == (f"root page {ROOT} is not shared with the integration: share it (the page's menu → "
                                   "Connections) or fix root_pages")


@pytest.mark.parametrize(("settings", "environ", "message"), [
    ('token_env = "NOTION_TOKEN"\nroot_pages = ["Support handbook"]\n', {"NOTION_TOKEN": TOKEN},
     "root_pages: 'Support handbook' is not a Notion page's link or id (32 hex digits at the end of its link): copy "
     "the page's link"),
    ("", {}, "set token_env to the environment variable that holds its internal integration secret"),
    ('token_env = "NOTION_TOKEN"\n', {}, "the environment variable NOTION_TOKEN (its internal integration secret) is "
                                         "not set"),
    ('token_env = "NOTION_TOKEN"\nmax_wait_s = -1\n', {"NOTION_TOKEN": TOKEN},
     "max_wait_s must be a number of seconds, 0 or more"),
    ('token_env = "NOTION_TOKEN"\ndatabase_ids = ["x"]\n', {"NOTION_TOKEN": TOKEN},
     "unknown key 'database_ids' for type notion (known: root_pages, max_wait_s, api_url)"),
    ('token_env = "NOTION_TOKEN"\napi_url = "api.notion.com"\n', {"NOTION_TOKEN": TOKEN},
     "api_url must be an http(s) address, like https://api.notion.com"),
])
def test_wrong_settings_are_one_line_naming_the_source_and_the_fix(
    settings: str, environ: dict[str, str], message: str
) -> None:
    spec = parse_sources(f'[sources.kb]\ntype = "notion"\n{settings}', "sources.toml")[0]
    with pytest.raises(SourcesError) as raised:
        NotionConnector.from_spec(spec, environ)
    assert str(raised.value) == f"sources.toml:1: source 'kb': {message}"


def test_a_root_is_given_as_the_pages_link_or_its_id_with_or_without_dashes() -> None:
    for given in (f"https://www.notion.so/acme/Support-handbook-{ROOT}?pvs=4", ROOT,
                  "1f2e3d4c-5b6a-7988-1f2e-3d4c5b6a7988"):
        spec = parse_sources(f'[sources.kb]\ntype = "notion"\ntoken_env = "T"\nroot_pages = ["{given}"]\n', "s.toml")[0]
        assert NotionConnector.from_spec(spec, {"T": TOKEN}).roots == (ROOT,)


def block(kind: str, text: str = "", *children: NotionBlock, checked: bool = False,
          cells: tuple[str, ...] = ()) -> NotionBlock:
    return NotionBlock(str(uuid.uuid4()), kind, text, children, checked, cells)


PAGE = NotionPage(REFUNDS, "Возвраты", f"https://www.notion.so/{REFUNDS}", "2026-05-01T09:30:00.000Z",
                  ("workspace", ""))


@pytest.mark.parametrize(("blocks", "expected"), [
    ((block("heading_1", "Возврат средств"), block("paragraph", "Деньги возвращаются за 5 дней.")),
     [("heading", "Возврат средств"), ("paragraph", "Деньги возвращаются за 5 дней.")]),
    ((block("heading_2", "手順", block("bulleted_list_item", "申請する", block("numbered_list_item", "確認する"))),),
     [("heading", "手順"), ("paragraph", "申請する"), ("paragraph", "確認する")]),  # a toggle heading's children
    ((block("to_do", "Send the invoice", checked=True), block("to_do", "Call back")),
     [("paragraph", "[x] Send the invoice"), ("paragraph", "[ ] Call back")]),
    ((block("code", "refund(order)\n    notify(customer)"),),
     [("paragraph", "refund(order)\n    notify(customer)")]),  # code keeps its lines and indentation
    ((block("table", "", block("table_row", cells=("Тариф", "Срок")), block("table_row", cells=("年額", "30日"))),),
     [("paragraph", "Тариф | Срок\n年額 | 30日")]),
    ((block("quote", "Refunds are final."), block("callout", "Ask a lead first."),
      block("toggle", "Details", block("paragraph", "Only <b>annual</b> plans & add-ons."))),
     [("paragraph", "Refunds are final."), ("paragraph", "Ask a lead first."), ("paragraph", "Details"),
      ("paragraph", "Only <b>annual</b> plans & add-ons.")]),  # markup in the text is text
    ((block("column_list", "", block("column", "", block("paragraph", "Left"))), block("image", "Схема возврата"),
      block("divider"), block("child_page", "Sub-page")),
     [("paragraph", "Left"), ("paragraph", "Схема возврата")]),  # a child page is not its parent's text
])
def test_blocks_become_headings_and_paragraphs_in_reading_order(
    blocks: tuple[NotionBlock, ...], expected: list[tuple[str, str]]
) -> None:
    event = page_event(PAGE, blocks, "kb:x", frozenset({"workspace"}))
    assert isinstance(event, Item)
    assert [(b.kind.value, b.text) for b in event.document.blocks] == expected
    assert event.document.title == "Возвраты" and event.document.version == "2026-05-01T09:30:00.000Z"
    headings = [b for b in event.document.blocks if b.kind.value == "heading"]
    assert all(h.anchor is not None and "-" not in h.anchor for h in headings)


@pytest.mark.parametrize(("blocks", "kind"), [
    ((), Skipped),
    ((block("heading_1", "Доставка"), block("image"), block("paragraph", "   ")), Skipped),
    ((block("heading_1", "Policies"), block("child_page", "Refunds"), block("child_database", "FAQ")), Gone),
])
def test_a_page_without_text_is_skipped_and_an_index_of_child_pages_is_no_document(
    blocks: tuple[NotionBlock, ...], kind: type
) -> None:
    assert isinstance(page_event(PAGE, blocks, "kb:x", frozenset({"workspace"})), kind)


async def test_an_answer_cites_the_page_with_its_link_and_version_until_the_page_leaves_the_source(
    notion: NotionStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    """Sync → ask → the quote cites the page (its heading's link, its version) → trashed at the source → sync →
    the same question neither cites it nor shows it among the nearest fragments."""
    seed(notion)
    first = await sync(notion, store, embedder, SourceState(), tmp_path)
    deps = AnswerDeps(store=store, embedder=embedder, config=AnswerConfig(), abstain_models=load_models())
    question = Question("How long can an annual plan be refunded?")
    payload = to_json(await answer(question, deps), "00000000-0000-4000-8000-000000000000")
    assert payload["status"] == "answered", payload
    cited = [c for c in payload["citations"] if c["document_id"] == kb(REFUNDS)]  # type: ignore[union-attr]
    assert cited and "30 days" in cited[0]["exact_quote"], payload
    assert cited[0]["url"] == f"https://www.notion.so/Refund-policy-{REFUNDS}#{block_id_at(REFUNDS, 0)}"
    assert cited[0]["version"] == notion._stamp(notion.pages[REFUNDS].edited)  # the page's last_edited_time

    notion.put(replace(notion.pages[REFUNDS], in_trash=True))
    assert (await sync(notion, store, embedder, first.state, tmp_path)).error is None
    payload = to_json(await answer(question, deps), "00000000-0000-4000-8000-000000000000")
    shown = [*payload["citations"], *payload["nearest"]]  # type: ignore[misc]
    assert all(c["document_id"] != kb(REFUNDS) for c in shown), shown

