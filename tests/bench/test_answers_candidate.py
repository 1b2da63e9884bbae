"""``python -m bench.answers --judge FOLDER``: a judge that does not ship yet, measured as it would ship. Its
question-level table reads each language's FIT questions only, and a folder without a readable judge is refused at
once, with advice that writes the folder again (not the shipped judge)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.answers import EMBEDDER, Row, question_aucs
from bot.answer.evidence import FEATURES, AbstainModel, AbstainModels
from tests.bench.builders import row

ROOT = Path(__file__).resolve().parents[2]

# A features model that reads the first feature only, so each row's features probability is set by one number.
MODELS = AbstainModels((AbstainModel(EMBEDDER, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES),
                                     (1.0,) + (0.0,) * (len(FEATURES) - 1), 0.0, 0.5),))


def _q(right: bool, judge: float, feature: float, language: str = "en", split: str = "fit", thread: bool = False,
       ) -> tuple[Row, float]:
    features = [feature] + [0.0] * (len(FEATURES) - 1)
    return row(right, right, right, language=language, split=split, thread=thread, features=features), judge


# English: the judge orders right answers first, the features last. The REPORT and thread rows, ordered the other
# way, must not count; Russian has right answers only (no AUROC to give); Japanese one of each.
JUDGED = [
    _q(True, 0.9, -2.0), _q(True, 0.8, -1.0), _q(False, 0.7, 1.0), _q(False, 0.2, 2.0),
    _q(False, 0.99, -3.0, split="report"), _q(False, 0.99, -3.0, thread=True),
    _q(True, 0.6, 0.0, language="ru"), _q(True, 0.5, 0.0, language="ru"),
    _q(True, 0.3, 1.0, language="ja"), _q(False, 0.4, -1.0, language="ja"),
]


def test_each_language_reads_its_own_fit_questions() -> None:
    assert question_aucs(JUDGED, MODELS) == [["en", 4, 1.0, 0.0], ["ja", 2, 0.0, 1.0]]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench.answers", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("card", "says"), [
    (None, "no judge.json there; write one with `python -m train.judge --out {folder}`"),
    ("{}", "cannot read the judge's card {folder}/judge.json (KeyError: 'version'); write it again with "
           "`python -m train.judge --out {folder}`"),
    ('{"version": "v", "lower_layers": 9, "threshold": 0.5, "candidates": 1}',
     "cannot read the judge's weights {folder}/judge.npz"),
])
def test_a_folder_without_a_readable_judge_is_refused_before_any_work(tmp_path: Path, card: str | None, says: str,
                                                                     ) -> None:
    if card is not None:
        (tmp_path / "judge.json").write_text(card, encoding="utf-8")
    done = _bench("--judge", str(tmp_path))
    assert done.returncode == 2
    assert says.format(folder=tmp_path) in done.stderr
    assert "reinstall" not in done.stderr and f"--out {tmp_path}`" in done.stderr  # never the shipped judge's fix
    assert done.stdout == ""


@pytest.mark.parametrize("other", ["--keep-model", "--harvest-only"])
def test_a_candidate_judge_is_measured_alone(tmp_path: Path, other: str) -> None:
    """``--keep-model`` reports the shipped decision and ``--harvest-only`` none: with ``--judge`` either would
    silently drop the candidate."""
    done = _bench("--judge", str(tmp_path), other)
    assert done.returncode == 2
    assert "not allowed with argument" in done.stderr and done.stdout == ""
