"""Nothing is lost: the real PostgreSQL stops mid-run, the bot keeps answering, and once it is back every
exchange is in the database exactly once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

from pydantic import SecretStr
from sqlalchemy import func, select

from bot.answer.evidence import load_models
from bot.answer.exchange import answered_record
from bot.answer.service import AnswerConfig, AnswerDeps, Question, answer
from bot.runtime.storage import open_storage, replay_journal
from bot.settings import Settings
from retrieval.embedders.local import E5Embedder
from retrieval.store import ChunkStore
from storage import migrate
from storage.journal import write_or_journal
from storage.models import Exchange
from tests.storage.conftest import own_postgres, postgres  # noqa: F401 - the fixture is shared


async def test_exchanges_made_while_postgres_is_down_are_written_once_when_it_is_back(
        own_postgres: tuple[str, dict[str, str]], demo_store: ChunkStore, embedder: E5Embedder, tmp_path: Path) -> None:
    url, env = own_postgres
    await migrate.upgrade(url)
    settings = Settings(database_url=SecretStr(url), verbatim_home=tmp_path, _env_file=None)  # type: ignore[call-arg]
    deps = AnswerDeps(store=demo_store, embedder=embedder, config=AnswerConfig(), abstain_models=load_models())
    questions = ["How long is a password reset link valid?", "送料はいくらですか？", "Когда обращение передаётся на вторую линию?",
                 "What is the boiling point of tungsten?"]
    ids: list[str] = []

    async with open_storage(settings) as db:
        async def ask(question: str) -> bool:
            result = await answer(Question(question), deps)
            record = answered_record(result, exchange_id=str(uuid4()), created_at=datetime.now(UTC), source="cli")
            ids.append(record.id)
            return await write_or_journal(db.sessions, db.journal, record, timeout_s=5)

        assert await ask(questions[0]) is True
        postgres("pause", env)  # the database goes away mid-run
        assert [await ask(q) for q in questions[1:]] == [False, False, False]  # still answered; journaled
        assert db.journal.pending() == 3
        postgres("start", env)  # back on the same port
        await replay_journal(db.journal, db.sessions)
        await replay_journal(db.journal, db.sessions)  # a second replay must not write anything twice
        assert db.journal.pending() == 0
        async with db.sessions() as session:
            rows = (await session.execute(select(Exchange.id, func.count()).group_by(Exchange.id))).all()
    assert sorted(rows) == sorted((exchange_id, 1) for exchange_id in ids)
