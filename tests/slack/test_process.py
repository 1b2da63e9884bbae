"""`python -m bot` as a platform runs it (Procfile ``web:``): starts from the environment alone, answers a
mention over HTTP, reports healthy, and on SIGTERM finishes and exits 0."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp

from retrieval.store import ChunkStore
from tests.conftest import free_port
from tests.slack.harness import ANSWER, QUESTION
from tests.standins import SlackStandIn

ENTRY = [sys.executable, "-m", "bot"]  # with no arguments: `verbatim serve`


async def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 180.0) -> dict:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with aiohttp.ClientSession() as session:
        while loop.time() < deadline:
            assert process.poll() is None, f"the bot exited with {process.returncode}"
            try:
                async with session.get(f"{url}/healthz") as response:
                    if response.status == 200:
                        return await response.json()
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.25)
    raise AssertionError(f"the bot did not become healthy within {timeout:.0f} s")


@contextmanager
def serving(cli_env: dict[str, str], slack: SlackStandIn, collection: str, port: int, cwd: Path,
            **extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m bot` serving ``collection`` against the Slack stand-in on ``port``, its output in cwd/bot.log;
    killed on the way out if a test left it running."""
    env = cli_env | {"VERBATIM_COLLECTION": collection, "SLACK_BOT_TOKEN": slack.bot_token,
                     "SLACK_SIGNING_SECRET": slack.signing_secret, "SLACK_API_URL": slack.api_url,
                     "PORT": str(port)} | extra
    with (cwd / "bot.log").open("wb") as log, subprocess.Popen(ENTRY, env=env, cwd=cwd, stdout=log,
                                                               stderr=subprocess.STDOUT) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()


async def sigterm(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return await asyncio.to_thread(process.wait, 60)


async def test_python_m_bot_serves_from_the_environment_and_stops_cleanly_on_sigterm(
        cli_env: dict[str, str], demo_store: ChunkStore, tmp_path: Path) -> None:
    async with SlackStandIn() as slack:
        port = free_port()
        with serving(cli_env, slack, demo_store.name, port, tmp_path) as process:
            health = await wait_healthy(f"http://127.0.0.1:{port}", process)
            mention = slack.app_mention("C0SUPPORT", QUESTION)
            status, _ = await slack.deliver_event(f"http://127.0.0.1:{port}/slack/events", mention)
            reply = await slack.wait_for(lambda: slack.thread("C0SUPPORT", mention["ts"])[1], timeout=120,
                                         what="the reply")
            code = await sigterm(process)
    output = (tmp_path / "bot.log").read_text(encoding="utf-8", errors="replace")

    assert health["mode"] == "http" and status == 200
    assert ANSWER in str(reply["blocks"]), output[-2000:]
    assert code == 0, output[-2000:]
    assert "stopped" in output and slack.bot_token not in output and slack.signing_secret not in output


async def test_a_bot_token_slack_refuses_stops_the_start_with_one_line_and_exit_2(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    async with SlackStandIn() as slack:
        env = cli_env | {"SLACK_BOT_TOKEN": "xoxb-revoked", "SLACK_SIGNING_SECRET": slack.signing_secret,
                         "SLACK_API_URL": slack.api_url, "PORT": str(free_port())}
        done = await asyncio.to_thread(subprocess.run, ENTRY, env=env, cwd=tmp_path, capture_output=True,
                                       timeout=120)
    lines = done.stderr.decode().strip().splitlines()

    assert done.returncode == 2
    assert lines == ["error: Slack refused SLACK_BOT_TOKEN at auth.test (invalid_auth): check the token and "
                     "SLACK_API_URL"]


async def test_log_format_json_makes_every_line_of_a_start_and_a_stop_one_json_object(
        cli_env: dict[str, str], demo_store: ChunkStore, tmp_path: Path) -> None:
    """A log pipeline parses every line: the migrations of a fresh exchange log (Alembic's lines) included."""
    async with SlackStandIn() as slack:
        port = free_port()
        with serving(cli_env, slack, demo_store.name, port, tmp_path, LOG_FORMAT="json", LOG_LEVEL="INFO") as process:
            await wait_healthy(f"http://127.0.0.1:{port}", process)
            code = await sigterm(process)
    lines = (tmp_path / "bot.log").read_text(encoding="utf-8", errors="replace").splitlines()

    assert code == 0, lines[-20:]
    not_json = [line for line in lines if not _json_object(line)]
    assert not_json == [], not_json
    loggers = {json.loads(line)["logger"] for line in lines}
    assert any(name.startswith("alembic") for name in loggers), loggers  # the fresh log was migrated
    assert "bot.serve" in loggers, loggers


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False
