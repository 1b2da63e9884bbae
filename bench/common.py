"""Shared bench plumbing: a bench Weaviate, a vector cache, and writing tables into docs/benchmarks.md."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from retrieval.embedders import Embedder
from retrieval.encoder.built import BUILDER_VERSION
from retrieval.weaviate_config import WeaviateConfig

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
BENCHMARKS_MD = ROOT / "docs" / "benchmarks.md"


def bench_weaviate_config(slot: int = 0) -> WeaviateConfig:
    """A bench's own embedded Weaviate: its own data folder and ports, so it never touches yours.

    Benches that may run at the same time use different slots (each server owns its data folder).
    """
    return WeaviateConfig(
        url=None, grpc_url=None, api_key=None, data_dir=CACHE / ("weaviate" if slot == 0 else f"weaviate-{slot}"),
        binary_dir=Path(os.environ.get("WEAVIATE_BINARY_DIR", "~/.cache/weaviate-embedded")).expanduser(),
        port=8131 + slot, grpc_port=50131 + slot, startup_timeout_s=120,
    )


class CachedEmbedder:
    """An embedder whose document/query vectors are cached on disk by text, so quality sweeps re-embed nothing.

    Only quality runs use it; throughput is always measured with the bare embedder.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        CACHE.mkdir(parents=True, exist_ok=True)
        # Benches may run side by side and share the cache: wait for a writer rather than fail.
        # One cache per engine too: ONNX Runtime's int8 vectors differ from the wheel's in the third decimal; and per
        # graph version and int8 kernel, which change them as much (the disk outlives a session's machine).
        self.engine = engine = getattr(inner, "engine", "wheel")
        label = inner.name if engine == "wheel" else f"{inner.name}-{engine}-{graph_label()}"
        self._db = sqlite3.connect(CACHE / f"vectors-{re.sub(r'[^A-Za-z0-9_.-]', '_', label)}.sqlite3", timeout=120)
        self._db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, v BLOB)")

    def _keys(self, kind: str, texts: Sequence[str]) -> list[str]:
        return [hashlib.sha1(f"{kind}\x1f{t}".encode()).hexdigest() for t in texts]

    async def _cached(self, kind: str, texts: Sequence[str]) -> np.ndarray:
        keys = self._keys(kind, texts)
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self._db.execute(f"SELECT k, v FROM v WHERE k IN ({','.join('?' * len(part))})", part).fetchall()
            found.update({k: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            if kind == "q" and hasattr(self.inner, "embed_queries"):
                fresh = await self.inner.embed_queries([texts[i] for i in missing])
            elif kind == "q":
                fresh = np.stack([await self.inner.embed_query(texts[i]) for i in missing])
            else:
                fresh = await self.inner.embed_documents([texts[i] for i in missing])
            self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)",
                                 [(keys[i], fresh[j].astype(np.float32).tobytes()) for j, i in enumerate(missing)])
            self._db.commit()
            found.update({keys[i]: fresh[j] for j, i in enumerate(missing)})
        return np.stack([found[k] for k in keys]).astype(np.float32)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await self._cached("d", texts)

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self._cached("q", [text]))[0]

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query-mode vectors for many texts, embedded in one batch when the inner embedder can (e5 can)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await self._cached("q", texts)

    async def aclose(self) -> None:
        self._db.close()
        await self.inner.aclose()


def _cpu() -> tuple[str, set[str]]:
    """The CPU's model name and flags (none where there is no /proc/cpuinfo to read)."""
    model, flags = platform.processor() or platform.machine(), set()
    with contextlib.suppress(OSError):  # not Linux: the platform's name is all there is
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    return model, flags


def int8_kernel(flags: set[str], machine: str) -> str:
    """Which int8 dot products ONNX Runtime computes with on a CPU of these flags: VNNI's add in 32 bits, AVX2's
    (VPMADDUBSW) add pairs in 16, which 8-bit weights saturated (docs/benchmarks.md, "7-bit weights"); the graphs of
    builder version 3 and before computed other vectors on each, and their float kernels still differ."""
    if flags & {"avx512_vnni", "avx_vnni"}:
        return "vnni"
    return "avx2" if "avx2" in flags else machine


def this_int8_kernel() -> str:
    """``int8_kernel`` of this machine's CPU."""
    return int8_kernel(_cpu()[1], platform.machine())


def graph_label() -> str:
    """What names the vectors this machine's e5 graph computes: the graph's version and the CPU's int8 kernel."""
    return f"b{BUILDER_VERSION}-{this_int8_kernel()}"


def cpu_model() -> str:
    """The CPU's model name and the vector extensions its kernels can use (these machines differ by session)."""
    model, flags = _cpu()
    wanted = ["avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "amx_bf16"]
    return f"{model} ({' '.join(f for f in wanted if f in flags) or 'no AVX2'})"


def machine_line() -> str:
    return f"{os.cpu_count()} CPU cores, {cpu_model()}, {platform.machine()}, Python {platform.python_version()}"


def write_section(name: str, markdown: str) -> None:
    """Replace the section between this bench's markers in docs/benchmarks.md (other benches' stay)."""
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    block = f"{start}\n{markdown.rstrip()}\n{end}"
    text = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else "# Benchmarks\n"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    BENCHMARKS_MD.parent.mkdir(parents=True, exist_ok=True)
    BENCHMARKS_MD.write_text(text, encoding="utf-8")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
