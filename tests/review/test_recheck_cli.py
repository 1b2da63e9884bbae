"""`verbatim review recheck` as a docs CI runs it: exit 0 while a confirmed-bad citation stays away, 1 when it comes back."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

from storage.db import create_engine, create_session_factory
from storage.flags import add_flag
from storage.migrate import upgrade
from tests.conftest import DEMO_CORPUS
from tests.slack.harness import ANSWER, QUESTION
from tests.storage.builders import at

VERBATIM = str(Path(sys.executable).parent / "verbatim")


async def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(subprocess.run, [VERBATIM, *args], env=env, capture_output=True, text=True,
                                   timeout=300)


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
