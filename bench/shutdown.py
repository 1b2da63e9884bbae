"""How long `verbatim serve` takes to stop on SIGTERM, alone and side by side, and whether it leaves a server behind.

    python -m bench.shutdown [--side-by-side N]

Each bot is the real ``python -m bot`` (HTTP mode) against the Slack stand-in, in a home of its own with its own
Weaviate Embedded (a copy of one home the demo corpus was ingested into), as an outside check runs it: start,
SIGTERM, SIGKILL if it has not exited within 30 s (what platforms give), delete the home. Measured: SIGTERM to
exit, the exit codes, and the Weaviate servers still running on those homes afterwards.

    idle          one bot, ready, SIGTERM
    side by side  N bots started at once, each SIGTERMed as soon as it is ready
    starting      N bots started at once, each SIGTERMed as soon as its home's server is spawned (not ready)

Writes the table to docs/benchmarks.md (section "shutdown"). A benchmark, never a timed assertion in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench.common import ROOT, machine_line, table, write_section
from retrieval.embedded_home import running_servers
from tests.conftest import free_port
from tests.standins import SlackStandIn

PLATFORM_GRACE_S = 30.0  # SIGTERM, then SIGKILL after this
HOME_FILES_OF_A_RUN = ("weaviate.server.json", "weaviate.users", "weaviate.lock", "weaviate.log")


@dataclass(frozen=True, slots=True)
class Stop:
    seconds: float  # SIGTERM to exit (the grace when it had to be killed)
    code: int
    killed: bool


@dataclass(frozen=True, slots=True)
class Row:
    scenario: str
    bots: int
    stops: list[Stop]
    left: int  # Weaviate servers still running on the bots' homes after they exited


def template_home(work: Path, env: dict[str, str]) -> Path:
    """A home with the demo corpus ingested (its server stopped), copied for every bot."""
    home = work / "template"
    done = subprocess.run([sys.executable, "-m", "bot", "ingest", str(ROOT / "demo" / "corpus")],
                          env=env | {"VERBATIM_HOME": str(home)}, cwd=work, capture_output=True, text=True,
                          timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ingesting the demo corpus failed: {done.stderr.strip()[-500:]}")
    return home


def fresh_home(template: Path, home: Path) -> Path:
    shutil.copytree(template, home, ignore=shutil.ignore_patterns(*HOME_FILES_OF_A_RUN))
    return home


async def ready(url: str, process: subprocess.Popen[bytes], timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"a bot exited with {process.returncode} before it was ready")
            try:
                async with session.get(f"{url}/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"a bot was not ready within {timeout:.0f} s")


async def spawned(home: Path, process: subprocess.Popen[bytes], timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not (home / "weaviate.server.json").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("a bot exited, or its home's server was not spawned")
        await asyncio.sleep(0.05)


async def terminate(process: subprocess.Popen[bytes]) -> Stop:
    """SIGTERM; SIGKILL if it has not exited within the platform's grace."""
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        code = await asyncio.to_thread(process.wait, PLATFORM_GRACE_S)
        return Stop(time.monotonic() - sent, code, killed=False)
    except subprocess.TimeoutExpired:
        process.kill()
        code = await asyncio.to_thread(process.wait)
        return Stop(PLATFORM_GRACE_S, code, killed=True)


def servers_on(homes: list[Path]) -> int:
    data = {str((home / "weaviate").resolve()) for home in homes}
    return sum(1 for server in running_servers() if server.data_path in data)


async def run_bots(name: str, count: int, template: Path, work: Path, env: dict[str, str], *,
                   when: str) -> Row:
    homes = [fresh_home(template, work / f"{name}-{i}") for i in range(count)]
    logs = [(home / "bot.log").open("wb") for home in homes]
    ports = [free_port() for _ in homes]
    processes = [subprocess.Popen([sys.executable, "-m", "bot"], cwd=home, stdout=log, stderr=subprocess.STDOUT,
                                  env=env | {"VERBATIM_HOME": str(home), "PORT": str(port)})
                 for home, log, port in zip(homes, logs, ports)]

    async def one(home: Path, process: subprocess.Popen[bytes], port: int) -> Stop:
        if when == "ready":
            await ready(f"http://127.0.0.1:{port}", process)
        else:
            await spawned(home, process)
        return await terminate(process)

    try:
        stops = await asyncio.gather(*(one(h, p, port) for h, p, port in zip(homes, processes, ports)))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in logs:
            log.close()
    await asyncio.sleep(2.0)  # a server stopping on its own after its bot was killed would be gone by now
    left = servers_on(homes)
    for home in homes:  # as the outside checks do; a server still running is then an orphan without a home
        shutil.rmtree(home, ignore_errors=True)
    return Row(name, count, list(stops), left)


async def run(side_by_side: int) -> list[Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-shutdown-"))
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("WEAVIATE_", "VERBATIM_", "COHERE_", "SLACK_", "DATABASE_"))}
    base["WEAVIATE_BINARY_DIR"] = os.environ.get("WEAVIATE_BINARY_DIR", str(Path("~/.cache/weaviate-embedded").expanduser()))
    try:
        template = template_home(work, base)
        async with SlackStandIn() as slack:
            env = base | {"SLACK_BOT_TOKEN": slack.bot_token, "SLACK_SIGNING_SECRET": slack.signing_secret,
                          "SLACK_API_URL": slack.api_url}
            return [await run_bots("idle", 1, template, work, env, when="ready"),
                    await run_bots("side by side", side_by_side, template, work, env, when="ready"),
                    await run_bots("starting", side_by_side, template, work, env, when="spawned")]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side-by-side", type=int, default=8, help="bots started at once (default 8)")
    args = parser.parse_args()
    rows = asyncio.run(run(args.side_by_side))

    def cells(row: Row) -> list[object]:
        seconds = [stop.seconds for stop in row.stops]
        codes = ", ".join(f"{code} ×{n}" for code, n in sorted(
            {c: sum(1 for s in row.stops if s.code == c) for c in {s.code for s in row.stops}}.items()))
        return [row.scenario, row.bots, f"{statistics.median(seconds):.1f} s", f"{max(seconds):.1f} s", codes,
                sum(1 for s in row.stops if s.killed), row.left]

    markdown = "\n".join([
        "## Shutdown (`python -m bench.shutdown`)",
        "",
        f"{machine_line()}. The real `python -m bot` against the Slack stand-in, each in a home of its own with its",
        "own Weaviate Embedded (the demo corpus), stopped as a platform stops it: SIGTERM, SIGKILL after 30 s.",
        "Shutdown: from SIGTERM to the exit. Left: Weaviate servers still running on those homes afterwards.",
        "",
        table(["scenario", "bots", "shutdown (median)", "shutdown (max)", "exit codes", "SIGKILLed", "left"],
              [cells(row) for row in rows]),
        "",
        "idle: one bot, ready. side by side: the bots started at once, each stopped as soon as it was ready.",
        "starting: each stopped as soon as its home's server was spawned, before it was ready (exit 143: a",
        "stopped start). A stop drains the answers in flight (`DRAIN_TIMEOUT_S` in `bot/serve.py`), then stops",
        "the home's server when the bot was its last user (SIGKILL after `_STOP_TIMEOUT_S`,",
        "`retrieval/embedded_home.py`), so the whole stays within the platform's 30 s. A stopped start's time is",
        "mostly the starting Weaviate's own stop while nine others start beside it (the signal is taken at once).",
        "",
        "Before #23 (same machine, 2026-12-01, 10 side by side): a SIGTERM during start-up waited for the whole",
        "start and then stopped (median 10.9 s, max 14.3 s, exit 0), so a start slower than a platform's",
        "30 s would be SIGKILLed with its Weaviate Embedded left running; and a SIGTERMed CLI command (`ingest`,",
        "`eval`, `ask`) died at once, leaving its home's server running (`bench/shutdown.py` runs `serve` only).",
    ])
    write_section("shutdown", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
