"""Readers for the shared evaluation data (../shared/eval/data), read in place, never copied.

Each reader returns the passages as ``Document`` values (one paragraph block each, so the normal
chunker runs over them) and the questions with the ids of their gold documents.
"""

from __future__ import annotations

import ast
import csv
import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval.documents import Block, BlockKind, Document

EVAL_DATA = Path(os.environ.get("VERBATIM_EVAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "eval" / "data"))


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    gold: frozenset[str]  # relevant document ids
    answers: tuple[str, ...] = ()  # gold answer spans (QA sets)
    answerable: bool = True
    history: tuple[tuple[str, str], ...] = ()  # earlier turns of a thread: (role, text), role "user"/"assistant"
    channel: str | None = None  # asked from this channel (visibility): NoMIRACL gives each query its own passages
    group: str = ""  # a subset of the dataset (MTRAG domain, NoMIRACL language) for fit/report splits


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    language: str
    documents: list[Document]
    queries: list[Query]


def _jsonl(path: Path) -> Iterator[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _document(doc_id: str, title: str, text: str, language: str) -> Document:
    return Document(document_id=doc_id, title=title, blocks=(Block(BlockKind.PARAGRAPH, text),),
                    source=f"eval:{doc_id}", language=language)


def _answers(raw: object) -> tuple[str, ...]:
    items = ast.literal_eval(raw) if isinstance(raw, str) else raw
    return tuple(a["text"] for a in items or [])


def _qa(name: str, language: str, passages: Path, questions: Path) -> Dataset:
    documents = [_document(p["passage_id"], p["title"].replace("_", " "), p["text"], language) for p in _jsonl(passages)]
    queries = []
    for q in _jsonl(questions):
        answerable = str(q.get("is_impossible", "False")) != "True"
        queries.append(Query(str(q["id"]), q["question"], frozenset({q["passage_id"]}),
                             _answers(q.get("answers")), answerable))
    return Dataset(name, language, documents, queries)


def jsquad() -> Dataset:
    base = EVAL_DATA / "jsquad-v1.3"
    return _qa("jsquad", "ja", base / "valid.passages.jsonl.gz", base / "valid.qa.jsonl.gz")


def jaquad() -> Dataset:
    base = EVAL_DATA / "jaquad-dev"
    return _qa("jaquad", "ja", base / "passages.jsonl.gz", base / "qa.jsonl.gz")


def xquad(language: str) -> Dataset:
    base = EVAL_DATA / "xquad-ru-en"
    return _qa(f"xquad-{language}", language, base / f"{language}.passages.jsonl.gz", base / f"{language}.qa.jsonl.gz")


def squad2() -> Dataset:
    base = EVAL_DATA / "squad2-dev-half"
    return _qa("squad2", "en", base / "passages.jsonl.gz", base / "qa.jsonl.gz")


def scifact(split: str = "dev") -> Dataset:
    base = EVAL_DATA / "scifact"
    documents = [_document(d["doc_id"], d["title"], d["text"], "en") for d in _jsonl(base / "corpus.jsonl.gz")]
    qrels: dict[str, set[str]] = {}
    if split == "dev":
        with open(base / "qrels_dev_cited.tsv", encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                qrels.setdefault(row["query-id"], set()).add(row["corpus-id"])
    queries = []
    for claim in _jsonl(base / f"claims_{split}.jsonl.gz"):
        if split == "dev":
            gold = qrels.get(str(claim["id"]), set())
        else:
            cited = claim["cited_doc_ids"]
            gold = set(map(str, ast.literal_eval(cited) if isinstance(cited, str) else cited))
        if gold:
            queries.append(Query(str(claim["id"]), claim["claim"], frozenset(gold)))
    return Dataset(f"scifact-{split}", "en", documents, queries)


def mtrag() -> Dataset:
    """MTRAG-UN govt + fiqa: the last user turn asked with the earlier turns as thread history.

    ANSWERABLE and PARTIAL turns should be answered from one of their reference passages, UNANSWERABLE ones
    should get "no support found"; UNDERSPECIFIED turns (the right reply is a clarifying question) are left out.
    """
    base = EVAL_DATA / "mtrag-govt-fiqa"
    documents = [_document(p["_id"], p.get("title") or "", p["text"].strip(), "en")
                 for p in _jsonl(base / "passages.jsonl.gz")]
    queries = []
    for task in _jsonl(base / "tasks.jsonl.gz"):
        label = task["answerability"][0]
        if label == "UNDERSPECIFIED":
            continue
        turns = task["conversation"]
        history = tuple(("user" if t["speaker"] == "user" else "assistant", t["text"]) for t in turns[:-1])
        queries.append(Query(task["task_id"], turns[-1]["text"], frozenset(c["document_id"] for c in task["contexts"]),
                             answerable=label != "UNANSWERABLE", history=history, group=task["domain"]))
    return Dataset("mtrag", "en", documents, queries)


def mtrag_pages(domain: str = "govt") -> Dataset:
    """MTRAG's passages of one domain, no questions: govt is real government documentation (for ingest speed)."""
    documents = [_document(p["_id"], p.get("title") or "", p["text"].strip(), "en")
                 for p in _jsonl(EVAL_DATA / "mtrag-govt-fiqa" / "passages.jsonl.gz") if p.get("domain") == domain]
    return Dataset(f"mtrag-{domain}", "en", documents, [])


NOMIRACL_LANGUAGES = ("de", "es", "fi", "fr", "id", "zh")


NOMIRACL_MORE_LANGUAGES = ("ar", "bn", "fa", "hi", "ko", "sw", "te", "th", "yo")
TRAIN_DATA = EVAL_DATA.parent / "train"


def nomiracl(languages: tuple[str, ...] = NOMIRACL_LANGUAGES, per_language: int = 60, *,
             base: Path = EVAL_DATA / "nomiracl-six", name: str = "nomiracl") -> Dataset:
    """NoMIRACL: each query sees only its own 10 passages (a channel of its own), the paper's setting.

    ``per_language`` queries per language, half from the relevant subset and half from the non-relevant
    one (the first ones in file order). A passage shared by several queries is visible in each of their channels.
    Which passage is the relevant one is not recorded, so ``gold`` is every passage of a relevant query.
    ``base``: the six shared languages (measured), or the training data's nine others (``nomiracl_more``).
    """
    passages: dict[str, tuple[str, str, str, set[str]]] = {}
    queries = []
    for language in languages:
        taken = {True: 0, False: 0}
        for row in _jsonl(base / f"{language}.test.jsonl.gz"):
            answer = bool(row["should_answer"])
            if taken[answer] >= per_language // 2:
                continue
            taken[answer] += 1
            channel = f"nomiracl-{language}-{row['query_id']}"  # ids repeat across languages
            for p in row["passages"]:
                doc_id = f"{language}:{p['docid']}"
                passages.setdefault(doc_id, (p["title"], p["text"], language, set()))[3].add(channel)
            gold = frozenset(f"{language}:{p['docid']}" for p in row["passages"]) if answer else frozenset()
            queries.append(Query(f"{language}:{row['query_id']}", row["query"], gold, answerable=answer,
                                 channel=channel, group=language))
    documents = [Document(document_id=doc_id, title=title, blocks=(Block(BlockKind.PARAGRAPH, text),),
                          source=f"eval:{doc_id}", visibility=tuple(sorted(channels)))
                 for doc_id, (title, text, _language, channels) in passages.items()]
    return Dataset(f"{name}-{per_language}", "multi", documents, queries)


def nomiracl_more(per_language: int = 150) -> Dataset:
    """NoMIRACL's nine other languages (``../shared/eval/train/nomiracl-more``): the same setting, for fitting
    what the six shared languages are measured on."""
    return nomiracl(NOMIRACL_MORE_LANGUAGES, per_language, base=TRAIN_DATA / "nomiracl-more", name="nomiracl-more")
