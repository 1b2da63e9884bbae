"""The one entry point: a question is answered and its exchange recorded — in SQL, or in the journal while the
database is down — with what the front end's delivery did, for every front end alike."""

from __future__ import annotations

import json
from pathlib import Path

from bot.answer.ask import Delivery, Origin, Recorder, ask, record_failure
from bot.answer.evidence import load_models
from bot.answer.render import ask_json
from bot.answer.service import AnswerConfig, AnswerDeps, AnswerResult, Question
from bot.answer.wording import WORDING
from retrieval.embedders.local import E5Embedder
from retrieval.errors import RetrievalError
from retrieval.store import ChunkStore
from storage.db import create_engine, create_session_factory
from storage.exchanges import get_exchange
from storage.journal import Journal
from tests.storage.conftest import db, empty_database_url, kind  # noqa: F401  (the real-database fixtures)
from tests.storage.database import Database

QUESTION = "Up to how much can a team lead approve a goodwill credit?"


def deps_for(store: ChunkStore, embedder: E5Embedder) -> AnswerDeps:
    return AnswerDeps(store=store, embedder=embedder, config=AnswerConfig(), abstain_models=load_models())


async def test_an_answer_is_recorded_with_the_channel_it_was_computed_for(
        db: Database, demo_store: ChunkStore, embedder: E5Embedder, tmp_path: Path) -> None:  # noqa: F811
    asked = await ask(Question(QUESTION, channel="C0LEADS"), deps_for(demo_store, embedder),
                      Recorder(db.sessions, Journal(tmp_path / "journal.jsonl")), Origin("api"))
    assert asked.recorded and asked.error is None and asked.result is not None
    async with db.sessions() as session:
        stored = await get_exchange(session, asked.exchange_id)
    assert stored is not None and (stored.source, stored.outcome, stored.channel_id) == ("api", "answered", "C0LEADS")
    assert [c.document_id for c in stored.citations if c.kept][:1] == ["leads-escalation-matrix"]


async def test_a_reply_that_could_not_be_delivered_is_recorded_as_an_error_with_where_it_went(
        db: Database, demo_store: ChunkStore, embedder: E5Embedder, tmp_path: Path) -> None:  # noqa: F811
    seen: list[AnswerResult | None] = []

    async def deliver(result: AnswerResult | None, error: BaseException | None) -> Delivery:
        seen.append(result)
        return Delivery(reply_ts="1700000000.000200", error=ConnectionError("the reply was refused"))

    asked = await ask(Question(QUESTION), deps_for(demo_store, embedder),
                      Recorder(db.sessions, Journal(tmp_path / "journal.jsonl")), Origin("slack"), deliver=deliver)
    assert seen and seen[0] is asked.result is not None  # the delivery got the answer
    async with db.sessions() as session:
        stored = await get_exchange(session, asked.exchange_id)
    assert stored is not None and (stored.outcome, stored.error_class, stored.reply_ts) == (
        "error", "ConnectionError", "1700000000.000200")
    assert stored.timings_ms.get("total", 0) > 0  # the answer's timings are kept with the error


async def test_with_the_database_down_the_exchange_waits_in_the_journal(
        demo_store: ChunkStore, embedder: E5Embedder, tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'no-such-folder' / 'verbatim.sqlite3'}")
    journal = Journal(tmp_path / "journal.jsonl")
    try:
        asked = await ask(Question(QUESTION), deps_for(demo_store, embedder),
                          Recorder(create_session_factory(engine), journal), Origin("cli"))
    finally:
        await engine.dispose()
    assert asked.recorded and journal.pending() == 1
    assert asked.exchange_id in journal.path.read_text(encoding="utf-8")


async def test_a_failed_question_prints_the_contracts_error_object_without_the_errors_own_text(
        db: Database, tmp_path: Path) -> None:  # noqa: F811
    """`verbatim ask --json`, `eval` and /api/ask print the same object: the error reply in the asker's
    language; what the library said stays in the exchange record."""
    error = RetrievalError("WeaviateQueryError: connection to 10.1.2.3:50051 refused")
    asked = await record_failure(Question("Какой срок возврата?"), error,
                                 Recorder(db.sessions, Journal(tmp_path / "journal.jsonl")), Origin("cli"))
    payload = ask_json(asked)

    assert payload == {"status": "error", "answer": WORDING["ru"].error, "citations": [], "nearest": [],
                       "exchange_id": asked.exchange_id, "timings_ms": {}}
    assert "10.1.2.3" not in json.dumps(payload, ensure_ascii=False)
    async with db.sessions() as session:
        stored = await get_exchange(session, asked.exchange_id)
    assert stored is not None and "10.1.2.3" in (stored.error_message or "")
