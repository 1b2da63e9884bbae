"""The import rules of docs/architecture.md ("Packages and what they may import"), checked against the code.

The table's "never imports" column is read from the page itself, so the rule a reader finds there is the rule this
test holds the code to: every module of each package (or each named file) is parsed and none of its imports may
name a forbidden package. ``slack`` stands for Bolt, slack_sdk and ``bot/slack``. One more rule lives in the
composition root's docstring: inside ``bot/``, only ``bot/runtime/`` builds a database engine, a Weaviate
client, a Cohere client or an embedder; everyone else is handed them.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE_HEADER = "| package | holds | may import | never imports |"
SLACK = ("slack_bolt", "slack_sdk", "bot.slack")
# What building a client looks like: the constructors and factories of the clients a process holds.
BUILDERS = {"create_engine", "create_async_engine", "connect", "AsyncClientV2", "ClientV2", "E5Embedder",
            "UseEmbedder", "CohereEmbedder", "WeaviateAsyncClient"}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, anywhere in it (function-level imports too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def rules() -> list[tuple[str, tuple[str, ...]]]:
    """(package or file, forbidden module prefixes) for each row of the table that forbids something."""
    lines = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEADER) + 2  # past the header and its |---| line
    found: list[tuple[str, tuple[str, ...]]] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        where, never = cells[0], cells[-1]
        forbidden: list[str] = []
        for token in filter(None, (t.strip() for t in never.split(","))):
            name = re.fullmatch(r"`([\w/.]+)`", token)
            assert name is not None, f"docs/architecture.md: {token!r} in the 'never imports' column names no package"
            forbidden += SLACK if name[1] == "slack" else [name[1].strip("/").replace("/", ".")]
        for part in re.findall(r"`([\w/.]+)`", where):
            if forbidden:
                found.append((part, tuple(forbidden)))
    return found


def files_of(part: str) -> list[Path]:
    path = ROOT / part
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def test_the_table_names_the_rules_the_design_asks_for() -> None:
    """DESIGN.md's rules are all in the table (it may add more): the Slack edge imports neither storage nor
    retrieval, nor Weaviate or Cohere; retrieval never imports slack or storage; storage never slack or weaviate."""
    table = dict(rules())
    assert set(table["bot/slack/"]) >= {"weaviate", "cohere", "storage", "retrieval"}
    assert set(table["retrieval/"]) >= {"storage", *SLACK}
    assert set(table["bot/answer/"]) >= set(SLACK)
    assert set(table["storage/"]) >= {"weaviate", *SLACK}
    assert set(table["bot/api/"]) >= set(SLACK)


@pytest.mark.parametrize(("part", "forbidden"), rules(), ids=[part for part, _ in rules()])
def test_no_module_imports_what_its_row_forbids(part: str, forbidden: tuple[str, ...]) -> None:
    broken = {}
    for path in files_of(part):
        assert path.exists(), f"docs/architecture.md names {part}, which does not exist"
        own = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        bad = sorted(m for m in imported_modules(path) for f in forbidden
                     if (m == f or m.startswith(f + ".")) and not own.startswith(f))
        if bad:
            broken[path.relative_to(ROOT).as_posix()] = bad
    assert not broken, f"imports that docs/architecture.md forbids: {broken}"


def test_only_the_composition_root_builds_clients() -> None:
    """An engine, a Weaviate or Cohere client, an embedder: built in bot/runtime/ only, once per process."""
    builders = {}
    for path in sorted((ROOT / "bot").rglob("*.py")):
        if path.parent == ROOT / "bot" / "runtime":
            continue
        calls = {node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))}
        if calls & BUILDERS:
            builders[path.relative_to(ROOT).as_posix()] = sorted(calls & BUILDERS)
    assert not builders, f"clients built outside bot/runtime/: {builders}"


def test_the_slack_edge_runs_no_sql_of_its_own() -> None:
    """The readiness ping is storage's (``storage.db.ping``), called by the API: no SQL text in the edge."""
    for path in files_of("bot/slack/"):
        assert "SELECT 1" not in path.read_text(encoding="utf-8"), path.name


def test_ingest_imports_neither_the_answer_path_nor_the_exchange_log_nor_slack() -> None:
    """`verbatim ingest` starts with only what it runs (half a second less before its first batch is embedded):
    the command's module and its settings pull in no answer path, SQLAlchemy, Alembic or Slack client."""
    probe = ("import sys; from bot.cli import main; from bot.cli_support import load_settings; "
             "main.get_command(None, 'ingest'); load_settings(); print(' '.join(sys.modules))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                                cwd=ROOT).stdout.split())
    assert {"weaviate", "bot.cli_ingest"} <= loaded  # the probe reached the command
    heavy = {"bot.answer.service", "bot.answer.ask", "bot.exchange_log", "bot.slack.visibility", "bot.review.desk",
             "sqlalchemy", "alembic", "slack_sdk", "slack_bolt", "aiohttp"}
    assert not loaded & heavy, sorted(loaded & heavy)
