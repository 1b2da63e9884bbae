"""Concurrent one-text embedding calls gathered into batch calls.

A burst of questions asks for many query vectors at once. Run one by one, each pays the engine's fixed cost
per call (a pass over every weight matrix, a dispatch per graph node) for a dozen tokens; run as one batch,
questions of similar length share runs. ``Batcher`` keeps the calls as they are (one text in, one
vector out): while a batch is being computed the next texts wait, and all of them go in the next batch. A lone
call goes at once, so a quiet bot answers as fast as before. Each text's vector is the same as alone: padding is
masked out of attention and the activations are quantized per token.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

MAX_BATCH = 32  # texts per call: ~500 query tokens, well under the engine's per-pass budget


class Batcher:
    """``await one(text)`` for each caller; ``run_batch(texts)`` (rows in order) computes them in batches."""

    def __init__(self, run_batch: Callable[[Sequence[str]], Awaitable[np.ndarray]], max_batch: int = MAX_BATCH) -> None:
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._waiting: list[tuple[str, asyncio.Future[np.ndarray]]] = []
        self._draining: asyncio.Task[None] | None = None

    async def one(self, text: str) -> np.ndarray:
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._waiting.append((text, future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.create_task(self._drain(), name="embed-batches")
        return await future

    async def _drain(self) -> None:
        while self._waiting:
            batch = [(t, f) for t, f in self._waiting[: self._max_batch] if not f.done()]  # done: its caller gave up
            del self._waiting[: self._max_batch]
            if not batch:
                continue
            try:
                vectors = await self._run_batch([text for text, _ in batch])
            except asyncio.CancelledError:
                for _, future in batch + self._waiting:
                    future.cancel()
                self._waiting.clear()
                raise
            except Exception as error:  # the callers of this batch get the error; the next batch still runs
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), vector in zip(batch, vectors, strict=True):
                if not future.done():
                    future.set_result(vector)

    async def aclose(self) -> None:
        """Stop computing: callers still waiting are cancelled."""
        if self._draining is not None and not self._draining.done():
            self._draining.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the cancellation asked for just above
                await self._draining
        for _, future in self._waiting:
            future.cancel()
        self._waiting.clear()
