"""`verbatim sync` and `verbatim documents` as an operator runs them: a wiki export kept in sync, and an answer
that can no longer cite the document the sync took out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.bot.test_cli_retrieval import run
from tests.conftest import DEMO_CORPUS

REFUND_QUESTION = "How long do I have to request a refund for an annual plan?"


def cited(payload: dict) -> set[str]:
    return {c["document_id"] for c in payload["citations"]}


def test_a_synced_export_drops_a_deleted_page_from_answers_and_the_review_marks_it(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    wiki = tmp_path / "wiki"
    shutil.copytree(DEMO_CORPUS, wiki)
    first = run(cli_env, "sync", str(wiki), "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)["summary"]
    assert summary.pop("chunks") > 7
    assert summary == {"added": 7, "replaced": 0, "unchanged": 0, "removed": 0, "kept": 0, "failed": 0}
    before = run(cli_env, "ask", REFUND_QUESTION, "--json", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    answered = json.loads(before.stdout)
    assert "billing-refunds" in cited(answered)

    (wiki / "billing" / "refunds.md").unlink()
    (wiki / "broken.jsonl").write_text('{"document_id": "x", "title": "X"}\n', encoding="utf-8")
    preview = run(cli_env, "sync", str(wiki), "--dry-run", cwd=tmp_path)
    assert preview.returncode == 1  # a file failed to load, named on one line
    assert preview.stderr.splitlines() == [f"failed {wiki / 'broken.jsonl'}:1: missing field 'text' (a non-empty "
                                           "string): add it to this line"]
    assert f"would remove billing-refunds ({wiki.resolve() / 'billing' / 'refunds.md'})" in preview.stdout
    assert preview.stdout.splitlines()[-1] == ("dry run, nothing changed: added 0, replaced 0, unchanged 6, "
                                               "removed 1, kept 0, failed 1")

    synced = run(cli_env, "sync", str(wiki), "--json", cwd=tmp_path)
    assert synced.returncode == 1
    report = json.loads(synced.stdout)
    assert [r["document_id"] for r in report["removed"]] == ["billing-refunds"]
    assert [f["source"] for f in report["failures"]] == [f"{wiki / 'broken.jsonl'}:1"]

    after = run(cli_env, "ask", REFUND_QUESTION, "--json", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert "billing-refunds" not in cited(json.loads(after.stdout))
    assert "billing-refunds" not in {c["document_id"] for c in json.loads(after.stdout)["nearest"]}

    shown = run(cli_env, "review", "show", answered["exchange_id"], "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    review = json.loads(shown.stdout)
    assert review["removed"] is True and review["stale"] is False
    assert {c["version_state"] for c in review["citations"] if c["document_id"] == "billing-refunds"} == {"removed"}


def test_documents_list_and_remove(cli_env: dict[str, str], tmp_path: Path) -> None:
    assert run(cli_env, "sync", str(DEMO_CORPUS), "--json", cwd=tmp_path).returncode == 0
    listed = run(cli_env, "documents", "list", "--json", "--source", str(DEMO_CORPUS / "ja"), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line) for line in listed.stdout.splitlines()] == [{
        "document_id": "ja-shipping-returns", "title": "配送と返品のご案内", "version": "2026.2", "chunks": 3,
        "source": str(DEMO_CORPUS / "ja" / "shipping.md"), "source_name": None,
    }]

    removed = run(cli_env, "documents", "remove", "ja-shipping-returns", "no-such-doc", "support-hours", cwd=tmp_path)
    assert removed.returncode == 1
    assert removed.stdout.splitlines() == ["removed ja-shipping-returns", "removed support-hours"]
    assert removed.stderr.splitlines() == ["error: no indexed document has the id 'no-such-doc': see "
                                           "`verbatim documents list`"]

    table = run(cli_env, "documents", "list", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "billing-refunds" in table.stdout and "ja-shipping-returns" not in table.stdout
    assert "support-hours" not in table.stdout


def test_sync_without_a_path_is_bad_usage(cli_env: dict[str, str], tmp_path: Path) -> None:
    assert run(cli_env, "sync", cwd=tmp_path).returncode == 2
