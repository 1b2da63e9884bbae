"""The review desk in a real headless browser (Debian's chromium over the DevTools Protocol): sign in with the
token, read a quote highlighted in its chunk, press Resolve, see the trend charts and the coverage gaps."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web

from bot.review.web import create_review_app
from retrieval.embedders.local import E5Embedder
from retrieval.store import ChunkStore
from storage.exchanges import record_exchange
from storage.flags import add_flag, flags_for
from tests.conftest import free_port
from tests.review.cdp import Page, launch
from tests.review.test_index import POLICY_V1, QUOTE, ingest_policy
from tests.storage.builders import citation, exchange
from tests.storage.database import Database

TOKEN = "browser-token-0c41d7"
HOSTILE = '<script>document.title="pwned"</script> How long do annual plans have for a refund?'
HOSTILE_GAP = '<script>document.title="gap"</script> Can I pay invoices by bank transfer?'


@pytest.fixture
async def desk_url(store: ChunkStore, embedder: E5Embedder, sqlite_log: Database) -> AsyncIterator[str]:
    """The desk on a real port, over a log with a flagged exchange whose quote is in the real Weaviate."""
    chunk_id = await ingest_policy(store, embedder, "v1", POLICY_V1)
    now = datetime.now(UTC)
    flagged = exchange(
        id="6f1d0c7e-2b7a-4f3e-9a51-3c2d1e0f9a88", created_at=now - timedelta(days=1), question=HOSTILE,
        citations=(citation(1, exact_quote=QUOTE, chunk_id=chunk_id, version="v1", section="Eligibility"),),
    )
    others = [
        exchange(created_at=now - timedelta(days=3), outcome="no_support", citations=(), timings_ms={"total": 90.0}),
        exchange(created_at=now - timedelta(days=4), outcome="no_support", citations=(), timings_ms={"total": 70.0},
                 question=HOSTILE_GAP, user_id="U-other"),
        exchange(created_at=now - timedelta(days=2), timings_ms={"total": 240.0},
                 citations=(citation(1, chunk_id=chunk_id), citation(2, kept=False, chunk_id=chunk_id))),
    ]
    async with sqlite_log.sessions() as session:
        for record in (flagged, *others):
            await record_exchange(session, record)
        await add_flag(session, flagged.id, label="S1", user_id="U-lead", reaction="x", is_lead=True,
                       at=now - timedelta(hours=20))
    runner = web.AppRunner(create_review_app(sqlite_log.sessions, store, token=TOKEN, embedder=embedder))
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def text_of(page: Page, selector: str) -> str:
    return str(await page.evaluate(f"document.querySelector({selector!r})?.textContent ?? ''"))


async def test_a_lead_signs_in_reads_the_quote_in_context_resolves_the_flag_and_sees_trends_and_gaps(
    chromium: str, desk_url: str, sqlite_log: Database, tmp_path: Path
) -> None:
    exchange_id = "6f1d0c7e-2b7a-4f3e-9a51-3c2d1e0f9a88"
    async with launch(chromium, tmp_path / "profile") as browser:
        page = await browser.new_page()

        # Without the token's cookie the desk sends the browser to sign in, then back where it was going.
        await page.goto(f"{desk_url}/exchanges/{exchange_id}")
        assert await page.evaluate("location.pathname") == "/login"
        await page.fill("input[name=token]", TOKEN)
        await page.click_and_wait("form[action^='/login'] button[type=submit]")
        assert await page.evaluate("location.pathname") == f"/exchanges/{exchange_id}"

        # The user's <script> is text on the page, and nothing ran.
        assert await text_of(page, "h1.question") == HOSTILE
        assert await page.evaluate("document.querySelectorAll('script').length") == 0
        assert await page.evaluate("document.title") != "pwned"

        # The quote is highlighted inside the chunk text from Weaviate, with its context, and is current.
        assert await text_of(page, "#S1 mark") == QUOTE
        context = await text_of(page, "#S1 blockquote.chunk")
        assert "sold on the website. " + QUOTE + " After 30 days" in context
        assert await page.evaluate("document.querySelector('#S1').dataset.state") == "current"
        await page.screenshot(tmp_path / "exchange.png")

        # Resolve the flag with the button, as a lead would.
        await page.fill("tr.flag form.resolve input[name=note]", "30 days is right; the claim says so too")
        await page.fill("tr.flag form.resolve input[name=by]", "Lead Ann")
        await page.evaluate("document.querySelector('tr.flag select[name=resolution]').value = 'not_a_problem'")
        await page.click_and_wait("tr.flag form.resolve button.resolve-button")
        assert await text_of(page, "p.banner.ok") == "Resolved 1 flag as not a problem."
        assert await page.evaluate("document.querySelector('tr.flag').dataset.resolution") == "not_a_problem"
        await page.screenshot(tmp_path / "resolved.png")

        # The queue lists it among the exchanges to review, with its question as text.
        await page.click_and_wait("header a[href='/']")
        assert await page.evaluate("document.querySelectorAll('main tbody tr').length") == 3  # flagged + 2 no support
        assert await text_of(page, f"a[href='/exchanges/{exchange_id}']") == HOSTILE
        await page.screenshot(tmp_path / "queue.png")

        # The trends page draws its charts as inline SVG, with points for the days that had exchanges.
        await page.goto(f"{desk_url}/trends")
        assert await page.evaluate("document.querySelectorAll('svg.chart').length") == 7  # deflection and hand-offs: the second
        assert await page.evaluate(
            "[...document.querySelectorAll('.metric')].some(m => m.textContent.startsWith('Deflection'))")
        assert await page.evaluate(
            "[...document.querySelectorAll('.metric')].some(m => m.textContent.startsWith('Handed off to a person'))")
        assert await page.evaluate("document.querySelectorAll('svg.chart circle').length") > 0
        assert await page.evaluate("document.querySelector('svg.chart').getBoundingClientRect().width") > 300
        assert await text_of(page, ".metric b") == "50.0%"  # answers without support: 2 of 4
        await page.screenshot(tmp_path / "trends.png")

        # From the queue, the coverage gaps: the two no-support questions, about different things, as two topics.
        await page.goto(f"{desk_url}/")
        await page.click_and_wait("a.gaps-link")
        assert await page.evaluate("location.pathname") == "/gaps"
        assert await page.evaluate("document.querySelectorAll('section.topic').length") == 2
        examples = await page.evaluate("[...document.querySelectorAll('li.example')].map(e => e.textContent)")
        assert sorted(examples) == sorted([HOSTILE_GAP, "How long do I have to request a refund?"])
        assert await page.evaluate("document.querySelectorAll('script').length") == 0
        assert await page.evaluate("document.title") == "Coverage gaps · Verbatim review"
        assert "Refund policy" in await text_of(page, "section.topic li.fragment")  # what the bot found nearest
        await page.screenshot(tmp_path / "gaps.png")

    async with sqlite_log.sessions() as session:
        (flag,) = await flags_for(session, exchange_id)
    assert (flag.resolution, flag.resolution_note, flag.resolved_by) == (
        "not_a_problem", "30 days is right; the claim says so too", "Lead Ann")
    keep = os.environ.get("REVIEW_SCREENSHOTS")  # to look at the pages: REVIEW_SCREENSHOTS=/some/dir pytest ...
    if keep:
        for name in ("exchange.png", "resolved.png", "queue.png", "trends.png", "gaps.png"):
            shutil.copy(tmp_path / name, Path(keep) / name)
