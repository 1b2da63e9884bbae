"""Faults, injected into the real bot: how long the asker waits, how long until it heals, and that nothing is lost.

    python -m bench.faults [--only NAME,NAME]

Each fault runs the real ``python -m bot`` (HTTP mode) against the local Slack stand-in, over the demo corpus,
the way an operator would meet it:

    bot-killed        kill -9 right after :eyes: (the stand-in holds that reaction's response), restart on the
                      same home (SQLite), Slack's retries 1-3 of the event
    bot-killed-no-retry   the same, with no retry (Slack got its ack before the kill): the start-up sweep
    replica-killed    two replicas sharing PostgreSQL; the one holding the question is killed after :eyes:,
                      Slack's retries go to the other
    replica-killed-no-retry   the same, no retry: the other replica's sweep
    embedded-store    the bot's own Weaviate Embedded is killed (kill -9); questions keep coming, one every 2 s
    remote-store      the Weaviate at WEAVIATE_URL is killed, and started again 10 s later
    database-down     the PostgreSQL of the exchange log is stopped for 10 s while a question is answered
    cohere-slow       every Cohere call (rerank, chat) answers after 5 s, past COHERE_TIMEOUT_S=2

Measured per fault: the asker's reply (from the question to the first reply in its thread: the answer, or the
error reply), recovery (from the fault's end — the kill for a crash, the return for an outage — to the first
normal answer, or until the exchange is in the database for the database fault), exchanges lost (a question
with no reply or no exchange in the log) and questions answered twice (more than one reply in a thread).
Writes the table to docs/benchmarks.md (section "faults"). A benchmark, never a timed assertion in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import ROOT, machine_line, table, write_section
from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_server import WeaviateHandle, connect
from storage.db import create_engine, create_session_factory
from storage.exchanges import list_exchanges
from storage.migrate import upgrade
from storage.records import ExchangeSummary
from tests.conftest import free_port
from tests.standins import SlackStandIn
from tests.standins.cohere import CohereStandIn, delay

CHANNEL = "C0SUPPORT"
QUESTION = "How long is an account locked after 5 failed sign-in attempts?"
ANSWER = "15 minutes"  # in the demo corpus's answer to QUESTION
POSTGRES = ROOT / "scripts" / "postgres.sh"
JsonDict = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Row:
    fault: str
    reply_s: float | None  # the asker's wait for the first reply during the fault
    recovery_s: float | None
    lost: int
    twice: int
    note: str


# -- the pieces: a bot process, a store of our own, PostgreSQL --------------------------------------------------


@dataclass
class Bot:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    @property
    def events_url(self) -> str:
        return f"{self.url}/slack/events"


@contextmanager
def bot_process(env: dict[str, str], log: Path) -> Iterator[Bot]:
    port = free_port()
    with log.open("ab") as output:
        process = subprocess.Popen([sys.executable, "-m", "bot"], env=env | {"PORT": str(port)}, cwd=log.parent,
                                   stdout=output, stderr=subprocess.STDOUT)
        try:
            yield Bot(process, f"http://127.0.0.1:{port}", log)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


async def until_ready(bot: Bot, timeout: float = 240.0) -> float:
    """Wait for /readyz 200; returns when (time.monotonic())."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if bot.process.poll() is not None:
                raise RuntimeError(f"the bot exited with {bot.process.returncode}; see {bot.log}")
            try:
                async with session.get(f"{bot.url}/readyz") as response:
                    if response.status == 200:
                        return time.monotonic()
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"the bot was not ready within {timeout:.0f} s; see {bot.log}")


def postgres(command: str, folder: Path) -> str:
    result = subprocess.run([str(POSTGRES), command], env=os.environ | {"VERBATIM_PG_DIR": str(folder)},
                            capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"scripts/postgres.sh {command} failed: {result.stderr.strip().splitlines()[-1:]}")
    return result.stdout.strip().split("=", 1)[-1]


@asynccontextmanager
async def own_postgres(work: Path) -> AsyncIterator[tuple[str, Path]]:
    """A PostgreSQL of this bench's own (it is stopped during a fault), migrated; yields (url, its folder)."""
    folder = Path(tempfile.mkdtemp(prefix="verbatim-bench-pg-"))
    folder.chmod(0o755)
    cluster = folder / "cluster"
    try:
        server = postgres("start", cluster)
        url = server.rsplit("/", 1)[0] + "/verbatim_test"
        await upgrade(url)
        yield url, cluster
    finally:
        postgres("stop", cluster)


async def exchanges_in(url: str) -> list[ExchangeSummary]:
    engine = create_engine(url)
    try:
        async with create_session_factory(engine)() as session:
            return await list_exchanges(session, limit=1000)
    finally:
        await engine.dispose()


def ingest(env: dict[str, str], work: Path) -> None:
    """The demo corpus into the collection ``env`` names (a store of its own or a home's embedded one)."""
    done = subprocess.run([sys.executable, "-m", "bot", "ingest", str(ROOT / "demo" / "corpus")], env=env,
                          cwd=work, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ingesting the demo corpus failed: {done.stderr.strip()[-500:]}")


# -- asking, and reading what came back --------------------------------------------------------------------------


@dataclass
class Asked:
    envelope: JsonDict
    sent: float  # time.monotonic()

    @property
    def ts(self) -> str:
        return str(self.envelope["event"]["ts"])


async def ask(slack: SlackStandIn, bot: Bot, text: str = QUESTION) -> Asked:
    envelope = slack.envelope(slack.app_mention(CHANNEL, text))
    sent = time.monotonic()
    status, _ = await slack.deliver_event(bot.events_url, envelope)
    if status != 200:
        raise RuntimeError(f"the bot answered {status} to an event")
    return Asked(envelope, sent)


def replies(slack: SlackStandIn, asked: Asked) -> list[JsonDict]:
    return [m for m in slack.thread(CHANNEL, asked.ts) if m.get("bot_id") == slack.bot_id]


async def first_reply(slack: SlackStandIn, asked: Asked, timeout: float = 180.0) -> tuple[JsonDict, float]:
    """The first reply in the question's thread and when it was seen."""
    reply = await slack.wait_for(lambda: replies(slack, asked)[0], timeout=timeout, what="a reply")
    return reply, time.monotonic()


def is_answer(reply: JsonDict) -> bool:
    return ANSWER in str(reply.get("blocks"))


async def until_answered(slack: SlackStandIn, bot: Bot, asked: list[Asked], every_s: float = 2.0,
                         timeout: float = 180.0) -> float:
    """Ask again every ``every_s`` until a question gets a real answer; returns when that answer came."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        question = await ask(slack, bot)
        asked.append(question)
        reply, at = await first_reply(slack, question)
        if is_answer(reply):
            return at
        await asyncio.sleep(every_s)
    raise RuntimeError(f"no normal answer within {timeout:.0f} s")


async def tally(slack: SlackStandIn, asked: list[Asked], url: str) -> tuple[int, int]:
    """(lost, answered twice) over every question asked: no reply or no finished exchange; more than one reply."""
    await asyncio.sleep(1.0)
    exchanges = {e.reply_ts: e for e in await exchanges_in(url) if e.outcome != "pending"}
    lost = sum(1 for a in asked if not replies(slack, a) or replies(slack, a)[0]["ts"] not in exchanges)
    twice = sum(1 for a in asked if len(replies(slack, a)) > 1)
    return lost, twice


# -- the faults ---------------------------------------------------------------------------------------------------


@dataclass
class Setting:
    slack: SlackStandIn
    env: dict[str, str]  # a bot over the bench store (WEAVIATE_URL), SQLite in its own home
    store: WeaviateHandle
    store_config: WeaviateConfig
    work: Path

    def home(self, name: str) -> dict[str, str]:
        home = self.work / name
        return self.env | {"VERBATIM_HOME": str(home),
                           "DATABASE_URL": f"sqlite+aiosqlite:///{home / 'verbatim.sqlite3'}"}


async def killed_after_eyes(setting: Setting, *, replica: bool, retries: bool = True) -> Row:
    slack = setting.slack
    async with AsyncExitStack() as stack:
        if replica:
            url, _ = await stack.enter_async_context(own_postgres(setting.work))
            env_a = setting.home("replica-a") | {"DATABASE_URL": url}
            env_b = setting.home("replica-b") | {"DATABASE_URL": url}
        else:
            env_a = env_b = setting.home("restarted")
            url = env_a["DATABASE_URL"]
        with ExitStack() as processes:
            first = processes.enter_context(bot_process(env_a, setting.work / "first.log"))
            second = processes.enter_context(bot_process(env_b, setting.work / "second.log")) if replica else None
            await until_ready(first)
            if second is not None:
                await until_ready(second)
            held = slack.stall("reactions.add")
            question = await ask(slack, first)
            await slack.wait_for(lambda: slack.message(CHANNEL, question.ts).get("reactions"), timeout=60,
                                 what=":eyes:")
            first.process.send_signal(signal.SIGKILL)
            first.process.wait()
            killed = time.monotonic()
            held.set()
            if second is None:
                second = processes.enter_context(bot_process(env_b, setting.work / "second.log"))
                await until_ready(second)
            for retry in (1, 2, 3) if retries else ():
                await slack.deliver_event(second.events_url, question.envelope, retry_num=retry)
            reply, at = await first_reply(slack, question)
            await asyncio.sleep(3.0)  # a second reply, if one were coming, would come now
            lost, twice = await tally(slack, [question], url)
    where = "the other replica (PostgreSQL)" if replica else "restarted on the same home"
    where += ", Slack's retries 1-3 delivered to it" if retries else ", no retry (Slack had its ack): the sweep"
    return Row("bot killed (kill -9) right after :eyes:" if not replica else "replica killed right after :eyes:",
               at - question.sent, at - killed, lost, twice, where + ("" if is_answer(reply) else "; NOT an answer"))


async def embedded_store_killed(setting: Setting) -> Row:
    slack = setting.slack
    env = setting.home("embedded") | {"VERBATIM_COLLECTION": "FaultsDemo"}
    for name in ("WEAVIATE_URL", "WEAVIATE_GRPC_URL", "WEAVIATE_API_KEY"):
        env.pop(name, None)
    env["WEAVIATE_EMBEDDED_PORT"], env["WEAVIATE_EMBEDDED_GRPC_PORT"] = str(free_port()), str(free_port())
    await asyncio.to_thread(ingest, env, setting.work)
    asked: list[Asked] = []
    with bot_process(env, setting.work / "embedded.log") as bot:
        await until_ready(bot)
        asked.append(await ask(slack, bot))
        await first_reply(slack, asked[-1])
        os.kill(server_pid(Path(env["VERBATIM_HOME"])), signal.SIGKILL)
        killed = time.monotonic()
        asked.append(await ask(slack, bot))
        reply, at = await first_reply(slack, asked[-1])
        answered_at = await until_answered(slack, bot, asked)
        lost, twice = await tally(slack, asked, env["DATABASE_URL"])
    note = f"{len(asked) - 1} questions during the outage; first reply " + ("an answer" if is_answer(reply) else
                                                                            "the error reply")
    return Row("embedded Weaviate killed (kill -9)", at - asked[1].sent, answered_at - killed, lost, twice, note)


def server_pid(home: Path) -> int:
    """The pid of the home's embedded Weaviate, from the record the home keeps of it."""
    return int(json.loads((home / "weaviate.server.json").read_text(encoding="utf-8"))["pid"])


async def remote_store_down(setting: Setting) -> Row:
    slack = setting.slack
    env = setting.home("remote")
    asked: list[Asked] = []
    with bot_process(env, setting.work / "remote.log") as bot:
        await until_ready(bot)
        asked.append(await ask(slack, bot))
        await first_reply(slack, asked[-1])
        os.kill(server_pid(setting.store_config.home), signal.SIGKILL)
        asked.append(await ask(slack, bot))
        reply, at = await first_reply(slack, asked[-1])
        await asyncio.sleep(max(0.0, 10.0 - (time.monotonic() - asked[1].sent)))
        await setting.store.heal()  # the server at WEAVIATE_URL is started again: same home, data and ports
        back = time.monotonic()
        answered_at = await until_answered(slack, bot, asked)
        lost, twice = await tally(slack, asked, env["DATABASE_URL"])
    note = "down 10 s; first reply " + ("an answer" if is_answer(reply) else "the error reply")
    return Row("Weaviate at WEAVIATE_URL killed, back 10 s later", at - asked[1].sent, answered_at - back, lost,
               twice, note)


async def database_down(setting: Setting) -> Row:
    slack = setting.slack
    async with own_postgres(setting.work) as (url, cluster):
        env = setting.home("database") | {"DATABASE_URL": url}
        with bot_process(env, setting.work / "database.log") as bot:
            await until_ready(bot)
            await asyncio.to_thread(postgres, "pause", cluster)
            question = await ask(slack, bot)
            reply, at = await first_reply(slack, question)
            await asyncio.sleep(max(0.0, 10.0 - (time.monotonic() - question.sent)))
            await asyncio.to_thread(postgres, "start", cluster)
            back = time.monotonic()
            in_db = await until(lambda: _has_reply(url, reply["ts"]), timeout=180)
            lost, twice = await tally(slack, [question], url)
    note = "answered meanwhile, kept in the journal; recovery = until the exchange is in PostgreSQL (the journal is replayed every 10 s)"
    return Row("PostgreSQL stopped for 10 s", at - question.sent, in_db - back, lost, twice,
               note if is_answer(reply) else "NOT answered")


async def _has_reply(url: str, reply_ts: str) -> bool:
    try:
        return any(e.reply_ts == reply_ts for e in await exchanges_in(url))
    except OSError:
        return False


async def until(check: Callable[[], Any], timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return time.monotonic()
        await asyncio.sleep(0.5)
    raise RuntimeError(f"not done within {timeout:.0f} s")


async def cohere_slow(setting: Setting) -> Row:
    slack = setting.slack
    async with CohereStandIn() as cohere_api:
        cohere_api.script_rerank(default=delay(5.0))
        cohere_api.script_chat(default=delay(5.0))
        env = setting.home("cohere") | {"COHERE_API_KEY": cohere_api.api_key, "COHERE_BASE_URL": cohere_api.base_url,
                                        "COHERE_TIMEOUT_S": "2", "VERBATIM_EMBEDDER": "e5"}
        with bot_process(env, setting.work / "cohere.log") as bot:
            await until_ready(bot)
            question = await ask(slack, bot)
            reply, at = await first_reply(slack, question)
            lost, twice = await tally(slack, [question], env["DATABASE_URL"])
            calls = len(cohere_api.rerank_requests) + len(cohere_api.chat_requests)
    note = (f"answered by the local reranker and composer after the timeouts of {calls} Cohere calls"
            if is_answer(reply) else "NOT answered")
    return Row("Cohere answers after 5 s (COHERE_TIMEOUT_S=2)", at - question.sent, None, lost, twice, note)


FAULTS: dict[str, Callable[[Setting], Any]] = {
    "bot-killed": lambda s: killed_after_eyes(s, replica=False),
    "bot-killed-no-retry": lambda s: killed_after_eyes(s, replica=False, retries=False),
    "replica-killed": lambda s: killed_after_eyes(s, replica=True),
    "replica-killed-no-retry": lambda s: killed_after_eyes(s, replica=True, retries=False),
    "embedded-store": embedded_store_killed,
    "remote-store": remote_store_down,
    "database-down": database_down,
    "cohere-slow": cohere_slow,
}


async def run(only: list[str]) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="verbatim-faults-") as folder:
        work = Path(folder)
        config = WeaviateConfig(url=None, grpc_url=None, api_key=None, data_dir=work / "store-home" / "weaviate",
                                binary_dir=Path(os.environ.get("WEAVIATE_BINARY_DIR",
                                                               "~/.cache/weaviate-embedded")).expanduser(),
                                port=free_port(), grpc_port=free_port(), startup_timeout_s=120)
        store = await connect(config)
        key = config.key_path.read_text(encoding="utf-8").strip()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("WEAVIATE_", "VERBATIM_", "COHERE_", "SLACK_", "DATABASE_"))}
        env |= {"WEAVIATE_URL": f"http://127.0.0.1:{config.port}", "WEAVIATE_GRPC_URL": f"http://127.0.0.1:{config.grpc_port}",
                "WEAVIATE_API_KEY": key, "VERBATIM_COLLECTION": "FaultsDemo", "LOG_LEVEL": "INFO",
                "WEAVIATE_BINARY_DIR": str(config.binary_dir)}
        await asyncio.to_thread(ingest, env | {"VERBATIM_HOME": str(work / "ingest-home")}, work)
        rows: list[Row] = []
        async with SlackStandIn() as slack:
            env |= {"SLACK_BOT_TOKEN": slack.bot_token, "SLACK_SIGNING_SECRET": slack.signing_secret,
                    "SLACK_API_URL": slack.api_url}
            setting = Setting(slack, env, store, config, work)
            try:
                for name in only:
                    print(f"fault: {name} …", flush=True)
                    rows.append(await FAULTS[name](setting))
                    print(f"  {rows[-1]}", flush=True)
            finally:
                await setting.store.close()
        return rows


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(FAULTS), help="comma-separated faults: " + ", ".join(FAULTS))
    args = parser.parse_args()
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in only if name not in FAULTS]
    if unknown:
        parser.error(f"unknown fault(s): {', '.join(unknown)}; choose from {', '.join(FAULTS)}")
    rows = asyncio.run(run(only))
    markdown = "\n".join([
        "## Faults (`python -m bench.faults`)",
        "",
        f"{machine_line()}. The real `python -m bot` against the Slack stand-in, over the demo corpus; each fault",
        "injected as an operator would meet it. Reply: from the question to the first reply in its thread.",
        "Recovery: from the kill (crashes) or the return (outages) to the next normal answer.",
        "",
        table(["fault", "asker's reply", "recovery", "exchanges lost", "answered twice", "how"],
              [(r.fault, seconds(r.reply_s), seconds(r.recovery_s), r.lost, r.twice, r.note) for r in rows]),
        "",
        "A killed bot's rows include its restart (the bench starts it again at once). A claim is taken over at once",
        "when its owner was a process of the same host; a replica on another host waits out the lease",
        "(`CLAIM_LEASE_S`, 30 s) and the next sweep (every 15 s). A store outage is bounded by",
        "`WEAVIATE_QUERY_TIMEOUT_S` (4 s) per search; healing is checked every 5 s.",
    ])
    write_section("faults", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
