"""e5 on ONNX Runtime against the wheel's engine, text by text, on samples of every shared set.

    python -m bench.e5_agreement [--per-set N]

For each set, the first N passages (``passage:`` mode) and the first N questions (``query:`` mode), in every
language the set has: are the token ids the engine's (equal, or an exact tie: the same pieces in another order,
see retrieval.encoder.tokenizer), and how close are the vectors (cosine to the engine's, for the int8 graph that
ships, the wheel's 4-bit blocks and float32). Writes docs/benchmarks.md, section "e5-agreement".
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from bench import data
from bench.common import machine_line, table, write_section
from bench.wheel_engine import WheelEngine
from retrieval.encoder.runtime import E5Encoder
from retrieval.encoder.weights import Weights

SETS = {
    "xquad-en": lambda: data.xquad("en"), "xquad-ru": lambda: data.xquad("ru"), "jsquad": data.jsquad,
    "jaquad": data.jaquad, "squad2": data.squad2, "scifact": data.scifact, "mtrag": data.mtrag,
    "nomiracl": lambda: data.nomiracl(per_language=40),
}


def texts_of(name: str, per_set: int) -> dict[str, list[str]]:
    dataset = SETS[name]()
    return {"passage": [d.text for d in dataset.documents[:per_set]],
            "query": [q.text for q in dataset.queries[:per_set]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-set", type=int, default=300, help="passages and questions per set (default 300)")
    args = parser.parse_args()
    wheel = WheelEngine()
    encoders = {weights: E5Encoder(weights=weights, threads=2) for weights in (Weights.INT8, Weights.Q4, Weights.FP32)}
    rows, everything = [], {w: [] for w in encoders}
    for name in SETS:
        for mode, texts in texts_of(name, args.per_set).items():
            ours = encoders[Weights.INT8].tokenizer.content_ids(texts, mode)
            theirs = [wheel.content_ids(text, mode) for text in texts]
            equal = sum(a == b for a, b in zip(ours, theirs))
            ties = sum(a != b and Counter(a) == Counter(b) for a, b in zip(ours, theirs))
            reference = np.asarray(getattr(wheel.model, mode)(texts), np.float32)
            cosines = {w: (e.embed(texts, mode) * reference).sum(axis=1) for w, e in encoders.items()}
            for w, c in cosines.items():
                everything[w].append(c)
            int8, q4, fp32 = cosines[Weights.INT8], cosines[Weights.Q4], cosines[Weights.FP32]
            rows.append([name, mode, len(texts), equal, ties, len(texts) - equal - ties,
                         f"{int8.min():.4f}", f"{np.percentile(int8, 1):.4f}", f"{np.median(int8):.4f}",
                         f"{q4.min():.5f}", f"{fp32.min():.5f}"])
            print(rows[-1], flush=True)
    every = {w: np.concatenate(c) for w, c in everything.items()}
    shipped = every[Weights.INT8]
    text = "\n\n".join([
        "## e5 on ONNX Runtime against the wheel's engine (`python -m bench.e5_agreement`)",
        f"Measured on: {machine_line()}",
        (f"The first {args.per_set} passages and questions of each set (NoMIRACL: 40 queries in each of its six "
         "languages, their passages), every language it has. *tokens*: texts whose token ids equal the engine's / "
         "an exact tie (the same pieces in another order: equal scores, which the engine breaks by float32 "
         "rounding) / anything else. *cosine*: to the engine's vector, for the graph that ships (int8 weights and "
         "activations, the FFN's output projection float32), the wheel's own 4-bit blocks and float32."),
        table(["set", "mode", "texts", "tokens equal", "ties", "other", "cosine int8 (ships) min", "p1", "median",
               "4-bit min", "fp32 min"], rows),
        (f"Over all {len(shipped)} texts, int8 (ships): cosine min {shipped.min():.4f}, p0.1 "
         f"{np.percentile(shipped, 0.1):.4f}, p1 {np.percentile(shipped, 1):.4f}, median {np.median(shipped):.4f}; "
         f"4-bit min {every[Weights.Q4].min():.5f}; float32 min {every[Weights.FP32].min():.5f}."),
    ])
    write_section("e5-agreement", text)
    print(text)
    for encoder in encoders.values():
        encoder.close()


if __name__ == "__main__":
    main()
