"""The plan of a sync, as a table: what the registry holds, what the sources hold now, what changes."""

from __future__ import annotations

import pytest

from retrieval.store import DocumentRecord
from retrieval.sync import Found, is_under, plan_sync

WIKI = "/srv/export/wiki"
HANDBOOK = "/srv/export/handbook"


def indexed(document_id: str, source: str | None, content_hash: str = "h1") -> DocumentRecord:
    return DocumentRecord(document_id, content_hash, "1", document_id, 2, source)


def found(document_id: str, source: str | None, content_hash: str = "h1") -> Found:
    return Found(document_id, content_hash, source)


@pytest.mark.parametrize(
    ("registry", "now", "roots", "failed", "expected"),
    [
        pytest.param([], [found("billing", f"{WIKI}/billing.md")], [WIKI], [],
                     {"added": ["billing"]}, id="a new document is added"),
        pytest.param([indexed("billing", f"{WIKI}/billing.md")], [found("billing", f"{WIKI}/billing.md", "h2")],
                     [WIKI], [], {"replaced": ["billing"]}, id="a changed document is replaced"),
        pytest.param([indexed("billing", f"{WIKI}/billing.md")], [found("billing", f"{WIKI}/billing.md")],
                     [WIKI], [], {"unchanged": ["billing"]}, id="an unchanged document is left alone"),
        pytest.param([indexed("billing", f"{WIKI}/billing.md"), indexed("返品", f"{WIKI}/ja/返品.md")],
                     [found("billing", f"{WIKI}/billing.md")], [WIKI], [],
                     {"unchanged": ["billing"], "removed": ["返品"]}, id="a document whose file left is removed"),
        pytest.param([indexed("wiki-page", f"{WIKI}/page.md"), indexed("handbook-page", f"{HANDBOOK}/page.md")],
                     [], [WIKI], [], {"removed": ["wiki-page"]}, id="syncing one folder never removes another's"),
        pytest.param([indexed("old", "/srv/export/wiki-old/page.md")], [], [WIKI], [], {},
                     id="a sibling folder whose name starts alike is another folder"),
        pytest.param([indexed("legacy", None)], [], [WIKI], [], {},
                     id="a document with no source recorded is never removed"),
        pytest.param([indexed("leads", f"{WIKI}/escalation.jsonl"), indexed("hours", f"{WIKI}/escalation.jsonl")],
                     [found("hours", f"{WIKI}/escalation.jsonl")], [WIKI], [],
                     {"unchanged": ["hours"], "removed": ["leads"]}, id="a line gone from a JSONL file is removed"),
        pytest.param([indexed("leads", f"{WIKI}/escalation.jsonl"), indexed("hours", f"{WIKI}/escalation.jsonl")],
                     [found("hours", f"{WIKI}/escalation.jsonl")], [WIKI], [f"{WIKI}/escalation.jsonl"],
                     {"unchanged": ["hours"], "kept": ["leads"]}, id="a JSONL file with a bad line removes nothing"),
        pytest.param([indexed("первая-линия", f"{WIKI}/ru/first-line.md")], [], [WIKI], [f"{WIKI}/ru/first-line.md"],
                     {"kept": ["первая-линия"]}, id="a file that fails to load keeps its document"),
        pytest.param([indexed("a", f"{WIKI}/team/a.md"), indexed("b", f"{WIKI}/other/b.md")], [], [WIKI],
                     [f"{WIKI}/team"], {"kept": ["a"], "removed": ["b"]},
                     id="a folder that cannot be listed keeps what it held, and only that"),
        pytest.param([indexed("a", f"{WIKI}/a.md")], [], [WIKI], [WIKI], {"kept": ["a"]},
                     id="a synced path that is gone removes nothing"),
        pytest.param([indexed("moved", f"{WIKI}/old/place.md")], [found("moved", f"{WIKI}/new/place.md")], [WIKI], [],
                     {"unchanged": ["moved"]}, id="a document that moved to another file is not removed"),
        pytest.param([indexed("moved", f"{HANDBOOK}/place.md")], [found("moved", f"{WIKI}/place.md", "h2")], [WIKI], [],
                     {"replaced": ["moved"]}, id="a document found in the synced folder is taken from there"),
        pytest.param([indexed("page", f"{WIKI}/page.md")], [], [f"{WIKI}/page.md"], [], {"removed": ["page"]},
                     id="a synced file that was deleted removes its documents"),
        pytest.param([indexed("wiki-page", f"{WIKI}/page.md"), indexed("handbook-page", f"{HANDBOOK}/page.md")],
                     [], [WIKI, HANDBOOK], [], {"removed": ["wiki-page", "handbook-page"]},
                     id="several roots at once"),
        pytest.param([], [found("twice", f"{WIKI}/a.md"), found("twice", f"{WIKI}/b.md", "h2")], [WIKI], [],
                     {"added": ["twice"]}, id="a second document with the same id is the ingest's failure, not a change"),
    ],
)
def test_plan(registry: list[DocumentRecord], now: list[Found], roots: list[str], failed: list[str],
              expected: dict[str, list[str]]) -> None:
    plan = plan_sync(registry, now, roots=roots, failed=failed)
    got = {
        "added": [f.document_id for f in plan.added], "replaced": [f.document_id for f in plan.replaced],
        "unchanged": [f.document_id for f in plan.unchanged], "removed": [r.document_id for r in plan.removed],
        "kept": [r.document_id for r in plan.kept],
    }
    assert {k: v for k, v in got.items() if v} == expected


@pytest.mark.parametrize(
    ("path", "root", "under"),
    [
        (f"{WIKI}/a.md", WIKI, True),
        (WIKI, WIKI, True),
        (f"{WIKI}/deep/er/a.md", WIKI, True),
        ("/srv/export/wiki-old/a.md", WIKI, False),
        ("/srv/export", WIKI, False),
        (None, WIKI, False),
        (f"{WIKI}/a.md", f"{WIKI}/a.md", True),
        (f"{WIKI}/a.md.bak", f"{WIKI}/a.md", False),
    ],
)
def test_is_under_compares_whole_path_components(path: str | None, root: str, under: bool) -> None:
    assert is_under(path, root) is under
