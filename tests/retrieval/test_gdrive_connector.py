"""The gdrive connector through Google's real client (google-api-python-client over httplib2, google-auth signing a
service account's JWT) against a local Drive v3 stand-in, into the real Weaviate: Google Docs, a PDF, Markdown and
text in English, Japanese and Russian, in a folder tree and a shared drive, paginated, incremental through
changes.list, trashed, deleted, moved-out and narrowed files leaving, sharing mapped to channels, and 401, 429 +
Retry-After, 403 rate limits and a 500 mid-sync. The key is a throwaway RSA pair made by the stand-in (the
``cryptography`` package is installed); the OAuth access-token mode is tested too."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.chunking import ChunkingConfig
from retrieval.connectors import Event, Listed, SourceFailed
from retrieval.connectors.gdrive import (
    DriveConnector,
    audience_key,
    docs_anchor,
    error_reasons,
    make_cursor,
    parse_kind,
    token_of,
)
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.source_sync import SourceReport, SourceState, check_source, sync_source
from retrieval.sources import SourcesError, SourceSpec, parse_sources
from retrieval.store import ChunkStore
from tests.retrieval.pdf_fixture import make_pdf
from tests.retrieval.test_sync import changes
from tests.retrieval.sources_common import visible
from tests.standins.gdrive import DOC_SCOPE, FOLDER, GOOGLE_DOC, DriveFile, DriveStandIn, Permission, real, status

ANYONE = Permission("anyone")
ACME = Permission("domain", domain="Acme.com")
LEADS = Permission("group", email="leads@acme.com")
CFO = Permission("user", email="cfo@acme.com", role="writer")
REFUNDS = ('<h1 id="h.t0">Refund policy</h1><h2 id="h.ann1"><span class="c1">Annual plans</span></h2>'
           "<p><span>Annual plans can be refunded in full within 30 days of purchase.</span></p>"
           '<h2 id="h.mon1">Monthly plans</h2><p>Monthly plans are not refunded after the billing date.</p>')
RETURNS_JA = '<h2 id="h.ja1">返品の期限</h2><p>返品は商品到着後30日以内に受け付けます。送料は550円です。</p>'
HANDOVER_RU = ("# Передача обращения\n\nЕсли оператор не может решить вопрос за 15 минут, обращение передаётся "
               "на вторую линию.\n")
ESCALATION = make_pdf([["Escalations go to the duty engineer after one hour without a reply."]],
                      title="Escalation guide")
ONBOARDING = "New agents shadow a senior agent for their first two weeks.\n"
SALARY = "<p>Salary bands are reviewed every April by the finance team.</p>"
VENDORS = "Vendor contacts are kept by the procurement desk on the third floor.\n"
PAYROLL = "<p>Payroll questions go to the HR business partner of your region.</p>"


@pytest.fixture
async def drive() -> AsyncIterator[DriveStandIn]:
    gd = DriveStandIn(page_size=2)
    async with gd.running():
        gd.drives["D1"] = "Support"
        gd.drive_members["D1"] = (Permission("group", email="Support@acme.com", role="organizer"),)
        yield gd


def spec_for(gd: DriveStandIn, max_wait_s: float = 30) -> SourceSpec:
    return parse_sources(f'''[sources.drive]
type = "gdrive"
folders = ["F1"]
drives = ["D1"]
token_env = "GDRIVE_KEY"
api_url = "{gd.base_url}"
max_wait_s = {max_wait_s}

[sources.drive.visibility]
anyone = "public"
"domain:acme.com" = "public"
"group:support@acme.com" = ["C0SUPPORT"]
"group:leads@acme.com" = ["C0LEADS"]
''', "sources.toml")[0]


def connector_for(gd: DriveStandIn, key: dict[str, str] | str, max_wait_s: float = 30) -> DriveConnector:
    secret = key if isinstance(key, str) else json.dumps(key)
    return DriveConnector.from_spec(spec_for(gd, max_wait_s), {"GDRIVE_KEY": secret})


async def sync(gd: DriveStandIn, key: dict[str, str] | str, store: ChunkStore, embedder: E5Embedder,
               state: SourceState, tmp_path: Path, *, max_wait_s: float = 30) -> SourceReport:
    return await sync_source(spec_for(gd, max_wait_s), store=store, embedder=embedder, chunking=ChunkingConfig(),
                             limits=IngestLimits(), state=state, cache_root=tmp_path,
                             connector=connector_for(gd, key, max_wait_s))


def doc(file_id: str, name: str, html: str, *shared: Permission) -> DriveFile:
    """A Google Doc in the handbook folder, shared as ``shared`` says."""
    return DriveFile(file_id, name, GOOGLE_DOC, parents=("F1",), content=html, permissions=shared)


def handover() -> DriveFile:
    """The Russian Markdown file of the shared drive (its sharing: the drive's members)."""
    return DriveFile("handover", "Передача.md", "text/markdown", parents=("D1",), drive_id="D1", content=HANDOVER_RU)


def seed(gd: DriveStandIn) -> None:
    gd.put(DriveFile("F1", "Support handbook", FOLDER))
    gd.put(DriveFile("S1", "Escalations", FOLDER, parents=("F1",)))
    gd.put(doc("refunds", "Refund policy", REFUNDS, ANYONE, CFO))
    gd.put(doc("returns", "返品について", RETURNS_JA, ACME))
    gd.put(DriveFile("sheet", "Rota", "application/vnd.google-apps.spreadsheet", parents=("F1",),
                     permissions=(ANYONE,)))
    gd.put(doc("salary", "Salary bands", SALARY, CFO))
    gd.put(DriveFile("escalation", "Escalation guide.pdf", "application/pdf", parents=("S1",), content=ESCALATION,
                     permissions=(LEADS,)))
    gd.put(DriveFile("onboarding", "onboarding.txt", "text/plain", parents=("S1",), content=ONBOARDING,
                     permissions=(ANYONE,)))
    gd.put(handover())
    gd.put(DriveFile("vendors", "vendors.txt", "text/plain", parents=("D1",), drive_id="D1", content=VENDORS,
                     sharing_visible=False))
    gd.put(DriveFile("payroll", "Payroll", GOOGLE_DOC, parents=("ELSEWHERE",), content=PAYROLL, permissions=(ANYONE,)))


def listed_pages(gd: DriveStandIn, parent: str) -> list[str | None]:
    return [q.get("pageToken") for p, q, _ in gd.requests
            if p == "/drive/v3/files" and q.get("q", "").startswith(f"'{parent}' in parents")]


async def test_folders_and_a_shared_drive_are_synced_incrementally_with_trash_moves_deletions_and_sharing(
    drive: DriveStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    seed(drive)
    key = drive.service_account_key()
    first = await sync(drive, key, store, embedder, SourceState(), tmp_path)
    assert first.error is None
    assert changes(first.sync) == {"added": ["drive:escalation", "drive:handover", "drive:onboarding",
                                             "drive:refunds", "drive:returns", "drive:salary", "drive:vendors"]}
    assert sorted(first.unmapped) == ["drive:salary", "drive:vendors"]  # shared with one person; sharing unseen
    assert listed_pages(drive, "F1") == [None, "2", "4"]  # five children, two a page
    assert drive.token_grants[0]["iss"] == key["client_email"] and drive.token_grants[0]["scope"] == DOC_SCOPE

    hits = (await search("How long can an annual plan be refunded?", store=store, embedder=embedder,
                         config=SearchConfig(), limit=3)).hits
    assert hits[0].chunk.document_id == "drive:refunds"
    assert hits[0].chunk.title == "Refund policy"
    assert hits[0].chunk.section == "Annual plans"  # under the title heading, which is the title
    assert hits[0].chunk.url == "https://docs.google.com/document/d/refunds/edit?usp=drivesdk#heading=h.ann1"
    assert hits[0].chunk.version == "1"
    assert (await visible(store, embedder, "返品は何日以内ですか"))[0] == "drive:returns"
    question_ru = "Когда обращение передаётся на вторую линию?"
    assert "drive:handover" not in await visible(store, embedder, question_ru)
    assert (await visible(store, embedder, question_ru, "C0SUPPORT"))[0] == "drive:handover"
    escalation = "When do escalations go to the duty engineer?"
    assert "drive:escalation" not in await visible(store, embedder, escalation)
    assert (await visible(store, embedder, escalation, "C0LEADS"))[0] == "drive:escalation"
    assert (await visible(store, embedder, "How long do new agents shadow a senior agent?"))[0] == "drive:onboarding"
    assert "drive:salary" not in await visible(store, embedder, "When are salary bands reviewed?", "C0LEADS")
    assert "drive:payroll" not in await visible(store, embedder, "Who answers payroll questions?")

    drive.requests.clear()
    drive.put(doc("refunds", "Refund policy", REFUNDS.replace("30 days", "14 days"), ANYONE, CFO))
    drive.update("returns", trashed=True)
    drive.update("escalation", parents=("ELSEWHERE",))  # moved out of the folders
    drive.delete("handover")
    drive.update("onboarding", permissions=(Permission("user", email="new-hire@acme.com"),))  # no longer public
    drive.put(doc("refunds", "Refund policy", REFUNDS.replace("30 days", "14 days"), ANYONE, CFO))  # twice in the log
    second = await sync(drive, key, store, embedder, first.state, tmp_path)
    assert second.error is None
    assert changes(second.sync) == {"replaced": ["drive:onboarding", "drive:refunds"],
                                    "removed": ["drive:escalation", "drive:handover", "drive:returns"]}
    assert [q["pageToken"] for p, q, _ in drive.requests if p == "/drive/v3/changes"][0] == \
        json.loads(first.state.cursor or "")["token"]  # only what changed since the last sync was read
    assert not [p for p, _, _ in drive.requests if p == "/drive/v3/files"]  # and nothing was listed
    assert (await store.current(["drive:refunds"]))["drive:refunds"].version == "3"
    assert "drive:onboarding" not in await visible(store, embedder, "How long do new agents shadow a senior agent?")
    assert "drive:returns" not in await visible(store, embedder, "返品は何日以内ですか")
    assert "drive:handover" not in await visible(store, embedder, question_ru, "C0SUPPORT")
    assert "drive:escalation" not in await visible(store, embedder, escalation, "C0LEADS")

    drive.put(DriveFile("faq", "FAQ.md", "text/plain", parents=("S1",), content="# FAQ\n\nAsk in #support.\n",
                        permissions=(ANYONE,)))
    drive.update("S1", parents=("ELSEWHERE",))  # a folder moved out takes its files with it
    third = await sync(drive, key, store, embedder, second.state, tmp_path)
    assert third.error is None
    assert changes(third.sync) == {"removed": ["drive:onboarding"]}
    assert listed_pages(drive, "F1")  # a changed folder: the whole source is listed again

    fourth = await sync(drive, key, store, embedder, third.state, tmp_path)
    assert changes(fourth.sync) == {} and fourth.sync.unchanged == ()


async def test_429_and_403_rate_limits_are_waited_out_and_a_500_mid_sync_keeps_what_is_indexed(
    drive: DriveStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    token = "ya29.oauth-access-token"
    drive.access_tokens.add(token)
    drive.put(DriveFile("F1", "Support handbook", FOLDER))
    drive.put(doc("refunds", "Refund policy", REFUNDS, ANYONE))
    drive.put(doc("returns", "返品について", RETURNS_JA, ANYONE))
    drive.put(handover())
    drive.script("/drive/v3/files", status(429, retry_after=1), status(403, reason="userRateLimitExceeded"))
    first = await sync(drive, token, store, embedder, SourceState(), tmp_path)
    assert first.error is None and len(first.sync.added) == 3
    limited, rate_limited, answered = [t for p, _, t in drive.requests if p == "/drive/v3/files"][:3]
    assert rate_limited - limited >= 1.0 and answered - rate_limited >= 1.0  # waited as asked (1 s when unsaid)

    drive.delete("handover")
    drive.put(doc("refunds", "Refund policy", REFUNDS.replace("30 days", "14 days"), ANYONE))
    drive.put(doc("returns", "返品について", RETURNS_JA.replace("30日", "14日"), ANYONE))
    drive.script("/drive/v3/files/", real(), status(500))  # the second export fails
    failed = await sync(drive, token, store, embedder, first.state, tmp_path)
    assert failed.error == ("source 'drive': Google Drive answered HTTP 500 for an export: try again later; its "
                            "indexed documents are kept")
    assert failed.sync.replaced == ("drive:refunds",)  # what came before the failure is written
    assert failed.sync.removed == ()  # the deleted file is only removed by a sync that read to the end
    assert "drive:handover" in {r.document_id for r in await store.documents()}
    assert failed.state.cursor == first.state.cursor and failed.state.failures == 1

    healed = await sync(drive, token, store, embedder, failed.state, tmp_path)
    assert healed.error is None and healed.state.failures == 0
    assert changes(healed.sync) == {"replaced": ["drive:returns"], "removed": ["drive:handover"]}


async def test_refused_credentials_are_one_line_without_the_secret_and_nothing_is_removed(
    drive: DriveStandIn, store: ChunkStore, embedder: E5Embedder, tmp_path: Path
) -> None:
    drive.put(DriveFile("F1", "Support handbook", FOLDER))
    drive.put(doc("refunds", "Refund policy", REFUNDS, ANYONE))
    key_file = tmp_path / "verbatim-key.json"
    key_file.write_text(json.dumps(drive.service_account_key()), encoding="utf-8")
    first = await sync(drive, str(key_file), store, embedder, SourceState(), tmp_path)  # the key by its path
    assert first.error is None and first.sync.added == ("drive:refunds",)
    ok = await check_source(spec_for(drive), cache_root=tmp_path, connector=connector_for(drive, str(key_file)))
    assert ok == ("Google Drive: signed in as verbatim@acme-docs.iam.gserviceaccount.com, folder 'Support handbook', "
                  "shared drive 'Support'")

    drive.revoke_key()
    refused = await sync(drive, str(key_file), store, embedder, first.state, tmp_path)
    assert refused.error == ("source 'drive': Google Drive refused the credentials (the token was refused): check the "
                             "key or token in token_env, and that the folders and drives are shared with its account")
    assert [r.document_id for r in await store.documents()] == ["drive:refunds"]

    revoked = "ya29.revoked-secret-token"
    with pytest.raises(SourceFailed) as raised:
        await check_source(spec_for(drive), cache_root=tmp_path, connector=connector_for(drive, revoked))
    assert str(raised.value).startswith("Google Drive refused the credentials") and revoked not in str(raised.value)
    assert revoked not in repr(connector_for(drive, revoked))
    assert "PRIVATE KEY" not in repr(connector_for(drive, key_file.read_text(encoding="utf-8")))


async def pulled(connector: DriveConnector, cursor: str | None = None) -> list[Event]:
    return [event async for event in connector.pull(cursor)]


async def test_429s_past_the_patience_and_a_missing_folder_end_the_pull_with_one_line(drive: DriveStandIn) -> None:
    drive.access_tokens.add("ya29.ok")
    drive.put(DriveFile("F1", "Support handbook", FOLDER))
    drive.script("/drive/v3/changes", status(429, retry_after=3600))
    with pytest.raises(SourceFailed) as raised:
        await pulled(connector_for(drive, "ya29.ok", max_wait_s=5))
    assert str(raised.value) == ("Google Drive is rate limiting (HTTP 429, Retry-After 3600) past max_wait_s: sync "
                                 "again later, or raise max_wait_s")

    drive.files.pop("F1")
    with pytest.raises(SourceFailed) as raised:
        await pulled(connector_for(drive, "ya29.ok"))
    assert str(raised.value) == ("Google Drive has no folder F1 that an OAuth access token can see: share it with "
                                 "the account, or fix folders")


async def test_a_cursor_drive_no_longer_knows_or_taken_for_other_folders_lists_everything_again(
    drive: DriveStandIn,
) -> None:
    drive.access_tokens.add("ya29.ok")
    drive.put(DriveFile("F1", "Support handbook", FOLDER))
    drive.put(doc("refunds", "Refund policy", REFUNDS, ANYONE))
    for cursor in (make_cursor("999", ["F1"], ["D1"]), make_cursor("1", ["F0"], ["D1"]), "garbage"):
        listed = (await pulled(connector_for(drive, "ya29.ok"), cursor))[-1]
        assert isinstance(listed, Listed) and listed.present == frozenset({"drive:refunds"}), cursor


@pytest.mark.parametrize(("permission", "key"), [
    ({"type": "anyone", "role": "reader", "allowFileDiscovery": False}, "anyone"),
    ({"type": "anyone", "role": "reader", "allowFileDiscovery": True}, "anyone"),
    ({"type": "domain", "role": "commenter", "domain": "Acme.com"}, "domain:acme.com"),
    ({"type": "group", "role": "writer", "emailAddress": "Support@acme.com"}, "group:support@acme.com"),
    ({"type": "user", "role": "owner", "emailAddress": "ivan@acme.com"}, "user:ivan@acme.com"),
    ({"type": "user", "role": "reader", "emailAddress": "gone@acme.com", "deleted": True}, None),
    ({"type": "user", "role": "reader"}, None),
    ({"type": "domain", "role": "reader"}, None),
])
def test_each_drive_permission_is_one_audience_key(permission: dict[str, object], key: str | None) -> None:
    assert audience_key(permission) == key


@pytest.mark.parametrize(("mime_type", "name", "kind"), [
    (GOOGLE_DOC, "Refund policy", "doc"),
    ("application/pdf", "Guide.pdf", ".pdf"),
    ("application/pdf", "Guide", ".pdf"),
    ("text/plain", "notes.txt", ".txt"),
    ("text/plain", "README.md", ".md"),  # an uploaded .md that Drive typed as plain text
    ("text/markdown", "Передача", ".md"),
    ("text/x-markdown", "notes.markdown", ".markdown"),
    ("text/html", "page.html", ".html"),
    ("application/vnd.google-apps.spreadsheet", "Rota", None),
    ("image/png", "diagram.png", None),
    (FOLDER, "Handbook", None),
])
def test_what_a_file_is_read_as_follows_its_type(mime_type: str, name: str, kind: str | None) -> None:
    assert parse_kind(mime_type, name) == kind


@pytest.mark.parametrize(("heading_id", "anchor"), [("h.ann1", "heading=h.ann1"), ("intro", None)])
def test_a_docs_heading_id_becomes_the_editors_anchor(heading_id: str, anchor: str | None) -> None:
    assert docs_anchor(heading_id) == anchor


@pytest.mark.parametrize(("cursor", "token"), [
    (make_cursor("42", ["F1"], ["D1"]), "42"),
    (make_cursor("42", ["F1", "F2"], ["D1"]), None),  # a folder was added since: list it
    (make_cursor("42", ["F1"], []), None),
    (None, None),
    ("17", None),  # not a cursor of this connector
    ('{"token": ""}', None),
])
def test_a_cursor_counts_only_for_the_folders_and_drives_it_was_taken_for(cursor: str | None,
                                                                         token: str | None) -> None:
    assert token_of(cursor, ["F1"], ["D1"]) == token


@pytest.mark.parametrize(("body", "reasons"), [
    (b'{"error": {"code": 403, "message": "m", "errors": [{"domain": "usageLimits", "reason": "rateLimitExceeded"}]}}',
     {"rateLimitExceeded"}),
    (b'{"error": {"code": 429, "details": [{"reason": "RATE_LIMIT_EXCEEDED"}]}}', {"RATE_LIMIT_EXCEEDED"}),
    (b"<html>Service Unavailable</html>", set()),
    (b'{"error": "invalid_grant"}', set()),
])
def test_the_reasons_of_a_google_error_body(body: bytes, reasons: set[str]) -> None:
    assert error_reasons(body) == reasons


@pytest.mark.parametrize(("table", "env", "message"), [
    ('token_env = "K"', {"K": "t"}, "set folders (folder ids) or drives (shared drive ids), or both"),
    ('folders = ["https://drive.google.com/drive/folders/F1"]\ntoken_env = "K"', {"K": "t"},
     "'https://drive.google.com/drive/folders/F1' is not a Drive id: use the last part of the folder's or drive's "
     "address"),
    ('folder = ["F1"]', {}, "unknown key 'folder' for type gdrive (known: folders, drives, subject, max_wait_s, "
                            "api_url)"),
    ('folders = ["F1"]', {}, "set token_env to the environment variable that holds its service account key or "
                             "access token"),
    ('folders = ["F1"]\ntoken_env = "K"', {}, "the environment variable K (its service account key or access token) "
                                              "is not set"),
    ('folders = ["F1"]\ntoken_env = "K"', {"K": '{"type": "authorized_user"}'},
     'the environment variable K holds JSON that is not a service account key ("type": "service_account")'),
    ('folders = ["F1"]\ntoken_env = "K"', {"K": "{not json"},
     "the environment variable K starts like JSON but is not: paste the whole service account key"),
    ('folders = ["F1"]\ntoken_env = "K"', {"K": "/nowhere/key.json"},
     "the environment variable K names a key file that cannot be read (No such file or directory): check the path"),
    ('folders = ["F1"]\ntoken_env = "K"',
     {"K": json.dumps({"type": "service_account", "client_email": "a@b", "token_uri": "https://t",
                       "private_key": "-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"})},
     "the environment variable K holds a service account key that cannot be used (fields missing, or a bad private "
     "key): create a new key"),
    ('drives = ["D1"]\ntoken_env = "K"\nmax_wait_s = -1', {"K": "t"},
     "max_wait_s must be a number of seconds, 0 or more"),
])
def test_bad_settings_are_one_line_naming_the_source_and_the_fix(table: str, env: dict[str, str],
                                                                 message: str) -> None:
    spec = parse_sources(f'[sources.drive]\ntype = "gdrive"\n{table}\n', "sources.toml")[0]
    with pytest.raises(SourcesError) as raised:
        DriveConnector.from_spec(spec, env)
    assert str(raised.value) == f"sources.toml:1: source 'drive': {message}"
    assert "broken" not in str(raised.value)
