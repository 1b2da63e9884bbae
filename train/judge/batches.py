"""How ``train.judge`` feeds its pairs to JAX: units (a pair alone, or a NoMIRACL group's pairs, which the loss reads
at their highest logit), batched whole by similar length, padded to a few shapes."""

from __future__ import annotations

import numpy as np

from train.judge.data import Example


def units(examples: list[Example], indices: np.ndarray) -> list[np.ndarray]:
    """What the loss reads one logit of: a pair alone, or a NoMIRACL group's pairs together (its highest)."""
    groups: dict[str, list[int]] = {}
    alone = []
    for i in indices:
        if examples[i].group:
            groups.setdefault(examples[i].group, []).append(int(i))
        else:
            alone.append(np.array([i]))
    return alone + [np.array(v) for _, v in sorted(groups.items())]


def batches(lengths: np.ndarray, units: list[np.ndarray], size: int, rng: np.random.Generator) -> list[list[int]]:
    """Batches of units (at most ``size`` pairs each) of similar length (less padding), in random order."""
    longest = np.array([lengths[u].max() for u in units]) + rng.random(len(units))
    out, current, rows = [], [], 0
    for u in np.argsort(longest, kind="stable"):
        if rows + len(units[u]) > size:
            out.append(current)
            current, rows = [], 0
        current.append(int(u))
        rows += len(units[u])
    out.append(current)
    rng.shuffle(out)
    return out


def pad(states: list[np.ndarray], batch: np.ndarray, rows: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """States and mask of ``batch``'s pairs, to ``rows`` rows (a padding row holds one masked-in zero token)."""
    length = -(-max(len(states[i]) for i in batch) // 32) * 32  # a few shapes only: few recompilations
    x = np.zeros((max(rows, len(batch)), length, states[batch[0]].shape[1]), np.float32)
    mask = np.zeros(x.shape[:2], np.float32)
    mask[:, 0] = 1.0
    for row, i in enumerate(batch):
        x[row, :len(states[i])] = states[i]
        mask[row, :len(states[i])] = 1.0
    return x, mask


def pad_tags(tags: list[np.ndarray | None], batch: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``batch``'s answer-token tags padded to ``shape`` (``pad``'s mask's) and whether each row has any."""
    out = np.zeros(shape, np.float32)
    tagged = np.zeros(shape[0], np.float32)
    for row, i in enumerate(batch):
        if tags[i] is not None:
            out[row, :len(tags[i])] = tags[i]
            tagged[row] = 1.0
    return out, tagged


def unit_batch(units: list[np.ndarray], chosen: list[int], labels: np.ndarray, size: int,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A batch's pairs, each pair's unit (padding rows: unit ``size``, never read), each unit's label and
    whether it is real."""
    rows = np.concatenate([units[u] for u in chosen])
    segment = np.full(size, size, np.int32)
    segment[:len(rows)] = np.repeat(np.arange(len(chosen)), [len(units[u]) for u in chosen])
    unit_labels = np.zeros(size + 1, np.float32)
    unit_labels[:len(chosen)] = [labels[units[u][0]] for u in chosen]
    real = np.zeros(size + 1, bool)
    real[:len(chosen)] = True
    return rows, segment, unit_labels, real


def group_max(scores: np.ndarray, examples: list[Example], indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each group's highest score and its label, over the groups among ``indices`` (scores in their order)."""
    best: dict[str, float] = {}
    label: dict[str, float] = {}
    for score, i in zip(scores, indices):
        key = examples[i].group
        best[key] = max(best.get(key, -np.inf), float(score))
        label[key] = examples[i].label
    return np.array(list(best.values())), np.array([label[k] for k in best])
