"""`verbatim review` as a lead runs it (through `python -m bot.review`, the same click group), in a subprocess."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from bot.review.formatting import SINCE_FORMS
from storage.flags import flags_for
from storage.handoffs import claim_handoff, handoff_posted
from storage.journal import Journal, ReplayResult, write_or_journal
from storage.migrate import head_revision, stamp
from tests.conftest import free_port
from tests.review.seed import Seeded, seed_log
from tests.storage.builders import at, exchange
from tests.storage.database import Database

REVIEW = [sys.executable, "-m", "bot.review"]


async def run(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run, [*REVIEW, *args], env=env, capture_output=True, text=True, timeout=180, cwd=cwd
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ")
    return result.stderr.strip()


@pytest.fixture
async def seeded(sqlite_log: Database) -> Seeded:
    return await seed_log(sqlite_log.sessions)


async def test_list_shows_the_review_queue_for_people_and_as_json_lines(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path
) -> None:
    table = await run(review_env, "list", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    for exchange_id in (seeded.flagged, seeded.no_support, seeded.error, seeded.dismissed):
        assert exchange_id in table.stdout
    assert seeded.clean not in table.stdout and "1 open / 1" in table.stdout and "TimeoutError" in table.stdout

    lines = await run(review_env, "list", "--json", cwd=tmp_path)
    rows = [json.loads(line) for line in lines.stdout.splitlines()]
    # The pending question was asked months ago: stuck, so it is in the queue too (newest).
    assert [row["id"] for row in rows] == [seeded.pending, seeded.dismissed, seeded.error, seeded.no_support,
                                           seeded.flagged]
    assert rows[0]["outcome"] == "pending" and rows[-1]["unresolved_lead_flags"] == 1 and rows[-1]["created_at"] == "2026-03-02T09:00:00+00:00"

    narrowed = await run(review_env, "list", "--flagged", "--since", "2026-03-02T09:10Z", "--json", cwd=tmp_path)
    assert [json.loads(line)["id"] for line in narrowed.stdout.splitlines()] == [seeded.dismissed]
    nothing = await run(review_env, "list", "--channel", "C-nobody", cwd=tmp_path)
    assert (nothing.returncode, nothing.stdout) == (0, "nothing to review: no exchange matches\n")


async def test_list_errors_shows_the_exchanges_the_database_refused_from_the_journal(
    review_env: dict[str, str], sqlite_log: Database, tmp_path: Path
) -> None:
    """An answer the log refused is in no table: `list --errors` still shows it, with what the database said."""
    async with sqlite_log.engine.begin() as connection:
        await connection.exec_driver_sql(
            "CREATE TRIGGER refuse_citations BEFORE INSERT ON citations BEGIN SELECT RAISE(ABORT, 'refused'); END")
    refused = exchange(question="Is the refund window 10 days?")
    journal = Journal.in_home(review_env["VERBATIM_HOME"])
    assert await write_or_journal(sqlite_log.sessions, journal, refused, attempts=1) is False

    table = await run(review_env, "list", "--errors", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "1 exchange the database refused" in table.stdout and str(journal.dead_path) in table.stdout
    assert refused.id in table.stdout and "Is the refund window 10 days?" in table.stdout
    assert "IntegrityError: refused" in table.stdout

    [row] = [json.loads(line) for line in (await run(review_env, "list", "--errors", "--json", cwd=tmp_path)).stdout.splitlines()]
    assert (row["id"], row["question"], row["kept_citations"]) == (refused.id, refused.question, 2)
    assert (row["set_aside"]["error"], row["set_aside"]["detail"], row["set_aside"]["attempts"]) == (
        "IntegrityError", "refused", 1)
    flagged = await run(review_env, "list", "--flagged", cwd=tmp_path)
    assert flagged.stdout == "nothing to review: no exchange matches\n"


async def set_aside(db: Database, journal: Journal, questions: list[str]) -> list[str]:
    """Exchanges the log refuses (a trigger stands for the bug), set aside in this order; their ids."""
    async with db.engine.begin() as connection:
        await connection.exec_driver_sql(
            "CREATE TRIGGER refuse_bug BEFORE INSERT ON exchanges BEGIN SELECT RAISE(ABORT, 'a bug'); END")
    records = [exchange(question=q, created_at=at(len(questions) - n)) for n, q in enumerate(questions)]
    for record in records:  # newest first: the order set aside is not the order asked
        assert await write_or_journal(db.sessions, journal, record, attempts=1) is False
    return [record.id for record in records]


async def listed_as_refused(env: dict[str, str], cwd: Path) -> list[str]:
    lines = (await run(env, "list", "--errors", "--json", cwd=cwd)).stdout.splitlines()
    return sorted(json.loads(line)["id"] for line in lines if "set_aside" in json.loads(line))


async def test_requeue_writes_what_the_database_refused_in_order_once_fixed_and_sets_aside_what_it_still_refuses(
    review_env: dict[str, str], sqlite_log: Database, tmp_path: Path
) -> None:
    journal = Journal.in_home(review_env["VERBATIM_HOME"])
    first, still, third = await set_aside(sqlite_log, journal, [
        "Is the refund window 10 days?", "Which plan is still refused?", "Can add-ons be refunded?"])
    assert await listed_as_refused(review_env, tmp_path) == sorted([first, still, third])
    async with sqlite_log.engine.begin() as connection:  # the fix ships, but misses one case
        await connection.exec_driver_sql("DROP TRIGGER refuse_bug")
        await connection.exec_driver_sql(
            "CREATE TRIGGER refuse_still BEFORE INSERT ON exchanges WHEN NEW.question LIKE '%still refused%' "
            "BEGIN SELECT RAISE(ABORT, 'still a bug'); END")
        await connection.exec_driver_sql("CREATE TABLE arrivals (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT)")
        await connection.exec_driver_sql(
            "CREATE TRIGGER note_arrival AFTER INSERT ON exchanges BEGIN INSERT INTO arrivals (id) VALUES (NEW.id); END")

    result = await run(review_env, "requeue", "--all", cwd=tmp_path)
    assert result.returncode == 1
    # The journal logs the refusal with its traceback (never the row's text), then the command's one line.
    assert result.stderr.endswith(f"\nerror: 1 of 3 requeued exchanges not in the log: {still}\n")
    assert "RefusedWrite: IntegrityError: still a bug" in result.stderr
    assert "Which plan is still refused?" not in result.stderr
    assert result.stdout.splitlines() == [
        "requeued 3 exchanges: 2 written to the log",
        f"1 exchange refused again, set aside in {journal.dead_path}: {still}"]
    async with sqlite_log.engine.connect() as connection:
        arrived = [row[0] for row in await connection.exec_driver_sql("SELECT id FROM arrivals ORDER BY n")]
    assert arrived == [first, third]  # in the order they were set aside, each once
    assert await listed_as_refused(review_env, tmp_path) == [still]
    [letter] = journal.dead_letters()
    assert (letter.record.id, letter.detail) == (still, "still a bug")
    assert journal.pending() == 0

    async with sqlite_log.engine.begin() as connection:  # the rest of the fix
        await connection.exec_driver_sql("DROP TRIGGER refuse_still")
    by_id = await run(review_env, "requeue", still.upper(), "--json", cwd=tmp_path)
    assert by_id.returncode == 0, by_id.stderr
    assert json.loads(by_id.stdout) == {"requeued": [still], "written": [still], "refused_again": [], "waiting": []}
    assert await listed_as_refused(review_env, tmp_path) == []
    again = await run(review_env, "requeue", "--all", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "nothing to requeue: no exchange is set aside\n")


async def test_requeue_without_a_choice_or_for_an_unknown_id_or_an_unusable_log_moves_nothing(
    review_env: dict[str, str], sqlite_log: Database, tmp_path: Path
) -> None:
    journal = Journal.in_home(review_env["VERBATIM_HOME"])
    [refused] = await set_aside(sqlite_log, journal, ["Is the refund window 10 days?"])

    neither = await run(review_env, "requeue", cwd=tmp_path)
    assert neither.returncode == 2
    assert one_error_line(neither) == ("error: name the exchanges to requeue (the ids `verbatim review list "
                                       "--errors` shows) or pass --all, not both")
    assert (await run(review_env, "requeue", "--all", refused, cwd=tmp_path)).returncode == 2
    unknown = "00000000-0000-4000-8000-000000000000"
    named = await run(review_env, "requeue", refused, unknown, cwd=tmp_path)
    assert named.returncode == 1
    assert one_error_line(named) == (f"error: no exchange with id {unknown} is set aside: `verbatim review list "
                                     "--errors` shows the ones that are")
    missing_log = tmp_path / "nowhere" / "verbatim.sqlite3"
    no_log = await run(review_env | {"DATABASE_URL": f"sqlite+aiosqlite:///{missing_log}"}, "requeue", "--all",
                       cwd=tmp_path)
    assert no_log.returncode == 1 and "there is no exchange log" in one_error_line(no_log)
    assert [letter.record.id for letter in journal.dead_letters()] == [refused] and journal.pending() == 0


async def test_requeued_exchanges_wait_in_the_journal_while_another_process_replays_it(
    review_env: dict[str, str], sqlite_log: Database, tmp_path: Path
) -> None:
    """`verbatim serve` is replaying the journal: the requeued exchange is kept for it, not lost, and exit 1 says so."""
    journal = Journal.in_home(review_env["VERBATIM_HOME"])
    [refused] = await set_aside(sqlite_log, journal, ["Is the refund window 10 days?"])
    async with sqlite_log.engine.begin() as connection:
        await connection.exec_driver_sql("DROP TRIGGER refuse_bug")
    holder = os.open(journal.replay_lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # as the replaying process holds it
        result = await run(review_env, "requeue", "--all", "--json", cwd=tmp_path)
    finally:
        os.close(holder)
    assert result.returncode == 1
    assert json.loads(result.stdout) == {"requeued": [refused], "written": [], "refused_again": [],
                                         "waiting": [refused]}
    assert one_error_line(result) == f"error: 1 of 1 requeued exchange not in the log: {refused}"
    assert journal.waiting_ids() == [refused] and journal.dead_lettered() == 0
    assert await journal.replay(sqlite_log.sessions) == ReplayResult(written=1, remaining=0)


async def test_show_prints_everything_the_log_holds_and_one_line_when_weaviate_is_down(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path
) -> None:
    result = await run(review_env, "show", seeded.flagged, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("chunk text unavailable: cannot reach Weaviate at http://127.0.0.1:") == 1
    unavailable_line = next(line for line in out.splitlines() if line.startswith("chunk text unavailable"))
    assert unavailable_line.endswith("showing the quotes as logged")
    for expected in (
        "Question: How long do I have to request a refund?", "Standalone query: refund window annual plan",
        "Outcome: answered", "Claims (2 kept)", "[[Annual plans can be refunded within 10 days.]]",
        f"flag {seeded.open_flag}", "(not a lead: context only)", "Timings: search 12 ms · rerank 30 ms",
        "Route: composer extractive", "prompt compose-v1", "Retrieved chunks",
    ):
        assert expected in out, expected

    rejected = await run(review_env, "show", seeded.clean, "--no-index", "--json", cwd=tmp_path)
    data = json.loads(rejected.stdout)
    assert data["chunk_text_unavailable"] == "not read: --no-index"
    assert [(c["label"], c["kept"], c["rejection_reason"]) for c in data["citations"]] == [
        ("S1", True, None), ("S2", False, "not_found")]
    assert data["retrieved"][0] == {"rank": 1, "chunk_id": "chunk-1", "document_id": "refund-policy",
                                    "version": "2026-01", "title": "Refund policy", "search_score": 1.0,
                                    "rerank_score": 0.9}


async def test_list_handed_off_narrows_to_hand_offs_and_show_says_who_and_when(
    review_env: dict[str, str], sqlite_log: Database, seeded: Seeded, tmp_path: Path
) -> None:
    async with sqlite_log.sessions() as session:
        await claim_handoff(session, seeded.clean, user_id="U0ANNA", at=at(7))
        await handoff_posted(session, seeded.clean, "1700000000.000300")

    listed = await run(review_env, "list", "--handed-off", "--json", cwd=tmp_path)
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [seeded.clean]
    assert json.loads(listed.stdout)["handed_off"] is True
    table = await run(review_env, "list", "--handed-off", cwd=tmp_path)
    assert seeded.clean in table.stdout and "handed off" in table.stdout and seeded.flagged not in table.stdout

    shown = await run(review_env, "show", seeded.clean, "--no-index", cwd=tmp_path)
    assert ("Handed off to a person by U0ANNA at 2026-03-02 09:07 UTC (hand-off message 1700000000.000300)"
            in shown.stdout)
    data = json.loads((await run(review_env, "show", seeded.clean, "--no-index", "--json", cwd=tmp_path)).stdout)
    assert data["handoff"] == {"user_id": "U0ANNA", "at": "2026-03-02T09:07:00+00:00",
                               "message_ts": "1700000000.000300"}
    other = json.loads((await run(review_env, "show", seeded.flagged, "--no-index", "--json", cwd=tmp_path)).stdout)
    assert (other["handoff"], other["private_reply"]) == (None, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "abc"], "error: 'abc' is not an exchange id: expected a UUID"),
        (["show", "00000000-0000-4000-8000-000000000000"],
         "error: no exchange with id '00000000-0000-4000-8000-000000000000'"),
        (["resolve", "12", "--as", "confirmed_bad"], "error: '12' is not an exchange id"),
        (["resolve", "00000000-0000-4000-8000-000000000000", "--as", "confirmed_bad"], "error: no exchange with id"),
    ],
)
async def test_a_malformed_or_unknown_id_is_one_line_and_exit_1(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path, args: list[str], message: str
) -> None:
    result = await run(review_env, *args, cwd=tmp_path)
    assert result.returncode == 1
    assert one_error_line(result).startswith(message)


async def test_resolve_closes_the_open_flags_and_says_which(
    review_env: dict[str, str], seeded: Seeded, sqlite_log: Database, tmp_path: Path
) -> None:
    result = await run(review_env, "resolve", seeded.flagged.upper(), "--as", "confirmed_bad",
                       "--note", "30 days, not 10", "--by", "lead-ann", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"resolved flag {seeded.open_flag} on S1 (flagged by U-lead) as confirmed bad\n"
                             "1 citation suppressed for this question and near-duplicates: refund-policy (chunk chunk-1)\n")
    async with sqlite_log.sessions() as session:
        flag = next(f for f in await flags_for(session, seeded.flagged) if f.id == seeded.open_flag)
    assert (flag.resolution, flag.resolution_note, flag.resolved_by) == ("confirmed_bad", "30 days, not 10", "lead-ann")

    again = await run(review_env, "resolve", seeded.flagged, "--as", "confirmed_bad", cwd=tmp_path)
    assert again.returncode == 1
    assert one_error_line(again) == f"error: exchange {seeded.flagged} has no open flags to resolve"

    named = await run(review_env, "resolve", seeded.flagged, "--flag", seeded.open_flag, "--as", "fixed_in_docs",
                      "--json", cwd=tmp_path)
    resolved = json.loads(named.stdout)["resolved"]
    assert [(f["id"], f["resolution"]) for f in resolved] == [(seeded.open_flag, "fixed_in_docs")]
    assert json.loads(named.stdout)["suppressed"] == [], "a verdict other than confirmed_bad lifts the suppression"


async def test_chunks_lists_what_leads_confirmed_bad_for_the_documents_owners(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path
) -> None:
    resolved = await run(review_env, "resolve", seeded.flagged, "--as", "confirmed_bad", "--json", cwd=tmp_path)
    (suppressed,) = json.loads(resolved.stdout)["suppressed"]
    assert (suppressed["chunk_id"], suppressed["has_vector"]) == ("chunk-1", True), "the index is down: e5 alone"

    listed = await run(review_env, "chunks", "--min-questions", "1", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["chunk_id"], row["document_id"], row["state"]) == ("chunk-1", "refund-policy", "unknown")
    assert row["questions"] == [suppressed["question"]]
    many = await run(review_env, "chunks", cwd=tmp_path)
    assert many.stdout == "no chunk confirmed bad for 2 different questions or more\n"


async def test_export_writes_flagged_exchanges_as_eval_questions(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path
) -> None:
    target = tmp_path / "regressions.jsonl"
    result = await run(review_env, "export", "--flagged", str(target), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"exported 1 question to {target}\n"
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert lines == [{"id": seeded.flagged, "question": "How long do I have to request a refund?", "history": [],
                      "channel": "C-support"}]

    to_stdout = await run(review_env, "export", "-", "--no-support", cwd=tmp_path)
    (line,) = [json.loads(text) for text in to_stdout.stdout.splitlines()]
    assert line["id"] == seeded.no_support and [turn["role"] for turn in line["history"]] == ["user", "assistant"]
    assert to_stdout.stderr == "exported 1 question to -\n"

    unwritable = await run(review_env, "export", str(tmp_path / "no-such-dir" / "x.jsonl"), cwd=tmp_path)
    assert unwritable.returncode == 1 and "cannot write" in one_error_line(unwritable)


async def test_stats_lead_with_no_support_and_wrong_citation_rates(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path
) -> None:
    text = await run(review_env, "stats", "--since", "2026-03-01", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    lines = [line.strip() for line in text.stdout.splitlines() if line.strip()]
    assert lines[1].startswith("answers without support") and "20.0%" in lines[1]
    assert lines[2].startswith("handed off to a person")  # beside the no-support rate
    assert lines[3].startswith("deflection")
    assert lines[4].startswith("wrong citations") and "33.3%" in lines[4]  # 2 of 6 quotes
    assert [line.split()[0] for line in lines[5:8]] == ["volume", "error", "latency"]
    assert "2026-03-02" in text.stdout

    data = json.loads((await run(review_env, "stats", "--since", "2026-03-01", "--by", "channel", "--json",
                                 cwd=tmp_path)).stdout)
    assert data["overall"]["no_support_rate"] == pytest.approx(0.2)
    assert data["overall"]["error_rate"] == pytest.approx(0.2)
    assert {"questions", "handed_off", "handoff_rate", "deflected", "deflection_rate"} <= set(data["overall"])
    assert all("deflection_rate" in row for row in data["rows"])
    assert [row["channel_id"] for row in data["rows"]] == ["C-support", "C-other"]


@pytest.mark.parametrize("command", [["list"], ["stats"], ["export", "-"]])
async def test_a_bad_since_is_a_usage_error_naming_the_accepted_forms(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path, command: list[str]
) -> None:
    result = await run(review_env, *command, "--since", "last week", cwd=tmp_path)
    assert result.returncode == 2
    assert one_error_line(result) == f"error: --since 'last week' is not {SINCE_FORMS}"


async def test_a_database_that_does_not_connect_is_one_line_without_the_password(
    review_env: dict[str, str], tmp_path: Path
) -> None:
    env = review_env | {"DATABASE_URL": f"postgresql+asyncpg://verbatim:pw-s3cret@127.0.0.1:{free_port()}/verbatim"}
    result = await run(env, "list", cwd=tmp_path)
    assert result.returncode == 1
    line = one_error_line(result)
    assert line.startswith("error: cannot connect to the database postgresql+asyncpg://verbatim:***@127.0.0.1:")
    assert "pw-s3cret" not in result.stderr + result.stdout


async def test_an_outdated_or_empty_log_says_to_run_alembic_upgrade(
    review_env: dict[str, str], sqlite_log: Database, tmp_path: Path
) -> None:
    await stamp(sqlite_log.url, "base")  # the tables of an older schema, at no revision this code needs
    outdated = await run(review_env, "list", cwd=tmp_path)
    assert outdated.returncode == 1
    assert f"is at revision (none) but this version needs {head_revision()}: run `verbatim db upgrade`" in (
        one_error_line(outdated))

    empty_file = tmp_path / "empty.sqlite3"
    empty_file.touch()
    empty = await run(review_env | {"DATABASE_URL": f"sqlite+aiosqlite:///{empty_file}"}, "stats", cwd=tmp_path)
    assert empty.returncode == 1
    assert one_error_line(empty).endswith("has no Verbatim tables: run `verbatim db upgrade`")

    missing_file = tmp_path / "nowhere" / "verbatim.sqlite3"
    missing = await run(review_env | {"DATABASE_URL": f"sqlite+aiosqlite:///{missing_file}"}, "list", cwd=tmp_path)
    assert missing.returncode == 1
    assert one_error_line(missing) == (
        f"error: there is no exchange log at {missing_file} yet: run `verbatim db upgrade` (or set DATABASE_URL)")
    assert not missing_file.parent.exists()  # a read never creates the log


async def test_serve_refuses_a_public_address_without_a_token(review_env: dict[str, str], tmp_path: Path) -> None:
    result = await run(review_env | {"REVIEW_HOST": "0.0.0.0"}, "serve", cwd=tmp_path)
    assert result.returncode == 2
    assert "REVIEW_TOKEN must be set" in one_error_line(result)


async def test_serve_answers_with_its_token_and_never_prints_it(
    review_env: dict[str, str], seeded: Seeded, tmp_path: Path
) -> None:
    token = "tok-" + os.urandom(8).hex()
    env = review_env | {"REVIEW_TOKEN": token, "REVIEW_HOST": "0.0.0.0"}
    process = await asyncio.create_subprocess_exec(
        *REVIEW, "serve", "--port", "0", env=env, cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        first = (await asyncio.wait_for(process.stdout.readline(), timeout=60)).decode()
        assert first.startswith("review desk on http://0.0.0.0:"), first
        port = int(first.split(":")[2].split("/")[0])
        async with aiohttp.ClientSession() as http:
            base = f"http://127.0.0.1:{port}"
            async with http.get(f"{base}/healthz") as health:
                assert (health.status, await health.json()) == (200, {"status": "ok"})
            async with http.get(f"{base}/", allow_redirects=False) as anonymous:
                assert anonymous.status == 303
            async with http.get(f"{base}/", headers={"Authorization": f"Bearer {token}"}) as queue:
                assert queue.status == 200 and seeded.flagged in await queue.text()
            async with http.post(f"{base}/login", data={"token": "wrong"}) as wrong:
                assert wrong.status == 401
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, err.decode()
    logs = first + out.decode() + err.decode()
    assert "GET /healthz" in logs  # the access log is there ...
    assert token not in logs  # ... and the token is not
