"""`python -m train.judge` reproduces a judge from ../shared: a tiny run (a few steps on a few pairs) lowers its
loss, writes a file the bot loads, and what ONNX Runtime computes from that file is what JAX trained."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from retrieval.encoder.judge import Judge, Pair, read_judge
from retrieval.encoder.runtime import E5Encoder

ROOT = Path(__file__).resolve().parents[2]


def test_a_tiny_training_lowers_its_loss_and_writes_a_judge_the_bot_loads(tmp_path: Path, encoder: E5Encoder) -> None:
    out = tmp_path / "judge"
    run = subprocess.run([sys.executable, "-m", "train.judge", "--tiny", "--out", str(out), "--cache",
                          str(tmp_path / "cache")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    card = json.loads((out / "judge.json").read_text(encoding="utf-8"))
    metrics = card["trained"]["metrics"]
    assert metrics["last_loss"] < metrics["first_loss"]
    assert metrics["onnx_vs_jax_max_logit_diff"] < 0.05  # int8 weights in ONNX Runtime, float32 in JAX
    assert card["trained"]["command"].startswith("python -m train.judge --tiny")
    judge = Judge(encoder, *read_judge(out))
    probabilities = judge.probabilities([Pair("How long is the link valid?", "The link is valid for 60 minutes."),
                                         Pair("送料はいくらですか？", "送料は550円です。", "配送")])
    assert probabilities.shape == (2,) and np.all((probabilities > 0) & (probabilities < 1))


def test_tiny_refuses_to_overwrite_the_shipped_judge() -> None:
    run = subprocess.run([sys.executable, "-m", "train.judge", "--tiny"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and "--tiny would overwrite the shipped judge" in run.stderr
