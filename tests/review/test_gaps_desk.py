"""Coverage gaps end to end: the real exchange log (SQLite and PostgreSQL), the real e5 embedder, the clustering;
then `verbatim review gaps` (table and --json) and the desk's /gaps page."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.review import desk
from retrieval.embedders.local import E5Embedder
from tests.review.gap_seed import HOSTILE_GAP, REFUNDS, seed_gaps
from tests.review.test_cli import run
from tests.review.test_web import desk_client
from tests.storage.database import Database


async def test_no_support_questions_are_grouped_into_topics_most_people_first(
    db: Database, embedder: E5Embedder
) -> None:
    now = datetime.now(UTC)
    log = await seed_gaps(db.sessions, now)
    report = await desk.coverage_gaps(db.sessions, embedder, since=now - timedelta(days=30), channel_id="C-support",
                                      now=now)
    assert report.questions == 6  # the answered question, the old one and the other channel's are left out
    refunds, *rest = report.topics
    assert set(refunds.exchange_ids) == set(log.refunds)
    assert (refunds.people, refunds.questions) == (2, 3)
    assert "refund" in refunds.terms and "annual" in refunds.terms
    assert (refunds.trend.last_7_days, refunds.trend.previous_7_days) == (2, 1)
    assert [(f.chunk_id, f.questions) for f in refunds.fragments] == [("chunk-9", 3), ("chunk-4", 2)]
    assert set(refunds.examples) == set(REFUNDS)
    by_ids = {frozenset(topic.exchange_ids): topic for topic in rest}
    assert set(by_ids) == {frozenset(log.sso), frozenset({log.invoices})}
    assert by_ids[frozenset(log.sso)].label.startswith("sso") or "okta" in by_ids[frozenset(log.sso)].terms

    everywhere = await desk.coverage_gaps(db.sessions, embedder, since=now - timedelta(days=90), channel_id=None,
                                          now=now)
    assert everywhere.questions == 8 and everywhere.topics[0].people == 4  # U1, U2, U5, U6 asked about refunds


async def test_the_same_log_gives_the_same_topics(db: Database, embedder: E5Embedder) -> None:
    now = datetime.now(UTC)
    await seed_gaps(db.sessions, now)
    first = await desk.coverage_gaps(db.sessions, embedder, since=None, channel_id=None, now=now)
    again = await desk.coverage_gaps(db.sessions, embedder, since=None, channel_id=None, now=now)
    assert first == again


async def test_review_gaps_prints_a_table_and_json(review_env: dict[str, str], sqlite_log: Database,
                                                   tmp_path: Path) -> None:
    log = await seed_gaps(sqlite_log.sessions)
    table = await run(review_env, "gaps", "--channel", "C-support", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "6 no-support questions in 3 topics" in table.stdout
    lines = table.stdout.splitlines()
    assert "6 no-support questions in 3 topics" in lines[0]
    # One row per topic, most people first: refunds (2 people, 3 questions), then SSO and invoices (1 person each).
    first_row = next(line for line in lines if line.lstrip().startswith("1 "))
    assert [cell.strip() for cell in first_row.split("│")][1:3] == ["2", "3"]
    assert "chunk-9, 3×" in table.stdout and "Okta" in table.stdout
    assert "<script>alert('gap')</script>" in table.stdout  # a terminal shows it as the text it is

    out = await run(review_env, "gaps", "--json", "--since", "90d", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"since", "channel", "now", "questions", "threshold", "topics"}
    assert data["questions"] == 8 and data["channel"] is None
    top = data["topics"][0]
    assert set(top) == {"label", "terms", "questions", "people", "examples", "exchange_ids", "nearest", "trend"}
    assert (top["people"], top["questions"]) == (4, 5)
    assert set(log.refunds) | {log.other_channel, log.old} == set(top["exchange_ids"])
    assert top["nearest"][0] == {"chunk_id": "chunk-9", "document_id": "refund-policy", "title": "Refund policy",
                                 "questions": 3, "best_rank": 1}
    assert set(top["trend"]) == {"first_asked", "last_asked", "last_7_days", "previous_7_days"}

    bad = await run(review_env, "gaps", "--since", "soon", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: --since 'soon'")


async def test_gaps_page_shows_topics_and_a_script_as_text(sqlite_log: Database, embedder: E5Embedder) -> None:
    await seed_gaps(sqlite_log.sessions)
    async with desk_client(sqlite_log, embedder=embedder) as client:
        queue = await (await client.get("/")).text()
        response = await client.get("/gaps?channel=C-support")
        page = await response.text()
        bad = await client.get("/gaps?since=soon")
        bad_page = await bad.text()
    assert 'href="/gaps"' in queue
    assert response.status == 200
    assert page.count('<section class="card topic"') == 3
    assert 'data-people="2" data-questions="3"' in page.split('<section class="card topic"')[1]
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;gap&#x27;)&lt;/script&gt; How do I export" in page
    assert HOSTILE_GAP not in page
    assert bad.status == 400 and "is not a duration" in bad_page


async def test_gaps_page_says_it_is_off_without_an_embedder(sqlite_log: Database) -> None:
    async with desk_client(sqlite_log) as client:
        response = await client.get("/gaps")
        assert response.status == 503
        assert "Coverage gaps are off" in await response.text()
