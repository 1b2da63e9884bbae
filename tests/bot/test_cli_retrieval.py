"""The `verbatim` command as an operator runs it: ingest, search, and the one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from retrieval.weaviate_config import WeaviateConfig
from tests.conftest import DEMO_CORPUS, free_port

VERBATIM = str(Path(sys.executable).parent / "verbatim")


def run(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([VERBATIM, *args], env=env, capture_output=True, text=True, timeout=300, cwd=cwd)


def test_ingest_then_search_json_contract(cli_env: dict[str, str], tmp_path: Path) -> None:
    ingested = run(cli_env, "ingest", str(DEMO_CORPUS), "--json", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    report = json.loads(ingested.stdout)
    assert report["summary"]["ingested"] == 7 and report["summary"]["failed"] == 0 and report["failures"] == []

    found = run(cli_env, "search", "送料はいくらですか", "--json", "-k", "3", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    payload = json.loads(found.stdout)
    assert len(payload["results"]) == 3
    first = payload["results"][0]
    assert set(first) == {"chunk_id", "document_id", "title", "section", "page", "version", "url", "text", "score"}
    assert first["document_id"] == "ja-shipping-returns" and "550円" in first["text"]


def test_search_many_queries_in_one_process_reports_bad_lines(cli_env: dict[str, str], tmp_path: Path) -> None:
    assert run(cli_env, "ingest", str(DEMO_CORPUS), "--json", cwd=tmp_path).returncode == 0
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        '{"id": "q1", "query": "password reset link validity"}\n'
        "not json\n"
        '{"id": "q2", "query": "Сколько времени у оператора на ответ клиенту?", "x": 1}\n',
        encoding="utf-8",
    )
    result = run(cli_env, "search", "--queries", str(queries), "--json", "--channel", "C0LEADS", "-k", "2", cwd=tmp_path)
    assert result.returncode == 1  # one bad line
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["q1", "q2"]
    assert lines[0]["results"][0]["document_id"] == "accounts-password-reset"
    assert lines[1]["results"][0]["document_id"] == "ru-first-line-guide"
    assert f"{queries}:2" in result.stderr


def test_ingest_with_bad_files_exits_non_zero_and_names_them(cli_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("A perfectly fine note about support hours.", encoding="utf-8")
    (tmp_path / "broken.jsonl").write_text('{"document_id": "x", "title": "X"}\n', encoding="utf-8")
    result = run(cli_env, "ingest", str(tmp_path / "ok.txt"), str(tmp_path / "broken.jsonl"), cwd=tmp_path)
    assert result.returncode == 1
    assert f"{tmp_path / 'broken.jsonl'}:1" in result.stderr
    assert "ingested 1" in result.stdout and "failed 1" in result.stdout


def test_ingest_says_how_many_cores_it_embeds_on_and_caps_workers_at_what_it_may_use(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    one = run(cli_env, "ingest", "--workers", "1", str(DEMO_CORPUS), cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert "embedding with e5 on 1 core" in one.stderr and "ingested 7" in one.stdout
    usable = len(os.sched_getaffinity(0))
    many = run(cli_env, "ingest", "--workers", str(usable + 7), str(DEMO_CORPUS), cwd=tmp_path)
    assert many.returncode == 0, many.stderr
    assert f"this process may use {usable} cores" in many.stderr and "skipped 7" in many.stdout
    assert run(cli_env, "ingest", "--workers", "0", str(DEMO_CORPUS), cwd=tmp_path).returncode == 2


def test_unreachable_weaviate_is_one_line_without_the_api_key(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = cli_env | {"WEAVIATE_URL": f"http://127.0.0.1:{free_port()}", "WEAVIATE_GRPC_URL": f"http://127.0.0.1:{free_port()}",
                     "WEAVIATE_API_KEY": "sk-very-secret-key"}
    result = run(env, "search", "anything", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: cannot reach Weaviate at http://127.0.0.1:")
    assert "WEAVIATE_URL" in result.stderr
    assert "sk-very-secret-key" not in result.stderr + result.stdout


def test_searching_an_empty_index_says_to_ingest_first(cli_env: dict[str, str], tmp_path: Path) -> None:
    result = run(cli_env, "search", "anything", cwd=tmp_path)
    assert result.returncode == 1
    assert "run `verbatim ingest PATH` first" in result.stderr


def test_embedded_weaviate_starts_under_verbatim_home_and_keeps_json_clean(
    cli_env: dict[str, str], tmp_path: Path, weaviate_config: WeaviateConfig
) -> None:
    env = {k: v for k, v in cli_env.items() if k not in ("WEAVIATE_URL", "WEAVIATE_GRPC_URL", "WEAVIATE_API_KEY")}
    env |= {"WEAVIATE_EMBEDDED_PORT": str(free_port()), "WEAVIATE_EMBEDDED_GRPC_PORT": str(free_port())}
    ingested = run(env, "ingest", str(DEMO_CORPUS / "billing"), "--json", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["summary"]["ingested"] == 1  # stdout is pure JSON: server logs went to a file
    home = Path(env["VERBATIM_HOME"])
    assert (home / "weaviate").is_dir() and (home / "weaviate.log").stat().st_size > 0

    # A second process starts the server again from the same data: the document is still there.
    found = run(env, "search", "processing fee", "--json", "-k", "1", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["document_id"] == "billing-refunds"


def test_missing_weaviate_binary_offline_says_how_to_install(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env.items() if k not in ("WEAVIATE_URL", "WEAVIATE_GRPC_URL", "WEAVIATE_API_KEY")}
    env |= {"WEAVIATE_BINARY_DIR": str(tmp_path / "no-binary-here"), "WEAVIATE_EMBEDDED_PORT": str(free_port()),
            "WEAVIATE_EMBEDDED_GRPC_PORT": str(free_port()),
            # No network here anyway; a dead proxy makes sure the client's download fails fast everywhere.
            "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    result = run(env, "search", "anything", cwd=tmp_path)
    assert result.returncode == 1
    assert "verbatim weaviate install" in result.stderr and result.stderr.count("\n") == 1


def test_weaviate_install_is_a_no_op_when_the_binary_is_there(cli_env: dict[str, str], tmp_path: Path) -> None:
    result = run(cli_env, "weaviate", "install", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("already installed: Weaviate 1.39.3")


def test_weaviate_install_without_go_says_what_to_do(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = cli_env | {"WEAVIATE_BINARY_DIR": str(tmp_path / "empty"), "PATH": str(Path(sys.executable).parent)}
    result = run(env, "weaviate", "install", cwd=tmp_path)
    assert result.returncode == 1
    assert "Go toolchain" in result.stderr and "WEAVIATE_URL" in result.stderr


def test_invalid_setting_is_named(cli_env: dict[str, str], tmp_path: Path) -> None:
    result = run(cli_env | {"SEARCH_LIMIT": "many"}, "search", "x", cwd=tmp_path)
    assert result.returncode == 2
    assert "SEARCH_LIMIT" in result.stderr


def test_env_example_lists_every_setting() -> None:
    from bot.settings import Settings

    example = (Path(__file__).resolve().parents[2] / ".env.example").read_text(encoding="utf-8")
    listed = {line.split("=", 1)[0].lstrip("# ").strip() for line in example.splitlines() if "=" in line}
    assert {name.upper() for name in Settings.model_fields} <= listed
