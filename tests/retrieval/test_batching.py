"""Questions asked at once have their query vectors computed together, each caller still getting its own text's
vector; a failed batch fails only its own callers, and a caller who gives up does not disturb the others."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from retrieval.embedders.batching import Batcher
from retrieval.embedders.local import E5Embedder


async def settle() -> None:
    """Let every task that can run, run (the callers, then the batching task they started)."""
    for _ in range(5):
        await asyncio.sleep(0)


class Engine:
    """An engine whose batches can be held open, to see what the next batch gathers. Vector = [len(text)]."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.release = asyncio.Event()
        self.release.set()
        self.fail_on = fail_on

    async def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        await self.release.wait()
        if self.fail_on in texts:
            raise RuntimeError("engine failed")
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)


async def test_a_lone_question_is_embedded_at_once_and_those_asked_meanwhile_go_together() -> None:
    engine = Engine()
    batcher = Batcher(engine)
    engine.release.clear()
    first = asyncio.create_task(batcher.one("a"))
    await settle()
    assert engine.batches == [["a"]]  # not held back waiting for company
    later = [asyncio.create_task(batcher.one("b" * n)) for n in range(1, 6)]
    await settle()
    engine.release.set()
    assert float((await first)[0]) == 1.0
    assert [float((await task)[0]) for task in later] == [1.0, 2.0, 3.0, 4.0, 5.0]  # each its own text's vector
    assert engine.batches == [["a"], ["b", "bb", "bbb", "bbbb", "bbbbb"]]


async def test_a_batch_holds_at_most_max_batch_texts() -> None:
    engine = Engine()
    batcher = Batcher(engine, max_batch=2)
    engine.release.clear()
    tasks = [asyncio.create_task(batcher.one(text)) for text in ["a", "b", "c", "d", "e"]]
    await settle()
    engine.release.set()
    await asyncio.gather(*tasks)
    assert engine.batches == [["a", "b"], ["c", "d"], ["e"]]


async def test_a_failed_batch_fails_its_own_callers_and_the_next_batch_still_runs() -> None:
    engine = Engine(fail_on="bad")
    batcher = Batcher(engine, max_batch=2)
    engine.release.clear()
    failing = [asyncio.create_task(batcher.one(text)) for text in ["bad", "x"]]
    fine = asyncio.create_task(batcher.one("yyy"))
    await settle()
    engine.release.set()
    for task in failing:
        with pytest.raises(RuntimeError, match="engine failed"):
            await task
    assert float((await fine)[0]) == 3.0


async def test_a_caller_who_gave_up_is_left_out_and_the_others_get_their_vectors() -> None:
    engine = Engine()
    batcher = Batcher(engine)
    engine.release.clear()
    running = asyncio.create_task(batcher.one("a"))
    await settle()
    impatient = asyncio.create_task(batcher.one("gone"))
    patient = asyncio.create_task(batcher.one("kept"))
    await settle()
    impatient.cancel()
    await settle()
    engine.release.set()
    await running
    assert float((await patient)[0]) == 4.0
    assert impatient.cancelled()
    assert engine.batches == [["a"], ["kept"]]


async def test_closing_cancels_the_questions_still_waiting() -> None:
    engine = Engine()
    batcher = Batcher(engine)
    engine.release.clear()
    tasks = [asyncio.create_task(batcher.one(text)) for text in ["a", "b"]]
    await settle()
    await batcher.aclose()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)


async def test_e5_query_vectors_asked_at_once_equal_those_asked_alone() -> None:
    questions = ["How long is the password reset link valid?", "送料はいくらですか？",
                 "Когда обращение передаётся на вторую линию?", "Are monthly plans refunded?"] * 3
    embedder = E5Embedder()
    try:
        alone = [await embedder.embed_query(q) for q in questions]
        together = await asyncio.gather(*(embedder.embed_query(q) for q in questions))
    finally:
        await embedder.aclose()
    # Together they share a run, and so its int8 activation scale: the same vectors to a cosine of 0.997.
    assert (np.stack(together) * np.stack(alone)).sum(axis=1).min() > 0.997
