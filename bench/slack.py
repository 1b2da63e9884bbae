"""Slack burst benchmark: 20 and 100 mentions arriving at once, through the real server, Bolt and slack_sdk.

    python -m bench.slack [--sizes 20,100]

The bot runs as `verbatim serve` does in HTTP mode (``bot.serve.running_bot``: aiohttp, Bolt's adapter, the
answer service over the demo corpus in a bench Weaviate, a SQLite exchange log), against the local Slack
stand-in, which signs and delivers the events. For each size, two layouts: the mentions spread over 10
channels (answered side by side), and all in one channel (answered one at a time, in order).

Measured: every mention answered exactly once and in its own thread (and, in one channel, in the order
asked); event-to-reply time (the question's ``ts`` is stamped when the event is sent, the reply's ``ts`` when
chat.postMessage reaches the stand-in) p50/p95/max; the event loop's worst stall, seen by a ticker task that
wakes every 10 ms (the stand-in shares the loop, so this is an upper bound for the bot's own share).
Writes the table to docs/benchmarks.md (section "slack"). A benchmark, never a timed assertion in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from pydantic import SecretStr

from bench.common import bench_weaviate_config, machine_line, table, write_section
from bench.metrics import percentile
from bot.runtime import Retrieval, build_answer_deps
from bot.serve import running_bot
from bot.settings import Settings
from bot.slack.deps import SlackDeps, SlackOptions, build_web_client
from retrieval.chunking import ChunkingConfig
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import IngestLimits, ingest, load_paths
from retrieval.store import ChunkStore, IndexMismatch
from retrieval.weaviate_server import connect
from storage.db import create_engine, create_session_factory
from storage.journal import Journal
from storage.migrate import upgrade
from tests.standins import SlackStandIn

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "How long is the password reset link valid?",
    "How long do I have to request a refund for an annual plan?",
    "How long is an account locked after failed sign-in attempts?",
    "When is chat support available?",
    "Are monthly plans refunded?",
    "How long does a refund take to reach the card?",
    "Can support shorten an account lockout?",
    "送料はいくらですか？",
    "Когда обращение передаётся на вторую линию?",
    "What happens if a user lost their two-factor device?",
]
TICK_S = 0.010


@dataclass
class Run:
    mentions: int
    channels: int
    answered_once: int
    in_thread: int
    in_order: bool | None
    latencies_ms: list[float]
    max_lag_ms: float
    wall_s: float


class LoopTicker:
    """Wakes every 10 ms and records how late it woke: the longest time the event loop was blocked."""

    def __init__(self) -> None:
        self.max_lag_s = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            expected = loop.time() + TICK_S
            await asyncio.sleep(TICK_S)
            self.max_lag_s = max(self.max_lag_s, loop.time() - expected)

    def start(self) -> None:
        self.max_lag_s = 0.0
        self._task = asyncio.create_task(self._tick())

    async def stop(self) -> float:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        return self.max_lag_s * 1000


@asynccontextmanager
async def demo_answer_deps() -> AsyncIterator[tuple[Settings, object]]:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    embedder = E5Embedder()
    handle = await connect(bench_weaviate_config(slot=5))
    try:
        store = ChunkStore(handle.client, "BenchSlackDemo")
        try:
            await store.open(embedder.name, embedder.dim, create=True)
        except IndexMismatch:  # the bench's own index, from another version of Verbatim: rebuild it
            await store.drop()
            await store.open(embedder.name, embedder.dim, create=True)
        report = await ingest(load_paths([ROOT / "demo" / "corpus"], IngestLimits()), store=store,
                              embedder=embedder, chunking=ChunkingConfig())
        if report.failures:
            raise SystemExit(f"bench ingest failed: {report.failures[0]}")
        yield settings, build_answer_deps(settings, Retrieval(settings, handle, store, embedder, None))
    finally:
        await embedder.aclose()
        await handle.close()


async def burst(slack: SlackStandIn, deps: SlackDeps, events_url: str, n: int, channels: int) -> Run:
    run_id = f"{n:03d}{channels:02d}"
    names = [f"C0B{run_id}X{c:02d}" for c in range(channels)]  # channels of this run only
    ticker = LoopTicker()
    ticker.start()
    started = time.perf_counter()
    mentions = [slack.app_mention(names[i % channels], QUESTIONS[i % len(QUESTIONS)]) for i in range(n)]
    deliveries = await asyncio.gather(*(slack.deliver_event(events_url, m, timeout=60) for m in mentions))
    assert all(d.status == 200 for d in deliveries), [d for d in deliveries if d.status != 200][:3]

    # Wait on a cheap signal (successful chat.postMessage calls), so the bench's own polling does not stall the loop.
    target = _posted(slack) + n
    while _posted(slack) < target or len(deps.in_flight):
        if time.perf_counter() - started > 600:
            raise SystemExit(f"only {_posted(slack) - target + n} of {n} replies after 600 s")
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # let a duplicate, if any, show itself
    wall = time.perf_counter() - started
    lag = await ticker.stop()

    replies: dict[str, list[dict]] = {}
    for name in names:
        for message in slack.bot_messages(name):
            replies.setdefault(message.get("thread_ts", ""), []).append(message)
    answered_once = sum(1 for m in mentions if len(replies.get(m["ts"], [])) == 1)
    in_thread = sum(1 for m in mentions if replies.get(m["ts"]))
    latencies = [(float(replies[m["ts"]][0]["ts"]) - float(m["ts"])) * 1000 for m in mentions if replies.get(m["ts"])]
    in_order = None
    if channels == 1:
        in_order = [r["thread_ts"] for r in slack.bot_messages(names[0])] == [m["ts"] for m in mentions]
    return Run(n, channels, answered_once, in_thread, in_order, latencies, lag, wall)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20,100")
    parser.add_argument("--concurrency", type=int, default=SlackOptions().max_concurrent_answers,
                        help="answers running at once across channels (the server's default)")
    parser.add_argument("--no-write", action="store_true", help="print the table without writing docs/benchmarks.md")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs: list[Run] = []
    home = Path(tempfile.mkdtemp(prefix="verbatim-bench-slack-"))
    try:
        db_url = f"sqlite+aiosqlite:///{home / 'verbatim.sqlite3'}"
        await upgrade(db_url)
        engine = create_engine(db_url)
        async with demo_answer_deps() as (base_settings, answer), SlackStandIn() as slack, \
                aiohttp.ClientSession() as session:
            settings = base_settings.model_copy(update={
                "slack_bot_token": SecretStr(slack.bot_token), "slack_signing_secret": SecretStr(slack.signing_secret),
                "slack_api_url": slack.api_url})
            deps = SlackDeps(answer=answer, sessions=create_session_factory(engine),  # type: ignore[arg-type]
                             journal=Journal(home / "journal.jsonl"), client=build_web_client(settings, session),
                             options=dataclasses.replace(SlackOptions.from_settings(settings),
                                                         max_concurrent_answers=args.concurrency))
            async with running_bot(settings, deps, host="127.0.0.1", port=0) as bot:
                events_url = f"{bot.url}/slack/events"
                # Warm-up: models loaded, every language's first use done, connections open.
                await burst(slack, deps, events_url, len(QUESTIONS), len(QUESTIONS))
                for n in sizes:
                    for channels in (10, 1):
                        run = await burst(slack, deps, events_url, n, channels)
                        runs.append(run)
                        print(f"{n} mentions / {channels} channels: once {run.answered_once}, "
                              f"p50 {percentile(run.latencies_ms, 50):.0f} ms, "
                              f"p95 {percentile(run.latencies_ms, 95):.0f} ms, max lag {run.max_lag_ms:.0f} ms",
                              flush=True)
        await engine.dispose()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    text = render(runs)
    print(text)
    if not args.no_write:
        write_section("slack", text)


def _posted(slack: SlackStandIn) -> int:
    return sum(1 for r in slack.requests if r.method == "chat.postMessage" and r.error is None)


def render(runs: list[Run]) -> str:
    rows = [[r.mentions, r.channels, f"{r.answered_once}/{r.mentions}", f"{r.in_thread}/{r.mentions}",
             "-" if r.in_order is None else ("yes" if r.in_order else "NO"),
             round(percentile(r.latencies_ms, 50)), round(percentile(r.latencies_ms, 95)),
             round(max(r.latencies_ms)), round(r.max_lag_ms), round(r.wall_s, 1)] for r in runs]
    return "\n".join([
        "## Slack: a burst of mentions (`python -m bench.slack`)",
        "",
        f"Machine: {machine_line()}. The real server (aiohttp + Bolt + slack_sdk, HTTP mode) answering from the demo "
        "corpus (e5, Weaviate Embedded hybrid search, local reranker, extractive composer), SQLite exchange log; "
        "the mentions are signed and POSTed all at once by the local Slack stand-in. Event to reply: from the "
        "question's `ts` (stamped when the event is sent) to the reply's (stamped when chat.postMessage arrives). "
        "Loop stall: the longest a 10 ms ticker on the same event loop woke late (stand-in included).",
        "",
        table(["mentions", "channels", "answered once", "in its thread", "in order", "event→reply p50 ms",
               "p95 ms", "max ms", "max loop stall ms", "wall s"], rows),
        "",
        "In one channel the answers are serialised on purpose (replies in the order asked), so their wait grows "
        "with the queue; across channels they run side by side, up to 8 at a time, bounded by the embedder's "
        "single worker thread and Weaviate.",
    ])


if __name__ == "__main__":
    asyncio.run(main())
