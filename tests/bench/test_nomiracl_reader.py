"""NoMIRACL as the answer bench reads it: each query sees only its own ten passages, in a channel of its own — even
where two languages' files use the same query id (the nine training languages do: 1,350 queries, one id twice)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench import data


def _write(folder: Path, language: str, rows: list[tuple[str, bool, list[str]]]) -> None:
    with gzip.open(folder / f"{language}.test.jsonl.gz", "wt", encoding="utf-8") as handle:
        for query_id, relevant, passages in rows:
            handle.write(json.dumps({
                "query_id": query_id, "lang": language, "subset": "relevant" if relevant else "non_relevant",
                "should_answer": relevant, "query": f"{language} question {query_id}",
                "passages": [{"docid": d, "title": f"title {d}", "text": f"text of {d}"} for d in passages]},
                ensure_ascii=False) + "\n")


def test_a_query_id_shared_by_two_languages_gets_two_channels(tmp_path: Path) -> None:
    _write(tmp_path, "sw", [("7#0", True, ["a", "b"]), ("8#0", False, ["c"])])
    _write(tmp_path, "yo", [("7#0", False, ["a", "d"]), ("9#0", True, ["e"])])
    dataset = data.nomiracl(("sw", "yo"), per_language=2, base=tmp_path, name="nomiracl-more")

    assert dataset.name == "nomiracl-more-2"
    channels = {q.id: q.channel for q in dataset.queries}
    assert len(set(channels.values())) == 4
    seen = {q.id: {d.document_id for d in dataset.documents if q.channel in d.visibility} for q in dataset.queries}
    # Same passage id in two languages: two documents, each visible only to its own language's query.
    assert seen["sw:7#0"] == {"sw:a", "sw:b"}
    assert seen["yo:7#0"] == {"yo:a", "yo:d"}
    relevant = {q.id: q.gold for q in dataset.queries if q.answerable}
    assert relevant == {"sw:7#0": frozenset({"sw:a", "sw:b"}), "yo:9#0": frozenset({"yo:e"})}


def test_half_of_each_language_from_each_subset(tmp_path: Path) -> None:
    _write(tmp_path, "ko", [(f"{i}#0", i % 3 == 0, [f"p{i}"]) for i in range(12)])
    dataset = data.nomiracl(("ko",), per_language=4, base=tmp_path)

    assert [q.answerable for q in dataset.queries].count(True) == 2
    assert [q.answerable for q in dataset.queries].count(False) == 2
    assert {q.group for q in dataset.queries} == {"ko"}
