"""The review desk page through aiohttp's test client: routing, escaping, resolving with CSRF, the token."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import test_utils

from bot.review.desk import QuestionEmbedder
from bot.review.lookup import ChunkLookup, IndexUnavailable, StaticChunks
from bot.review.web import create_review_app
from retrieval.chunks import Chunk
from retrieval.store import DocumentRecord
from storage.db import create_engine, create_session_factory
from storage.exchanges import record_exchange
from storage.flags import add_flag, flags_for
from storage.handoffs import claim_handoff
from tests.review.seed import Seeded, seed_log
from tests.storage.builders import at, exchange
from tests.storage.database import Database

HOSTILE = "<script>alert('pwned')</script> How long do I have to request a refund?"
TOKEN = "review-token-5f2e9c"


def chunk(chunk_id: str, text: str) -> Chunk:
    return Chunk(chunk_id=chunk_id, document_id="refund-policy", version="2026-01", content_hash="h1", ordinal=0,
                 title="Refund policy", section="Annual plans", page=1, url=None, updated_at=None, visibility=None,
                 language="en", text=text)


# chunk-1 holds S1's quote with a hostile neighbour; the registry says a newer version is indexed now.
INDEX = StaticChunks(
    [chunk("chunk-1", "Read this <img src=x onerror=alert(1)>. Annual plans can be refunded within 10 days. Then "
                      "the rest of the policy follows.")],
    [DocumentRecord("refund-policy", "h2", "2026-09", "Refund policy", 4)],
)


@asynccontextmanager
async def desk_client(db: Database, *, token: str | None = None, lookup: ChunkLookup = INDEX,
                      embedder: QuestionEmbedder | None = None) -> AsyncIterator[test_utils.TestClient]:
    app = create_review_app(db.sessions, lookup, token=token, embedder=embedder)
    async with test_utils.TestClient(test_utils.TestServer(app)) as client:
        yield client


@pytest.fixture
async def seeded(sqlite_log: Database) -> Seeded:
    return await seed_log(sqlite_log.sessions, question=HOSTILE)


def origin(client: test_utils.TestClient) -> str:
    return str(client.make_url("/").origin())


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page)
    assert match, "the page has no form with a CSRF token"
    return match.group(1)


async def test_queue_shows_the_default_queue_and_a_script_in_a_question_as_text(
    sqlite_log: Database, seeded: Seeded
) -> None:
    async with desk_client(sqlite_log) as client:
        response = await client.get("/")
        page = await response.text()
    assert response.status == 200
    # The pending question was asked months ago: stuck, so a lead sees it in the queue.
    for exchange_id in (seeded.flagged, seeded.no_support, seeded.error, seeded.dismissed, seeded.pending):
        assert f'href="/exchanges/{exchange_id}"' in page
    assert seeded.clean not in page
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page
    assert "script-src" not in response.headers["Content-Security-Policy"]  # default-src 'none': no script runs
    assert response.headers["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ("?errors=1", ["error"], ["flagged", "no_support", "dismissed"]),
        ("?flagged=1&no_support=1", ["flagged", "no_support", "dismissed"], ["error"]),
        ("?channel=C-other", ["error"], ["flagged", "no_support"]),
        ("?all=1&limit=2", ["pending", "dismissed"], ["clean", "flagged"]),
        ("?since=2026-03-02T09:08Z", ["error", "dismissed"], ["flagged", "no_support"]),
    ],
)
async def test_queue_filters_are_a_get_form(
    sqlite_log: Database, seeded: Seeded, query: str, shown: list[str], hidden: list[str]
) -> None:
    async with desk_client(sqlite_log) as client:
        page = await (await client.get("/" + query)).text()
    assert all(getattr(seeded, name) in page for name in shown)
    assert not any(getattr(seeded, name) in page for name in hidden)


@pytest.mark.parametrize(
    ("query", "message"),
    [("?since=yesterday", "--since &#x27;yesterday&#x27; is not a duration"),
     ("?limit=0", "limit must be a whole number from 1 to 1000")],
)
async def test_a_bad_filter_is_a_400_that_says_what_is_accepted(
    sqlite_log: Database, seeded: Seeded, query: str, message: str
) -> None:
    async with desk_client(sqlite_log) as client:
        response = await client.get("/" + query)
        assert response.status == 400
        assert message in await response.text()


async def test_exchange_page_highlights_the_quote_in_its_chunk_and_marks_it_stale(
    sqlite_log: Database, seeded: Seeded
) -> None:
    async with desk_client(sqlite_log) as client:
        page = await (await client.get(f"/exchanges/{seeded.flagged}")).text()
    assert '<h1 class="question">&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt; How long' in page
    assert ("Read this &lt;img src=x onerror=alert(1)&gt;. <mark>Annual plans can be refunded within 10 days.</mark>"
            " Then the rest") in page
    assert '<section class="card flagged" id="S1" data-state="stale">' in page
    assert "version 2026-09 is indexed now" in page
    assert "the text of this chunk is no longer in the index" in page  # S2's chunk is not in INDEX
    assert page.count(">Resolve</button>") == 1  # one open lead flag; a member's reaction gets no button
    assert "not a lead: context only" in page


async def test_exchange_page_marks_a_citation_whose_document_was_removed(sqlite_log: Database, seeded: Seeded) -> None:
    removed = StaticChunks([], [])  # the sync took refund-policy out: no chunk, no registry entry
    async with desk_client(sqlite_log, lookup=removed) as client:
        page = await (await client.get(f"/exchanges/{seeded.flagged}")).text()
    assert "A cited document has been removed from the index" in page
    assert '<section class="card flagged" id="S1" data-state="removed">' in page
    assert "no longer indexed" in page and "A newer version of a cited document is indexed" not in page


async def test_exchange_page_without_the_index_shows_the_logged_quotes(sqlite_log: Database, seeded: Seeded) -> None:
    async with desk_client(sqlite_log, lookup=IndexUnavailable("cannot reach Weaviate at http://w:8080")) as client:
        page = await (await client.get(f"/exchanges/{seeded.clean}")).text()
    assert "Chunk text unavailable: cannot reach Weaviate at http://w:8080; showing the quotes as logged." in page
    assert "<mark>Annual plans can be refunded within 10 days.</mark>" in page
    assert "Rejected quotes (1)" in page and "Rejected by verification: not_found" in page


async def test_exchange_page_says_who_handed_it_off_and_when(sqlite_log: Database, seeded: Seeded) -> None:
    async with sqlite_log.sessions() as session:
        await claim_handoff(session, seeded.no_support, user_id="U0ANNA", at=at(7))
    async with desk_client(sqlite_log, lookup=IndexUnavailable("not read")) as client:
        page = await (await client.get(f"/exchanges/{seeded.no_support}")).text()
        other = await (await client.get(f"/exchanges/{seeded.clean}")).text()
    assert "Handed off to a person by U0ANNA at 2026-03-02 09:07 UTC (hand-off message not noted)." in page
    assert "Handed off to a person" not in other


@pytest.mark.parametrize(
    ("path", "message"),
    [("/exchanges/not-a-uuid", "&#x27;not-a-uuid&#x27; is not an exchange id"),
     ("/exchanges/00000000-0000-4000-8000-000000000000", "no exchange with id")],
)
async def test_a_bad_or_unknown_exchange_id_is_a_404_naming_it(
    sqlite_log: Database, seeded: Seeded, path: str, message: str
) -> None:
    async with desk_client(sqlite_log) as client:
        response = await client.get(path)
        assert response.status == 404
        assert message in await response.text()


async def test_resolve_button_resolves_the_flag_and_the_page_says_so(db: Database) -> None:
    seeded = await seed_log(db.sessions, question=HOSTILE)
    async with desk_client(db) as client:
        page = await (await client.get(f"/exchanges/{seeded.flagged}")).text()
        response = await client.post(
            f"/exchanges/{seeded.flagged}/resolve", allow_redirects=False, headers={"Origin": origin(client)},
            data={"csrf": csrf_of(page), "flag_id": seeded.open_flag, "resolution": "confirmed_bad",
                  "note": "says 10 days; the policy says 30", "by": "Аня <lead>"},
        )
        assert response.status == 303
        assert response.headers["Location"] == (
            f"/exchanges/{seeded.flagged}?resolved=1&as=confirmed_bad#flags")
        after = await (await client.get(response.headers["Location"])).text()
    assert "Resolved 1 flag as confirmed bad." in after
    assert 'value="Аня &lt;lead&gt;"' in after  # the reviewer's name is remembered (and escaped)
    assert ">Resolve</button>" not in after and ">Change verdict</button>" in after
    async with db.sessions() as session:
        flag = next(f for f in await flags_for(session, seeded.flagged) if f.id == seeded.open_flag)
    assert (flag.resolution, flag.resolution_note, flag.resolved_by) == (
        "confirmed_bad", "says 10 days; the policy says 30", "Аня <lead>")


@pytest.mark.parametrize(
    ("form", "headers", "status", "message"),
    [
        ({"resolution": "confirmed_bad"}, {}, 403, "This form has expired or came from another site"),
        ({"resolution": "confirmed_bad", "csrf": "forged"}, {}, 403, "This form has expired"),
        ({"resolution": "confirmed_bad", "csrf": "@page"}, {"Origin": "https://evil.example"}, 403,
         "posted from another site"),
        ({"resolution": "deleted", "csrf": "@page"}, {}, 400, "resolution must be one of"),
        ({"resolution": "confirmed_bad", "csrf": "@page", "flag_id": "x"}, {}, 400, "is not a flag id"),
    ],
)
async def test_a_forged_or_bad_resolve_post_changes_nothing(
    sqlite_log: Database, seeded: Seeded, form: dict[str, str], headers: dict[str, str], status: int, message: str
) -> None:
    async with desk_client(sqlite_log) as client:
        page = await (await client.get(f"/exchanges/{seeded.flagged}")).text()
        data = {key: csrf_of(page) if value == "@page" else value for key, value in form.items()}
        response = await client.post(f"/exchanges/{seeded.flagged}/resolve", data=data, headers=headers,
                                     allow_redirects=False)
        assert response.status == status
        assert message in await response.text()
    async with sqlite_log.sessions() as session:
        assert all(flag.resolution is None for flag in await flags_for(session, seeded.flagged))


async def test_resolving_when_nothing_is_open_says_so_on_the_page(sqlite_log: Database, seeded: Seeded) -> None:
    """The dismissed exchange's only flag is resolved: its page offers "Change verdict", not "resolve all"."""
    async with desk_client(sqlite_log) as client:
        page = await (await client.get(f"/exchanges/{seeded.dismissed}")).text()
        response = await client.post(f"/exchanges/{seeded.dismissed}/resolve",
                                     data={"csrf": csrf_of(page), "resolution": "not_a_problem"})
        assert response.status == 409
        assert f"exchange {seeded.dismissed} has no open flags to resolve" in await response.text()


async def test_trends_page_draws_the_charts_for_a_channel(sqlite_log: Database, seeded: Seeded) -> None:
    async with desk_client(sqlite_log) as client:
        everywhere = await (await client.get("/trends?since=2026-03-01")).text()
        one = await (await client.get("/trends?since=2026-03-01&channel=C-other")).text()
        bad = await client.get("/trends?since=soon")
        assert bad.status == 400
    assert everywhere.count('<svg class="chart"') == 7
    assert "Askers unhappy" in everywhere, "the feedback buttons' 👎 share is charted"
    assert "Handed off to a person" in everywhere and "Deflection" in everywhere
    for title in ("No-support rate", "Deflection and hand-offs", "Wrong-citation rate", "Flag rate",
                  "Rejected-quote rate", "Latency"):
        assert f'aria-label="{title}"' in everywhere
    assert "<b>20.0%</b>" in everywhere  # answers without support: 1 of 5 completed
    assert '<option value="C-other" selected>' in one and "channel C-other" in one
    assert "<b>0.0%</b>" in one  # C-other has one exchange, an error: no no-support answers


async def test_healthz_says_whether_the_log_answers(sqlite_log: Database, tmp_path: Path) -> None:
    async with desk_client(sqlite_log, token=TOKEN) as client:
        response = await client.get("/healthz")  # no token needed
        assert (response.status, await response.json()) == (200, {"status": "ok"})
    down = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'log.sqlite3'}")
    try:
        log = Database(kind="sqlite", url="", engine=down, sessions=create_session_factory(down))
        async with desk_client(log) as client:
            health = await client.get("/healthz")
            queue = await client.get("/")
            assert (health.status, await health.json()) == (503, {"status": "unavailable"})
            assert queue.status == 503
            assert "The exchange log did not answer: try again shortly." in await queue.text()
    finally:
        await down.dispose()


async def test_with_a_token_every_page_needs_it_and_never_shows_it(sqlite_log: Database, seeded: Seeded) -> None:
    async with desk_client(sqlite_log, token=TOKEN) as client:
        to_login = await client.get(f"/exchanges/{seeded.flagged}", allow_redirects=False)
        assert to_login.status == 303
        assert to_login.headers["Location"] == f"/login?next=/exchanges/{seeded.flagged}"
        assert (await client.post(f"/exchanges/{seeded.flagged}/resolve", data={})).status == 401
        assert (await client.get("/", headers={"Authorization": "Bearer wrong"})).status == 401
        by_header = await client.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
        assert by_header.status == 200

        wrong = await client.post(f"/login?next=%2Fexchanges%2F{seeded.flagged}", data={"token": TOKEN[:-1]},
                                  headers={"Origin": origin(client)})
        assert wrong.status == 401 and "That is not this desk&#x27;s token." in await wrong.text()
        signed_in = await client.post(f"/login?next=%2Fexchanges%2F{seeded.flagged}", data={"token": TOKEN},
                                      headers={"Origin": origin(client)}, allow_redirects=False)
        assert signed_in.status == 303 and signed_in.headers["Location"] == f"/exchanges/{seeded.flagged}"
        cookie = signed_in.cookies["verbatim_review_login"]
        assert cookie["httponly"] and TOKEN not in cookie.value
        pages = [await (await client.get(path)).text() for path in ("/", f"/exchanges/{seeded.flagged}", "/trends")]
        assert all("Sign out" in page for page in pages)
        assert not any(TOKEN in page for page in [*pages, await wrong.text()])

        page = pages[1]
        signed_out = await client.post("/logout", data={"csrf": csrf_of(page)}, allow_redirects=False)
        assert signed_out.status == 303
        assert (await client.get("/", allow_redirects=False)).status == 303


async def test_without_a_token_there_is_no_sign_in(sqlite_log: Database) -> None:
    async with desk_client(sqlite_log) as client:
        response = await client.get("/login", allow_redirects=False)
        assert (response.status, response.headers["Location"]) == (303, "/")


async def test_resolve_all_closes_every_open_flag_of_the_exchange(sqlite_log: Database, seeded: Seeded) -> None:
    """Two leads flagged one answer: one button resolves both, and the member's reaction stays as it was."""
    async with sqlite_log.sessions() as session:
        await add_flag(session, seeded.flagged, label=None, user_id="U-lead-2", reaction="warning", is_lead=True,
                       at=at(3))
    async with desk_client(sqlite_log) as client:
        page = await (await client.get(f"/exchanges/{seeded.flagged}")).text()
        assert "Resolve all 2 open flags" in page
        response = await client.post(f"/exchanges/{seeded.flagged}/resolve",
                                     data={"csrf": csrf_of(page), "resolution": "fixed_in_docs", "by": ""})
        assert "Resolved 2 flags as fixed in docs." in await response.text()
    async with sqlite_log.sessions() as session:
        flags = await flags_for(session, seeded.flagged)
    assert {(f.user_id, f.resolution, f.resolved_by) for f in flags} == {
        ("U-lead", "fixed_in_docs", "review desk"), ("U-lead-2", "fixed_in_docs", "review desk"),
        ("U-member", None, None)}


async def test_exchange_page_says_how_many_citations_a_leads_flag_suppressed(sqlite_log: Database) -> None:
    record = exchange(route={"embedder": "e5", "reranker": "local", "composer": "extractive",
                             "suppressed": ["chunk-7"], "demoted": []})
    async with sqlite_log.sessions() as session:
        await record_exchange(session, record)
    async with desk_client(sqlite_log) as client:
        page = await (await client.get(f"/exchanges/{record.id}")).text()
    assert '<p class="banner warn" role="status">1 citation suppressed by a lead&#x27;s flag.</p>' in page
