"""Stopping a command: Ctrl-C (SIGINT) and SIGTERM stop `verbatim ingest`, `eval` and `serve` (#23).

A stopped command says what it did and what it did not, keeps what it wrote (an ingest's documents stay in the
index, an eval's answer lines stay in its file), stops what it started (the home's Weaviate Embedded, when it
was its last user) and exits 130 (SIGINT) or 143 (SIGTERM) — also when the shell started it with SIGINT
ignored, as it does a background job. The bounds below are liveness checks (it did stop), not speed claims.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from retrieval.embedded_home import running_servers
from retrieval.store import ChunkStore, StoreError
from retrieval.weaviate_server import WeaviateHandle
from tests.conftest import free_port

STOPPED_WITHIN_S = 30  # liveness: a stop that hangs fails here instead of hanging the suite


def jsonl_corpus(path: Path, documents: int) -> Path:
    """``documents`` small documents, each a few distinct sentences (each one is embedded)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(documents):
            text = " ".join(f"Paragraph {i} sentence {j} says that policy {i * 7 + j} applies to team {j}."
                            for j in range(6))
            out.write(json.dumps({"document_id": f"doc-{i}", "title": f"Policy {i}", "text": text}) + "\n")
    return path


def start(env: dict[str, str], cwd: Path, *args: str, ignore_sigint: bool = False) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "bot", *args]
    if ignore_sigint:  # what a non-interactive shell does to a background job (`verbatim eval … &`); done by a
        # shell, not a preexec_fn: that runs Python in a fork of this many-threaded process (and its at-fork hooks)
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    return subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def wait_until(check: Callable[[], object], process: subprocess.Popen[str], what: str,
                     timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not await _true(check):
        if process.poll() is not None:
            _, err = process.communicate()
            raise AssertionError(f"the command exited ({process.returncode}) before {what}: {err[-2000:]}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"no {what} within {timeout:.0f} s")
        await asyncio.sleep(0.2)


async def _true(check: Callable[[], object]) -> bool:
    result = check()
    if asyncio.iscoroutine(result):
        result = await result
    return bool(result)


def stop(process: subprocess.Popen[str], signum: signal.Signals) -> tuple[int, str, str]:
    process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=STOPPED_WITHIN_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"still running {STOPPED_WITHIN_S} s after {signum.name}: {err[-2000:]}") from None
    return process.returncode, out, err


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def servers_of(home: Path) -> list[int]:
    """The pids of the Weaviate servers running on this home's data folder."""
    data = str((home / "weaviate").resolve())
    return [s.process.pid for s in running_servers() if s.data_path == data]


def embedded(env: dict[str, str]) -> dict[str, str]:
    """The environment without WEAVIATE_URL: the command starts its home's own Weaviate Embedded."""
    return {k: v for k, v in env.items() if k not in ("WEAVIATE_URL", "WEAVIATE_GRPC_URL", "WEAVIATE_API_KEY")} | {
        "WEAVIATE_EMBEDDED_PORT": str(free_port()), "WEAVIATE_EMBEDDED_GRPC_PORT": str(free_port())}


async def test_ctrl_c_stops_an_eval_started_in_the_background_and_keeps_the_answers_it_wrote(
        cli_env: dict[str, str], demo_store: ChunkStore, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    asked = ["How do refunds work?", "What is the processing fee?", "Who approves travel?", "How long is leave?"]
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": asked[i % len(asked)]}) + "\n"
                                 for i in range(20_000)), encoding="utf-8")
    out = tmp_path / "results.jsonl"
    env = cli_env | {"VERBATIM_COLLECTION": demo_store.name}
    process = start(env, tmp_path, "eval", str(questions), "--out", str(out), ignore_sigint=True)
    await wait_until(lambda: out.exists() and len(out.read_text(encoding="utf-8").splitlines()) >= 3, process,
                     "answers in the out file")

    code, stdout, stderr = stop(process, signal.SIGINT)

    assert code == 130, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == "error: stopped by SIGINT"
    written = lines_of(out)  # every line whole: a stopped eval never leaves half a line
    assert 3 <= len(written) < 20_000
    assert [line["id"] for line in written] == [f"q{i}" for i in range(len(written))]
    assert (f"stopped: {len(written)} of 20000 questions answered, their lines in {out}; "
            f"{20_000 - len(written)} not answered") in stderr
    assert stdout == ""  # no summary: it was not the whole file


async def test_ctrl_c_stops_an_ingest_while_it_embeds_and_what_it_says_it_wrote_is_in_the_index(
        cli_env: dict[str, str], weaviate: WeaviateHandle, tmp_path: Path) -> None:
    corpus = jsonl_corpus(tmp_path / "policies.jsonl", 3000)
    store = ChunkStore(weaviate.client, cli_env["VERBATIM_COLLECTION"])

    async def some_written() -> bool:
        try:
            return len(await store.documents()) > 0
        except StoreError:  # the collection is not made yet
            return False

    process = start(cli_env, tmp_path, "ingest", str(corpus), "--workers", "1")
    await wait_until(some_written, process, "documents in the index")

    code, stdout, stderr = stop(process, signal.SIGINT)

    assert code == 130, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == "error: stopped by SIGINT"
    said = next(line for line in stderr.splitlines() if line.startswith("stopped: "))
    ingested = int(said.split("ingested ", 1)[1].split(",", 1)[0])
    assert f"{3000 - ingested} of 3000 documents were not ingested" in said
    assert 0 < ingested < 3000
    assert len(await store.documents()) == ingested  # kept: exactly what it reported
    assert stdout == ""


async def test_sigterm_stops_an_ingest_and_the_weaviate_embedded_it_started(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    env = embedded(cli_env)
    home = Path(env["VERBATIM_HOME"])
    corpus = jsonl_corpus(tmp_path / "policies.jsonl", 3000)
    process = start(env, tmp_path, "ingest", str(corpus), "--json", "--workers", "1")
    await wait_until(lambda: servers_of(home) and (home / "weaviate.users").is_dir()
                     and any((home / "weaviate.users").iterdir()), process, "the home's server in use")

    code, stdout, stderr = stop(process, signal.SIGTERM)

    assert code == 143, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == "error: stopped by SIGTERM"
    assert "stopped: " in stderr and "documents were not ingested" in stderr
    assert servers_of(home) == []  # its last user stopped it: nothing left running on the home
    assert not (home / "weaviate.server.json").exists()


async def test_sigterm_while_serve_starts_stops_the_start_and_its_weaviate_embedded(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    from tests.standins import SlackStandIn

    async with SlackStandIn() as slack:
        env = embedded(cli_env) | {"SLACK_BOT_TOKEN": slack.bot_token, "SLACK_SIGNING_SECRET": slack.signing_secret,
                                   "SLACK_API_URL": slack.api_url, "PORT": str(free_port())}
        home = Path(env["VERBATIM_HOME"])
        process = start(env, tmp_path, "serve")
        # The moment a platform's SIGTERM is most likely to meet: the home's server spawned, not ready yet.
        await wait_until(lambda: (home / "weaviate.server.json").exists(), process, "the home's server spawned")

        code, _, stderr = await asyncio.to_thread(stop, process, signal.SIGTERM)

    assert code == 143, stderr[-2000:]
    assert "Verbatim is serving" not in stderr  # stopped while starting, not after a whole start-up
    assert stderr.strip().splitlines()[-1] == "error: stopped by SIGTERM while starting: what was started is stopped"
    assert servers_of(home) == []
    users = home / "weaviate.users"
    assert not users.exists() or os.listdir(users) == []
