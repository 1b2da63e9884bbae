"""DESIGN.md: the HTTP API lives beside Slack and never imports it; the Slack edge reaches the API only through
the server that mounts both (``bot.serve``), never by importing it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_http_api_imports_nothing_of_slack() -> None:
    for path in (ROOT / "bot" / "api").glob("*.py"):
        slack = {m for m in imported_modules(path) if m.split(".")[0] in ("slack_bolt", "slack_sdk")
                 or m == "bot.slack" or m.startswith("bot.slack.")}
        assert not slack, (path.name, slack)


def test_the_slack_edge_imports_neither_the_api_nor_sql_for_it() -> None:
    """The readiness ping is storage's (``storage.db.ping``), called by the API: no SQL text in the edge."""
    for path in (ROOT / "bot" / "slack").glob("*.py"):
        modules = imported_modules(path)
        assert not {m for m in modules if m == "bot.api" or m.startswith("bot.api.")}, path.name
        assert "SELECT 1" not in path.read_text(encoding="utf-8"), path.name
