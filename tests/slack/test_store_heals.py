"""The store dies under the running bot: the asker gets the error reply (logged as an error), and the bot heals
by itself — its embedded Weaviate is restarted, /readyz turns ready again and the next question is answered,
with no restart of the bot. The real ``python -m bot`` on a home of its own, the Slack stand-in, ``kill -9``.
(How long each step takes is measured in ``bench/faults.py``, never asserted here.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.conftest import DEMO_CORPUS, free_port
from tests.slack.harness import ANSWER, QUESTION
from tests.slack.test_crash_recovery import bot_process, exchanges_in
from tests.slack.test_process import wait_healthy
from tests.standins import SlackStandIn

CHANNEL = "C0SUPPORT"


async def readiness(url: str) -> int:
    async with aiohttp.ClientSession() as session, session.get(f"{url}/readyz") as response:
        return response.status


async def until_status(url: str, status: int, timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if await readiness(url) == status:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"/readyz did not answer {status} within {timeout:.0f} s")


async def test_a_killed_embedded_store_gets_an_error_reply_then_heals_without_a_restart(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in cli_env.items() if not k.startswith("WEAVIATE_") or k == "WEAVIATE_BINARY_DIR"}
    env |= {"VERBATIM_HOME": str(home), "WEAVIATE_EMBEDDED_PORT": str(free_port()),
            "WEAVIATE_EMBEDDED_GRPC_PORT": str(free_port())}
    ingest = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "ingest", str(DEMO_CORPUS)],
                                     env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert ingest.returncode == 0, ingest.stderr[-2000:]

    async with SlackStandIn() as slack:
        port = free_port()
        env |= {"SLACK_BOT_TOKEN": slack.bot_token, "SLACK_SIGNING_SECRET": slack.signing_secret,
                "SLACK_API_URL": slack.api_url, "PORT": str(port)}
        url = f"http://127.0.0.1:{port}"
        with bot_process(env, tmp_path / "bot.log") as bot:
            await wait_healthy(url, bot)
            await until_status(url, 200)
            os.kill(json.loads((home / "weaviate.server.json").read_text())["pid"], signal.SIGKILL)

            during = slack.app_mention(CHANNEL, QUESTION)
            await slack.deliver_event(f"{url}/slack/events", during)
            error_reply = await slack.wait_for(lambda: slack.thread(CHANNEL, during["ts"])[1], timeout=60,
                                               what="the error reply")
            await until_status(url, 200)  # healed: the home's server was started again
            after = slack.app_mention(CHANNEL, QUESTION)
            await slack.deliver_event(f"{url}/slack/events", after)
            answer = await slack.wait_for(lambda: slack.thread(CHANNEL, after["ts"])[1], timeout=60,
                                          what="the answer after healing")
            bot.send_signal(signal.SIGTERM)
            await asyncio.to_thread(bot.wait, 60)

    exchanges = {e.reply_ts: e for e in await exchanges_in(f"sqlite+aiosqlite:///{home / 'verbatim.sqlite3'}")}
    log = (tmp_path / "bot.log").read_text(encoding="utf-8", errors="replace")

    assert ANSWER not in str(error_reply["blocks"])
    failed = exchanges[error_reply["ts"]]
    assert failed.outcome == "error" and failed.id in str(error_reply["blocks"])  # the reference id
    assert ANSWER in str(answer["blocks"]) and exchanges[answer["ts"]].outcome == "answered", log[-3000:]
    assert "the document store is serving again" in log
