"""`verbatim sources` and `sync --source/--all` as an operator runs them: a docs repository and a folder declared in
sources.toml, synced, listed, checked; an answer cites the page with its link and version, and no longer once the
page is deleted in the repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.bot.test_cli_retrieval import run
from tests.conftest import DEMO_CORPUS
from tests.retrieval.git_repo import Repo

REFUNDS = ("# Refunds\n\n## Annual plans\n\nAnnual plans can be refunded in full within 30 days of purchase. "
           "After 30 days, annual plans are not refundable.\n")
RETURNS_JA = "# 返品\n\n## 返品の期限\n\n返品は商品到着後30日以内に受け付けます。送料は550円です。\n"


def write_sources(env: dict[str, str], text: str) -> None:
    home = Path(env["VERBATIM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "sources.toml").write_text(text, encoding="utf-8")


def test_declared_sources_are_synced_listed_checked_and_a_deleted_page_leaves_answers(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "docs-repo")
    repo.write("docs/refunds.md", REFUNDS)
    repo.write("docs/ja/返品.md", RETURNS_JA)
    commit = repo.commit("docs")
    wiki = tmp_path / "wiki"
    shutil.copytree(DEMO_CORPUS / "ru", wiki)
    write_sources(cli_env, f'''
[sources.docs]
type = "git"
url = "{repo.path}"
paths = ["docs"]
web_url = "https://git.example.com/acme/docs/blob/{{commit}}/{{path}}"

[sources.wiki]
type = "folder"
paths = ["{wiki}"]
''')
    never = run(cli_env, "sources", "list", "--json", cwd=tmp_path)
    assert never.returncode == 0, never.stderr
    assert [json.loads(line) for line in never.stdout.splitlines()] == [
        {"name": "docs", "type": "git", "documents": 0, "last_sync": None, "last_success": None, "last_error": None},
        {"name": "wiki", "type": "folder", "documents": 0, "last_sync": None, "last_success": None,
         "last_error": None},
    ]
    checked = run(cli_env, "sources", "check", "docs", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == f"ok: source 'docs' (git): {repo.path}: commit {commit[:12]}, 2 documents\n"

    synced = run(cli_env, "sync", "--all", "--json", cwd=tmp_path)
    assert synced.returncode == 0, synced.stderr
    by_source = {r["source"]: r for r in json.loads(synced.stdout)["sources"]}
    assert sorted(by_source["docs"]["added"]) == ["docs:docs/ja/返品.md", "docs:docs/refunds.md"]
    assert by_source["wiki"]["summary"]["added"] >= 1 and by_source["wiki"]["error"] is None

    listed = run(cli_env, "documents", "list", "--json", "--source", "docs", cwd=tmp_path)
    assert {json.loads(line)["document_id"] for line in listed.stdout.splitlines()} == {"docs:docs/refunds.md",
                                                                                         "docs:docs/ja/返品.md"}
    sources = {json.loads(line)["name"]: json.loads(line) for line in
               run(cli_env, "sources", "list", "--json", cwd=tmp_path).stdout.splitlines()}
    assert sources["docs"]["documents"] == 2 and sources["docs"]["last_success"] is not None

    asked = run(cli_env, "ask", "How long do I have to request a refund for an annual plan?", "--json", cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    citation = next(c for c in json.loads(asked.stdout)["citations"] if c["document_id"] == "docs:docs/refunds.md")
    assert citation["url"] == f"https://git.example.com/acme/docs/blob/{commit}/docs/refunds.md#annual-plans"
    assert citation["version"] == commit[:12]

    (repo.path / "docs" / "refunds.md").unlink()
    repo.commit("refunds moved to the billing site")
    again = run(cli_env, "sync", "--source", "docs", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "docs: removed docs:docs/refunds.md" in again.stdout
    after = json.loads(run(cli_env, "ask", "How long do I have to request a refund for an annual plan?", "--json",
                           cwd=tmp_path).stdout)
    assert "docs:docs/refunds.md" not in {c["document_id"] for c in after["citations"] + after["nearest"]}


def test_a_failing_source_is_one_line_and_exit_1_while_the_others_sync(cli_env: dict[str, str],
                                                                        tmp_path: Path) -> None:
    wiki = tmp_path / "wiki"
    shutil.copytree(DEMO_CORPUS / "ja", wiki)
    write_sources(cli_env, f'[sources.gone]\ntype = "git"\nurl = "{tmp_path / "no-such-repo"}"\n\n'
                           f'[sources.wiki]\ntype = "folder"\npaths = ["{wiki}"]\n')
    synced = run(cli_env, "sync", "--all", cwd=tmp_path)
    assert synced.returncode == 1
    assert synced.stderr.splitlines()[-1].startswith("error: source 'gone': git clone failed: ")
    assert synced.stderr.splitlines()[-1].endswith("; its indexed documents are kept")
    assert "wiki: added 1" in synced.stdout
    listed = {json.loads(line)["name"]: json.loads(line) for line in
              run(cli_env, "sources", "list", "--json", cwd=tmp_path).stdout.splitlines()}
    assert listed["gone"]["last_error"].startswith("source 'gone': git clone failed")
    assert listed["wiki"]["documents"] == 1 and listed["wiki"]["last_error"] is None
    check = run(cli_env, "sources", "check", "gone", cwd=tmp_path)
    assert check.returncode == 1 and check.stderr.startswith("error: source 'gone' (git): git clone failed: ")


def test_sources_usage_errors_are_one_line(cli_env: dict[str, str], tmp_path: Path) -> None:
    write_sources(cli_env, '[sources.docs]\ntype = "git"\n\n[sources.help]\ntype = "zendsk"\n')
    bad = run(cli_env, "sources", "list", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stderr == (f"error: {Path(cli_env['VERBATIM_HOME']) / 'sources.toml'}:4: source 'help': type 'zendsk' "
                          "is not one of folder, git, zendesk, confluence, gdrive, notion: set `type`\n")
    write_sources(cli_env, '[sources.docs]\ntype = "git"\nurl = "/srv/docs.git"\n')
    unknown = run(cli_env, "sync", "--source", "wiki", cwd=tmp_path)
    assert unknown.returncode == 1 and "no source is named 'wiki' (declared: docs)" in unknown.stderr
    assert run(cli_env, "sync", "--all", str(tmp_path), cwd=tmp_path).returncode == 2
    assert run(cli_env, "sync", "--all", "--dry-run", cwd=tmp_path).returncode == 2
