"""`verbatim review recheck` as a docs CI runs it: exit 0 while a confirmed-bad citation stays away, 1 when it comes back;
on a SQLite log it reads, caches and records through one connection, as every process does."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

from storage.db import create_engine, create_session_factory
from storage.exchanges import get_exchange, record_exchange
from storage.flags import add_flag
from storage.migrate import upgrade
from tests.conftest import DEMO_CORPUS
from tests.slack.harness import ANSWER, QUESTION
from tests.storage.builders import at, exchange

VERBATIM = str(Path(sys.executable).parent / "verbatim")


async def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(subprocess.run, [VERBATIM, *args], env=env, capture_output=True, text=True,
                                   timeout=300)


# `verbatim` with the standard library's audit hook on: every sqlite3 connection the process opens to the log, by
# whichever engine, is a line in COUNT_CONNECTS_OUT (the stdlib raises the event; nothing of ours is replaced).
COUNTING_VERBATIM = """
import os, sys
log = os.path.realpath(os.environ["COUNT_CONNECTS_TO"])
def count(event, args):
    if event == "sqlite3.connect" and os.path.realpath(os.fsdecode(args[0])) == log:
        with open(os.environ["COUNT_CONNECTS_OUT"], "a", encoding="utf-8") as out:
            out.write("connect\\n")
sys.addaudithook(count)
from bot.cli import main
sys.argv[0] = "verbatim"
main()
"""


async def test_recheck_reads_and_records_through_one_connection_on_a_sqlite_log(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    """SQLite has one writer at a time: a second engine of the same process would queue its writes on the file's
    lock (a 15 s busy wait, then "database is locked") behind the first one's instead of taking turns on one
    connection. The recheck reads the flagged question, the suppressions and records the new answer: one opening."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(DEMO_CORPUS / "accounts" / "password-reset.md", docs)
    log = tmp_path / "log.sqlite3"
    url = f"sqlite+aiosqlite:///{log}"
    await upgrade(url)
    flagged = exchange(question=QUESTION)
    engine = create_engine(url)
    try:
        async with create_session_factory(engine)() as session:  # an answer a lead flagged, still open
            await record_exchange(session, flagged)
            await add_flag(session, flagged.id, label="S1", user_id="U0LEAD", reaction="x", is_lead=True, at=at())
    finally:
        await engine.dispose()
    env = cli_env | {"DATABASE_URL": url}
    assert (await run(env, "ingest", str(docs))).returncode == 0

    opened = tmp_path / "connects.txt"
    counted = env | {"COUNT_CONNECTS_TO": str(log), "COUNT_CONNECTS_OUT": str(opened)}
    result = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", COUNTING_VERBATIM, "review", "recheck", "--all-flagged", "--json"],
        env=counted, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["rechecked"] == 1
    [asked_again] = summary["results"]
    assert opened.read_text(encoding="utf-8").splitlines() == ["connect"]
    engine = create_engine(url)
    try:
        async with create_session_factory(engine)() as session:
            recorded = await get_exchange(session, asked_again["new_exchange_id"])
    finally:
        await engine.dispose()
    assert recorded is not None and (recorded.source, recorded.question) == ("eval", QUESTION)


async def test_recheck_fails_the_build_when_a_new_version_still_says_what_a_lead_confirmed_bad(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DEMO_CORPUS / "accounts", docs)
    url = f"sqlite+aiosqlite:///{tmp_path / 'log.sqlite3'}"
    await upgrade(url)
    env = cli_env | {"DATABASE_URL": url}
    assert (await run(env, "ingest", str(docs))).returncode == 0
    asked = json.loads((await run(env, "ask", QUESTION, "--json")).stdout)
    (label,) = [c["id"] for c in asked["citations"] if ANSWER in c["exact_quote"]][:1]
    engine = create_engine(url)
    try:
        async with create_session_factory(engine)() as session:  # what the lead's reaction stores
            await add_flag(session, asked["exchange_id"], label=label, user_id="U0LEAD", reaction="x", is_lead=True,
                           at=at())
    finally:
        await engine.dispose()
    resolved = await run(env, "review", "resolve", asked["exchange_id"], "--as", "confirmed_bad", "--by", "lead")
    assert resolved.returncode == 0, resolved.stderr

    clean = await run(env, "review", "recheck", "--json")
    assert clean.returncode == 0, clean.stderr
    summary = json.loads(clean.stdout)
    assert (summary["rechecked"], summary["confirmed_bad_back"], summary["still_cite_flagged"]) == (1, 0, 0)

    page = docs / "password-reset.md"
    page.write_text(page.read_text(encoding="utf-8").replace('version: "3.2"', 'version: "3.3"'), encoding="utf-8")
    assert (await run(env, "ingest", str(docs))).returncode == 0
    back = await run(env, "review", "recheck")
    assert back.returncode == 1
    assert back.stderr == f"error: 1 confirmed-bad citation came back: {asked['exchange_id']}\n"
    assert "CONFIRMED BAD BACK" in back.stdout
