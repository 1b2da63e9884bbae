"""The confluence connector through the real atlassian-python-api client against a local Confluence stand-in (Cloud
and Data Center), into the real Weaviate: pages in English, Japanese and Russian, paginated, incremental by
last-modified, deleted and moved pages leaving, view restrictions (inherited too) keeping pages out of public
answers, PDF attachments, and 401, 429 + Retry-After and a 500 mid-sync."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.chunking import ChunkingConfig
from retrieval.connectors import SourceFailed
from retrieval.connectors.confluence import (
    ConfluenceConnector,
    audience,
    heading_anchor,
    parse_cursor,
    read_restriction,
    storage_to_html,
)
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits
from retrieval.loaders.html import parse_html
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.source_sync import SourceReport, SourceState, check_source, sync_source
from retrieval.sources import SourcesError, SourceSpec, parse_sources
from retrieval.store import ChunkStore
from tests.retrieval.pdf_fixture import make_pdf
from tests.retrieval.test_sync import changes
from tests.retrieval.sources_common import visible
from tests.standins.confluence import Attachment, ConfluenceStandIn, Page, status

TOKEN, EMAIL, PAT = "cf-api-t0ken-secret", "docs-bot@acme.test", "dc-pat-secret"
REFUNDS = ("<h1>Refunds</h1><h2>Annual plans</h2><p>Annual plans can be refunded in full within 30 days of "
           "purchase.</p><ac:structured-macro ac:name=\"info\"><ac:parameter ac:name=\"title\">Note"
           "</ac:parameter><ac:rich-text-body><p>Monthly plans are not refunded.</p></ac:rich-text-body>"
           "</ac:structured-macro>")
RETURNS_JA = "<h2>返品の期限</h2><p>返品は商品到着後30日以内に受け付けます。送料は550円です。</p>"
FIRST_LINE_RU = ("<h2>Передача обращения</h2><p>Если оператор не может решить вопрос за 15 минут, обращение "
                 "передаётся на вторую линию.</p>")
ESCALATION = "<h2>Priority tickets</h2><p>Agents escalate a priority ticket to the duty engineer after one hour.</p>"
SALARIES = "<p>Salary bands are reviewed every April by the compensation committee.</p>"
BONUS = "<p>Bonuses are paid in March to everyone rated above expectations.</p>"
WARRANTY = make_pdf([["Warranty claims are accepted within two years of purchase."]], title="Warranty terms")


@pytest.fixture
async def cloud() -> AsyncIterator[ConfluenceStandIn]:
    cf = ConfluenceStandIn(token=TOKEN, email=EMAIL, spaces={"ENG": "Engineering", "SUP": "Поддержка"})
    async with cf.running():
        yield cf


def spec_for(cf: ConfluenceStandIn, *, max_wait_s: float = 30, scope: str = 'spaces = ["ENG", "SUP"]') -> SourceSpec:
    return parse_sources(f'''[sources.wiki]
type = "confluence"
url = "{cf.url}"
{f'email = "{cf.email}"' if cf.email else ""}
token_env = "CF_TOKEN"
{scope}
max_wait_s = {max_wait_s}

[sources.wiki.visibility]
"space:ENG" = "public"
"space:SUP" = "public"
"group:leads" = ["C0LEADS"]
"user:hr-bot" = ["C0HR"]
''', "sources.toml")[0]


async def sync(cf: ConfluenceStandIn, store: ChunkStore, embedder: E5Embedder, state: SourceState, tmp_path: Path,
               *, token: str | None = None, max_wait_s: float = 30, scope: str = 'spaces = ["ENG", "SUP"]'
               ) -> SourceReport:
    spec = spec_for(cf, max_wait_s=max_wait_s, scope=scope)
    connector = ConfluenceConnector.from_spec(spec, {"CF_TOKEN": token or cf.token})
    return await sync_source(spec, store=store, embedder=embedder, chunking=ChunkingConfig(), limits=IngestLimits(),
                             state=state, cache_root=tmp_path, connector=connector)


def seed(cf: ConfluenceStandIn) -> None:
    cf.put(Page("101", "ENG", "Refund policy", REFUNDS))
    cf.put(Page("102", "SUP", "返品について", RETURNS_JA))
    cf.put(Page("103", "SUP", "Первая линия", FIRST_LINE_RU))
    cf.put(Page("104", "ENG", "Escalation", ESCALATION))
    cf.put(Page("105", "ENG", "Compensation", SALARIES, read_groups=("leads",)))
    cf.put(Page("106", "ENG", "Bonuses", BONUS, parent="105"))  # inherits its parent's view restriction
    cf.put(Page("107", "HR", "Not synced", "<p>The HR space is not configured.</p>"))
    cf.put(Page("108", "ENG", "Team pages", '<ac:structured-macro ac:name="children"/>'))  # no text of its own
    cf.attach(Attachment("att9001", "101", "warranty.pdf", WARRANTY))


async def test_cloud_spaces_are_synced_incrementally_with_deletions_moves_restrictions_and_pdfs(
    cloud: ConfluenceStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(cloud)
    first = await sync(cloud, store, embedder, SourceState(), tmp_path)
    assert first.error is None
    assert changes(first.sync) == {"added": ["wiki:101", "wiki:102", "wiki:103", "wiki:104", "wiki:105", "wiki:106",
                                             "wiki:att9001"]}
    assert first.unmapped == ()
    listing = [q.get("cursor") for q in cloud.searched() if q["cql"] == 'type = page AND space in ("ENG", "SUP")']
    # 7 pages two a page, followed by Cloud's cursor: the listing, then (a first sync) the same search for bodies
    assert len(listing) == 8 and listing[0] is None and all(listing[1:4])

    hits = (await search("How long can an annual plan be refunded?", store=store, embedder=embedder,
                         config=SearchConfig(), limit=3)).hits
    assert hits[0].chunk.document_id == "wiki:101"
    assert hits[0].chunk.section == "Refunds > Annual plans"
    assert hits[0].chunk.url == f"{cloud.url}/spaces/ENG/pages/101/Refund+policy#Annual-plans"
    assert hits[0].chunk.version == "1"
    assert "Note" not in hits[0].chunk.text and "title" not in hits[0].chunk.text  # macro settings are not text
    assert (await visible(store, embedder, "返品は何日以内ですか"))[0] == "wiki:102"
    assert (await visible(store, embedder, "Когда обращение передаётся на вторую линию?"))[0] == "wiki:103"
    warranty = (await search("How long are warranty claims accepted?", store=store, embedder=embedder,
                             config=SearchConfig(), limit=1)).hits[0].chunk
    assert (warranty.document_id, warranty.page, warranty.title) == ("wiki:att9001", 1, "warranty.pdf")
    assert "wiki:105" not in await visible(store, embedder, "When are salary bands reviewed?")
    assert "wiki:106" not in await visible(store, embedder, "When are bonuses paid?")
    assert (await visible(store, embedder, "When are salary bands reviewed?", "C0LEADS"))[0] == "wiki:105"
    assert (await visible(store, embedder, "When are bonuses paid?", "C0LEADS"))[0] == "wiki:106"
    assert "wiki:107" not in {r.document_id for r in await store.documents()}

    cloud.requests.clear()
    cloud.tick()
    cloud.put(Page("101", "ENG", "Refund policy", REFUNDS.replace("30 days", "14 days")))
    cloud.remove("102")  # deleted
    cloud.move("103", "HR")  # moved to a space the source does not sync
    cloud.restrict("104", groups=("leads",))  # restricted later: no new version, no new last-modified time
    second = await sync(cloud, store, embedder, first.state, tmp_path)
    assert second.error is None
    assert changes(second.sync) == {"replaced": ["wiki:101", "wiki:104"], "removed": ["wiki:102", "wiki:103"]}
    since, _ = parse_cursor(first.state.cursor)
    changed = [q["cql"] for q in cloud.searched() if "lastmodified" in q["cql"]]
    assert changed == [f'type = page AND space in ("ENG", "SUP") AND lastmodified >= "{since}"']
    fetched = {p for p, _, _ in cloud.requests if p.startswith("/rest/api/content/") and p[18:].isdigit()}
    assert fetched == {"/rest/api/content/104"}  # the edit came with the changes; the restriction was found by listing
    assert "wiki:104" not in await visible(store, embedder, "When is a priority ticket escalated?")
    assert (await visible(store, embedder, "When is a priority ticket escalated?", "C0LEADS"))[0] == "wiki:104"
    assert "wiki:102" not in await visible(store, embedder, "返品は何日以内ですか")
    assert "wiki:103" not in await visible(store, embedder, "Когда обращение передаётся на вторую линию?")
    assert (await store.current(["wiki:101"]))["wiki:101"].version == "2"

    cloud.requests.clear()
    third = await sync(cloud, store, embedder, second.state, tmp_path)
    assert changes(third.sync) == {} and third.sync.unchanged == ()
    assert not any(p.endswith("/download") for p, _, _ in cloud.requests)  # an unchanged PDF is not downloaded again


async def test_data_center_with_a_personal_access_token_a_cql_filter_and_user_restrictions(
    store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    dc = ConfluenceStandIn(token=PAT, spaces={"ENG": "Engineering"})
    async with dc.running():
        dc.put(Page("201", "ENG", "Escalation", ESCALATION, labels=("kb",)))
        dc.put(Page("202", "ENG", "Компенсации", "<h2>Премии</h2><p>Премии выплачиваются в марте.</p>",
                    labels=("kb",), read_users=("hr-bot",)))
        dc.put(Page("203", "ENG", "Draft notes", "<p>Ideas for the next offsite.</p>"))  # not labelled kb
        dc.put(Page("204", "ENG", "Payroll", "<p>Payroll questions go to HR.</p>", read_groups=("leads",)))
        dc.put(Page("205", "ENG", "給与カレンダー", "<p>給与は毎月25日に支払われます。</p>", labels=("kb",),
                    parent="204"))  # outside the filter, its parent's restriction still holds
        dc.attach(Attachment("9002", "201", "escalation.pdf", make_pdf([["Escalations are logged in the ops "
                                                                        "journal."]])))
        scope = 'cql = \'label = "kb"\''
        report = await sync(dc, store, embedder, SourceState(), tmp_path, scope=scope)
        assert report.error is None
        assert changes(report.sync) == {"added": ["wiki:201", "wiki:202", "wiki:205", "wiki:9002"]}
        assert "/rest/api/content/204/restriction/byOperation" in {p for p, _, _ in dc.requests}
        assert "wiki:205" not in await visible(store, embedder, "給与は何日に支払われますか")
        assert (await visible(store, embedder, "給与は何日に支払われますか", "C0LEADS"))[0] == "wiki:205"
        hit = (await search("When is a priority ticket escalated?", store=store, embedder=embedder,
                            config=SearchConfig(), limit=1)).hits[0].chunk
        assert hit.url == f"{dc.url}/pages/viewpage.action?pageId=201#Escalation-Prioritytickets"
        assert hit.updated_at is not None and hit.updated_at.endswith("+03:00")
        assert "wiki:202" not in await visible(store, embedder, "Когда выплачиваются премии?")
        assert (await visible(store, embedder, "Когда выплачиваются премии?", "C0HR"))[0] == "wiki:202"

        ok = await check_source(spec_for(dc, scope=scope), cache_root=tmp_path,
                                connector=ConfluenceConnector.from_spec(spec_for(dc, scope=scope), {"CF_TOKEN": PAT}))
        assert ok == f"{dc.url}: signed in as Docs bot (Data Center), a CQL filter"

        dc.remove("202")
        dc.put(Page("201", "ENG", "Escalation", ESCALATION.replace("one hour", "two hours"), labels=()))  # unlabelled
        second = await sync(dc, store, embedder, report.state, tmp_path, scope=scope)
        assert changes(second.sync) == {"removed": ["wiki:201", "wiki:202", "wiki:9002"]}


async def test_a_refused_token_is_one_line_without_the_secret_and_nothing_is_removed(
    cloud: ConfluenceStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(cloud)
    first = await sync(cloud, store, embedder, SourceState(), tmp_path)
    refused = await sync(cloud, store, embedder, first.state, tmp_path, token="revoked-token")
    assert refused.error == ("source 'wiki': Confluence refused the credentials (HTTP 401): check the token, its "
                             "email and that the user may read the spaces")
    assert len(await store.documents()) == 7 and refused.state.cursor == first.state.cursor
    revoked = ConfluenceConnector.from_spec(spec_for(cloud), {"CF_TOKEN": "revoked-token"})
    with pytest.raises(SourceFailed) as raised:
        await check_source(spec_for(cloud), cache_root=tmp_path, connector=revoked)
    assert "HTTP 401" in str(raised.value) and "revoked" not in str(raised.value)
    assert "revoked" not in repr(revoked)
    ok = await check_source(spec_for(cloud), cache_root=tmp_path,
                            connector=ConfluenceConnector.from_spec(spec_for(cloud), {"CF_TOKEN": TOKEN}))
    assert ok == f"{cloud.url}: signed in as {EMAIL} (Cloud), spaces ENG, SUP"
    missing = ConfluenceConnector.from_spec(spec_for(cloud, scope='spaces = ["ENG", "OPS"]'), {"CF_TOKEN": TOKEN})
    with pytest.raises(SourceFailed, match="Confluence has no space OPS, or the user may not see it: check spaces"):
        await missing.check()


async def test_429_is_waited_out_within_max_wait_s_and_a_500_mid_sync_keeps_what_is_indexed(
    cloud: ConfluenceStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(cloud)
    cloud.script("/rest/api/content/search", status(429, retry_after=1))
    first = await sync(cloud, store, embedder, SourceState(), tmp_path, max_wait_s=1.5)
    assert first.error is None and len(first.sync.added) == 7
    assert cloud.searched()[0] == cloud.searched()[1]  # the refused search was asked again

    # A second 429 of one second does not fit in what is left of 1.5 s: the sync ends rather than waiting on.
    cloud.script("/rest/api/content/search", status(429, retry_after=1), status(429, retry_after=1))
    limited = await sync(cloud, store, embedder, first.state, tmp_path, max_wait_s=1.5)
    assert limited.error == ("source 'wiki': Confluence is rate limiting (HTTP 429, Retry-After 1) past max_wait_s: "
                             "sync again later, or raise max_wait_s")
    cloud.script("/rest/api/content/search", status(429, retry_after=3600))
    assert (await sync(cloud, store, embedder, first.state, tmp_path, max_wait_s=5)).error == (
        "source 'wiki': Confluence is rate limiting (HTTP 429, Retry-After 3600) past max_wait_s: sync again later, "
        "or raise max_wait_s")

    cloud.tick()
    cloud.put(Page("101", "ENG", "Refund policy", REFUNDS.replace("30 days", "14 days")))
    cloud.remove("102")
    cloud.restrict("104", groups=("leads",))
    cloud.script("/rest/api/content/104", status(500))  # the restricted page is read after the edited one
    failed = await sync(cloud, store, embedder, first.state, tmp_path)
    assert failed.error == ("source 'wiki': Confluence answered HTTP 500 for page 104: try again later; its indexed "
                            "documents are kept")
    assert failed.sync.replaced == ("wiki:101",)  # what came before the failure is written
    assert failed.sync.removed == ()  # the deleted page is only removed by a sync that read everything
    assert "wiki:104" in await visible(store, embedder, "When is a priority ticket escalated?")
    assert failed.state.cursor == first.state.cursor and failed.state.failures == 1

    healed = await sync(cloud, store, embedder, failed.state, tmp_path)
    assert healed.error is None and healed.state.failures == 0
    assert changes(healed.sync) == {"replaced": ["wiki:104"], "removed": ["wiki:102"]}
    assert "wiki:104" not in await visible(store, embedder, "When is a priority ticket escalated?")


async def test_a_page_the_cql_search_misses_is_found_by_its_version_in_the_listing(
    cloud: ConfluenceStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    """CQL reads ``lastmodified`` in the user's own time zone, which the connector cannot know: an edit the search
    misses still comes in, found by its version in the listing."""
    seed(cloud)
    first = await sync(cloud, store, embedder, SourceState(), tmp_path)
    cloud.cql_zone = dt.timezone(dt.timedelta(hours=-5))  # the bot user's profile says New York
    cloud.requests.clear()
    cloud.put(Page("104", "ENG", "Escalation", ESCALATION.replace("one hour", "two hours")))
    second = await sync(cloud, store, embedder, first.state, tmp_path)
    assert changes(second.sync) == {"replaced": ["wiki:104"]}
    assert "/rest/api/content/104" in {p for p, _, _ in cloud.requests}
    assert (await store.current(["wiki:104"]))["wiki:104"].version == "2"


_GROUP = {"read": {"restrictions": {"group": {"results": [{"name": "leads"}]}, "user": {"results": []}}}}
_USER = {"read": {"restrictions": {"group": {"results": []}, "user": {"results": [{"accountId": "557058:f1"}]}}}}
_DC_USER = {"read": {"restrictions": {"user": {"results": [{"username": "hr-bot", "userKey": "8a7f"}]}}}}
_NONE = {"read": {"restrictions": {"group": {"results": []}, "user": {"results": []}}}}


@pytest.mark.parametrize(("restrictions", "keys"), [
    (_GROUP, frozenset({"group:leads"})),
    (_USER, frozenset({"user:557058:f1"})),
    (_DC_USER, frozenset({"user:hr-bot"})),
    (_NONE, None),
    ({}, None),
    (None, None),
])
def test_a_read_restriction_becomes_the_keys_it_allows(restrictions: object, keys: frozenset[str] | None) -> None:
    assert read_restriction(restrictions) == keys


@pytest.mark.parametrize(("levels", "expected"), [
    ([None, None], {"space:ENG"}),  # nothing restricts reading: the space's audience
    ([None, frozenset({"group:leads"})], {"group:leads"}),  # restricted: never the whole space
    ([frozenset({"group:leads", "group:hr"}), None], {"group:leads", "group:hr"}),  # inherited from an ancestor
    ([frozenset({"group:leads", "group:hr"}), frozenset({"group:hr", "user:ann"})], {"group:hr"}),  # both levels
    ([frozenset({"group:leads"}), frozenset({"group:hr"})], set()),  # no key passes both: nobody
])
def test_a_page_is_seen_only_by_who_passes_every_restricting_level(
    levels: list[frozenset[str] | None], expected: set[str]
) -> None:
    assert audience("ENG", levels) == frozenset(expected)


@pytest.mark.parametrize(("storage", "blocks"), [
    ('<p>Call <ac:link><ri:page ri:content-title="Desk"/><ac:plain-text-link-body><![CDATA[the desk]]>'
     "</ac:plain-text-link-body></ac:link> first.</p>", ["Call the desk first."]),
    ('<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>'
     "<ac:plain-text-body><![CDATA[grep -c '<li>' x.html]]></ac:plain-text-body></ac:structured-macro>",
     ["grep -c '<li>' x.html"]),
    ('<ac:structured-macro ac:name="warning"><ac:parameter ac:name="title">Внимание</ac:parameter>'
     "<ac:rich-text-body><p>Не удаляйте журнал.</p></ac:rich-text-body></ac:structured-macro>",
     ["Не удаляйте журнал."]),
    ('<h2>手順</h2><ac:structured-macro ac:name="toc"/><p>申請書を提出します。</p>', ["手順", "申請書を提出します。"]),
])
def test_storage_format_reads_as_the_page_shows(storage: str, blocks: list[str]) -> None:
    parsed = parse_html(storage_to_html(storage), source="x", document_id="x", stem="x")
    assert [b.text for b in parsed.blocks] == blocks


@pytest.mark.parametrize(("title", "heading", "cloud", "anchor"), [
    ("Refund policy", "Annual plans", True, "Annual-plans"),
    ("Refund policy", "Annual plans", False, "Refundpolicy-Annualplans"),
    ("返品について", "返品の 期限", True, "返品の-期限"),
    ("Первая линия", "Передача обращения", False, "Перваялиния-Передачаобращения"),
])
def test_a_heading_links_to_the_anchor_its_edition_makes(title: str, heading: str, cloud: bool, anchor: str) -> None:
    assert heading_anchor(title, heading, cloud=cloud) == anchor


@pytest.mark.parametrize("cursor", [None, "", "12345", "[]", '{"since": "yesterday"}', '{"seen": []}'])
def test_a_cursor_it_cannot_read_means_a_full_sync(cursor: str | None) -> None:
    assert parse_cursor(cursor) == (None, {})


@pytest.mark.parametrize(("settings", "message"), [
    ('url = "https://acme.atlassian.net/wiki"\ntoken_env = "T"',
     "set spaces (a list of space keys) or cql (a CQL filter for the pages)"),
    ('url = "acme.atlassian.net"\ntoken_env = "T"\nspaces = ["ENG"]', "url must be the site's address"),
    ('url = "https://acme.atlassian.net/wiki"\ntoken_env = "T"\nspaces = ["ENG DOCS"]',
     "'ENG DOCS' is not a space key"),
    ('url = "https://acme.atlassian.net/wiki"\ntoken_env = "T"\nspaces = ["ENG"]\nattachments = "yes"',
     "attachments must be true or false"),
    ('url = "https://acme.atlassian.net/wiki"\ntoken_env = "T"\nspaces = ["ENG"]\nspace = "SUP"',
     "unknown key 'space' for type confluence"),
    ('url = "https://acme.atlassian.net/wiki"\ntoken_env = "UNSET_CF"\nspaces = ["ENG"]',
     "the environment variable UNSET_CF (its personal access token) is not set"),
])
def test_wrong_settings_are_one_line_naming_the_source(settings: str, message: str) -> None:
    spec = parse_sources(f'[sources.wiki]\ntype = "confluence"\n{settings}\n', "sources.toml")[0]
    with pytest.raises(SourcesError) as raised:
        ConfluenceConnector.from_spec(spec, {"T": "secret"})
    assert str(raised.value).startswith("sources.toml:1: source 'wiki': ") and message in str(raised.value)
