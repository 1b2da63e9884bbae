"""The answer judge, run off the event loop: pairs in, probabilities out (``retrieval.encoder.judge`` says what
it reads and how it was trained).

It runs on the e5 embedder's worker thread, on the embedder's model file and tokenizer: one copy of e5's weights
in memory, and the judge's few questions a second queue behind queries as they do behind document batches.
"""

from __future__ import annotations

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
        self._judge: Judge | None = None  # built on the worker thread, at the first question

    @property
    def version(self) -> str:
        return self.card.version

    async def probabilities(self, pairs: Sequence[Pair]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, np.float32)
        batch = list(pairs)
        return await self._embedder.on_encoder(lambda encoder: self._on_worker(encoder).probabilities(batch))

    def _on_worker(self, encoder: E5Encoder) -> Judge:
        if self._judge is None:
            self._judge = Judge(encoder, self.card, self._tuned)
        return self._judge


__all__ = ["JudgeCard", "LocalJudge"]
