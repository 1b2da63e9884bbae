"""`python -m train.judge` reproduces a judge from ../shared: a tiny run (a few steps on a few pairs) lowers its
loss, writes a file the bot loads, and what ONNX Runtime computes from that file is what JAX trained; another
recipe over the same cache reuses the states of the pairs it shares."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.encoder.built import BUILDER_VERSION
from retrieval.encoder.judge import Judge, Pair, read_judge
from retrieval.encoder.runtime import E5Encoder
from train.judge.__main__ import version_name

ROOT = Path(__file__).resolve().parents[2]


def _train(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "train.judge", "--tiny", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """One tiny run, NoMIRACL read as groups: (its output folder, its cache folder, the run)."""
    folder = tmp_path_factory.mktemp("tiny")
    return folder / "judge", folder / "cache", _train("--nomiracl-groups", "4", "--out", str(folder / "judge"),
                                                      "--cache", str(folder / "cache"))


def test_a_tiny_training_lowers_its_loss_and_writes_a_judge_the_bot_loads(
        tiny: tuple[Path, Path, subprocess.CompletedProcess[str]], encoder: E5Encoder) -> None:
    out, _, run = tiny
    assert run.returncode == 0, run.stderr[-2000:]
    card = json.loads((out / "judge.json").read_text(encoding="utf-8"))
    metrics = card["trained"]["metrics"]
    assert metrics["last_loss"] < metrics["first_loss"]
    assert metrics["onnx_vs_jax_max_logit_diff"] < 0.05  # int8 weights in ONNX Runtime, float32 in JAX
    assert card["trained"]["command"].startswith("python -m train.judge --tiny --nomiracl-groups 4")
    # Named by the graph its states came from: retrained on another graph's, decision models fitted on this one's
    # logits are never applied to it.
    assert card["version"].endswith(f"-g{BUILDER_VERSION}")
    assert "-b8-" in card["version"]  # --tiny's batch, not the shipped 32 (below)
    assert metrics["nomiracl_groups"]["held_out"] > 0  # groups held out whole, scored by their best candidate
    judge = Judge(encoder, *read_judge(out))
    probabilities = judge.probabilities([Pair("How long is the link valid?", "The link is valid for 60 minutes."),
                                         Pair("送料はいくらですか？", "送料は550円です。", "配送")])
    assert probabilities.shape == (2,) and np.all((probabilities > 0) & (probabilities < 1))


def test_another_recipe_reuses_the_cached_states_of_the_pairs_it_shares(
        tiny: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path, encoder: E5Encoder) -> None:
    """One gold-removed negative a question instead of two, and the answer-token loss beside the judge's: every
    pair of it was in the first run, so none of the lower layers' states is computed again (the slow half of a
    run); the second loss trains, and the judge it writes loads without the answer-token reading (training only)."""
    _, cache, first = tiny
    assert first.returncode == 0, first.stderr[-2000:]
    run = _train("--nomiracl-groups", "4", "--other-paragraph", "1", "--span-weight", "1",
                 "--out", str(tmp_path / "judge"), "--cache", str(cache))
    assert run.returncode == 0, run.stderr[-2000:]
    (line,) = [x for x in run.stdout.splitlines() if "pairs cached" in x]
    cached, total = (int(n) for n in line.split("states: ")[1].split(" pairs")[0].split(" of "))
    assert cached == total > 0 and line.endswith(", 0 to compute"), line
    (tagged,) = [x for x in run.stdout.splitlines() if "tags: the answer's tokens found in" in x]
    found, answering = (int(n) for n in tagged.split("found in ")[1].split(" answering")[0].split(" of "))
    assert 0 < found <= answering
    card, tuned = read_judge(tmp_path / "judge")
    assert "-sp1-" in card.version and not any(name.startswith("head.tag.") for name in tuned)
    metrics = card.trained["metrics"]
    assert metrics["last_loss"] < metrics["first_loss"]  # both losses together
    Judge(encoder, card, tuned)


def test_another_order_of_the_batches_trains_another_judge_from_the_same_pairs_and_start(
        tiny: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """``--order-seed``: what a recipe's gain is measured against — the same pairs (no state computed again) and the
    same first weights, only the batches' order changed; a judge of its own name, whose weights differ."""
    out, cache, first = tiny
    assert first.returncode == 0, first.stderr[-2000:]
    run = _train("--nomiracl-groups", "4", "--order-seed", "5", "--out", str(tmp_path / "judge"), "--cache", str(cache))
    assert run.returncode == 0, run.stderr[-2000:]
    assert any(x.endswith(", 0 to compute") for x in run.stdout.splitlines())
    card, tuned = read_judge(tmp_path / "judge")
    first_card, first_tuned = read_judge(out)
    assert card.trained["data_digest"] == first_card.trained["data_digest"]
    assert card.trained["order_seed"] == 5 and "order_seed" not in first_card.trained
    assert card.version == first_card.version.replace("-b8-", "-o5-b8-")  # --tiny trains in batches of 8
    assert tuned.keys() == first_tuned.keys()
    assert any(not np.array_equal(tuned[k], first_tuned[k]) for k in tuned)


def test_a_run_stopped_by_sigterm_checkpoints_and_the_same_command_resumes_to_the_same_judge(
        tiny: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """A session's end or Ctrl-C: the step under way finishes, its checkpoint is written, the exit code names the
    signal and no judge is written; run again, the command goes on from that step and writes, to the bit, the
    judge of a run that was never stopped (the fixture's)."""
    out, cache, straight = tiny
    assert straight.returncode == 0, straight.stderr[-2000:]
    # The fixture's cache: its states are reused, and the fixture's run, never stopped, left no checkpoint.
    args = ["--tiny", "--nomiracl-groups", "4", "--out", str(tmp_path / "judge"), "--cache", str(cache)]
    process = subprocess.Popen([sys.executable, "-m", "train.judge", *args], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:  # the training loop has begun: its first step is under way or about to be
        if "train: from step 0 / " in line:
            process.send_signal(signal.SIGTERM)
            break
    rest, errors = process.communicate(timeout=600)
    assert process.returncode == 128 + signal.SIGTERM, errors[-2000:]
    (stopped,) = [x for x in rest.splitlines() if "train: stopped by SIGTERM at step " in x]
    at = int(stopped.split(" at step ")[1].split(" / ")[0])
    assert 0 < at < 40 and "the same command resumes" in stopped  # --tiny trains 40 steps
    assert not (tmp_path / "judge").exists()
    resumed = subprocess.run([sys.executable, "-m", "train.judge", *args], cwd=ROOT, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"train: resumed at step {at} / 40" in resumed.stdout
    _, tuned = read_judge(tmp_path / "judge")
    _, never_stopped = read_judge(out)
    assert tuned.keys() == never_stopped.keys()
    assert all(np.array_equal(tuned[k], never_stopped[k]) for k in tuned)


def test_tiny_refuses_to_overwrite_the_shipped_judge() -> None:
    run = _train()
    assert run.returncode == 2 and "--tiny would overwrite the shipped judge" in run.stderr


@pytest.mark.parametrize(("flags", "message"), [
    (("--nomiracl-groups", "9"), "--nomiracl-groups 9 is more than a batch holds"),
    (("--nomiracl-groups-beside", "80"), "--nomiracl-groups-beside needs --nomiracl-groups K"),
    (("--nomiracl", "some"), "'some' is not a count: give a whole number or 'all'"),
    (("--nomiracl", "-1"), "-1 is below 0: give a whole number or 'all'"),
])
def test_flags_that_cannot_train_are_refused_before_any_work(tmp_path: Path, flags: tuple[str, str],
                                                            message: str) -> None:
    run = _train(*flags, "--out", str(tmp_path / "judge"), "--cache", str(tmp_path / "cache"))
    assert run.returncode == 2 and message in run.stderr
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(("batch", "tags", "added"), [
    (32, "", ""),  # the shipped recipe: the very name its decision models were fitted for
    (8, "", "-b8"),  # the same pairs trained in other batches are another judge
    (32, "-sp1", "-sp1"),
    (64, "-alone-sp0.25", "-alone-sp0.25-b64"),
])
def test_the_version_names_every_setting_that_trains_another_judge(batch: int, tags: str, added: str) -> None:
    card, _ = read_judge()
    digest, epochs, lr = (str(card.trained[k]) for k in ("data_digest", "epochs", "lr"))
    name = version_name(digest, card.lower_layers, 0, float(epochs), float(lr), batch, tags)
    assert name == card.version.replace(f"-g{BUILDER_VERSION}", f"{added}-g{BUILDER_VERSION}")
