"""Train and measure the answer-or-abstain models (bot/answer/abstain_model.json).

    python -m bench.abstain [--quick]

1. All languages but Japanese: weights fitted on SQuAD 2.0 half (../shared/eval/data/squad2-dev-half, whose
   paragraphs have answerable and adversarially unanswerable questions), the questions of half of its
   articles run through the real answer service on Weaviate, plus those answerable questions asked again
   with their paragraph removed — the negatives a support bot mostly meets (nothing covers the question).
2. Japanese: JaQuAD dev, each question with its paragraph in the collection and with it removed.
3. Each threshold is the best balanced accuracy on its own training data.
4. Measured on data the models never saw: the other half of the SQuAD articles (answerable vs adversarial,
   the baseline's setting), and XQuAD ru/en and JSQuAD, each question asked with and without its paragraph.
Writes the models and the tables to docs/benchmarks.md (section "abstain").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from bench import data
from bench.answering import Judged, dataset_store, run_questions
from bench.common import (
    CachedEmbedder,
    bench_weaviate_config,
    machine_line,
    table,
    write_section,
)
from bench.metrics import percentile
from bot.answer.evidence import FEATURES, MODEL_PATH, AbstainModel, AbstainModels
from bot.answer.service import AnswerConfig, AnswerDeps
from retrieval.embedders.local import E5Embedder
from retrieval.language import detect_language
from retrieval.weaviate_server import connect

TARGETS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
EMBEDDER = "e5-small-q4"


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iterations: int = 50) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton's method (IRLS) with an L2 penalty on the weights."""
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    penalty = np.eye(d + 1) * l2
    penalty[-1, -1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        gradient = design.T @ (p - y) + penalty @ beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Area under the ROC curve (Mann-Whitney U), ties counted as half."""
    values = np.asarray(scores, dtype=float)
    positive = np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):  # average rank over each run of equal scores
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start : stop + 1]] = (start + stop) / 2 + 1
        start = stop + 1
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def margins(models: AbstainModels, judged: Sequence[Judged]) -> list[float]:
    """Each question's probability under the model for its language minus that model's threshold:
    answered iff >= 0 (-1 when there was no evidence at all)."""
    out = []
    for j in judged:
        model = models.for_query(EMBEDDER, detect_language(j.query.text))
        if model is None or j.result.evidence is None:
            out.append(-1.0)
        else:
            out.append(model.probability(j.result.evidence) - model.threshold)
    return out


def fit_model(judged: Sequence[Judged], languages: tuple[str, ...], trained_on: str) -> AbstainModel:
    """Logistic weights on ``judged`` (label: a shown quote holds the answer); threshold: best balanced accuracy."""
    x = np.array([j.result.evidence.vector() for j in judged])  # type: ignore[union-attr]
    y = np.array([1.0 if j.quote_has_answer else 0.0 for j in judged])
    mean, scale = x.mean(0), x.std(0) + 1e-9
    weights, bias = fit_logistic((x - mean) / scale, y)
    model = AbstainModel(EMBEDDER, tuple(map(float, mean)), tuple(map(float, scale)), tuple(map(float, weights)),
                         bias, 0.5, trained_on, languages)
    # The model's threshold is 0.5 here, so the best margin threshold t is probability 0.5 + t.
    threshold = 0.5 + best_balanced(judged, margins(AbstainModels((model,)), judged))["threshold"]
    return replace(model, threshold=float(threshold))


def curve_point(judged: Sequence[Judged], probs: Sequence[float], threshold: float) -> dict[str, float]:
    """Baseline-comparable figures at a threshold (see ../shared/eval/BASELINES.md section 2)."""
    answered = [j for j, p in zip(judged, probs) if p >= threshold]
    answerable = [j for j in judged if j.query.answerable and not j.gold_removed]
    unanswerable = [j for j in judged if not j.query.answerable or j.gold_removed]
    ans_ids = {id(j) for j in answered}
    correct_para = sum(1 for j in answered if j.query.answerable and j.gold_at_1)
    correct_quote = sum(1 for j in answered if j.quote_has_answer)
    gold1 = sum(1 for j in answerable if id(j) in ans_ids and j.gold_at_1) / max(1, len(answerable))
    abstained = sum(1 for j in unanswerable if id(j) not in ans_ids) / max(1, len(unanswerable))
    return {
        "threshold": threshold, "answered": len(answered) / max(1, len(judged)), "gold@1": gold1, "abstained": abstained,
        "balanced_acc": (gold1 + abstained) / 2,
        "precision_paragraph": correct_para / len(answered) if answered else float("nan"),
        "precision_quote": correct_quote / len(answered) if answered else float("nan"),
        "quote_coverage": correct_quote / max(1, len(answerable)),
    }


def best_balanced(judged: Sequence[Judged], probs: Sequence[float]) -> dict[str, float]:
    grid = sorted(set(round(p, 4) for p in probs))
    return max((curve_point(judged, probs, t) for t in grid[:: max(1, len(grid) // 400)]), key=lambda c: c["balanced_acc"])


def at_precision(judged: Sequence[Judged], probs: Sequence[float], target: float, key: str) -> dict[str, float] | None:
    """The lowest threshold whose answered precision reaches ``target``."""
    for t in sorted(set(round(p, 3) for p in probs)):
        point = curve_point(judged, probs, t)
        if point["answered"] > 0.005 and point[key] >= target:
            return point
    return None


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    limit = 300 if args.quick else None
    embedder = CachedEmbedder(E5Embedder())
    handle = await connect(bench_weaviate_config(slot=1))
    started = time.perf_counter()
    try:
        squad = data.squad2()
        store = await dataset_store(handle, squad, embedder)
        deps = AnswerDeps(store=store, embedder=embedder, config=AnswerConfig(), abstain_models=AbstainModels())
        titles = sorted({d.title for d in squad.documents})
        train_titles = set(titles[::2])
        passage_title = {d.document_id: d.title for d in squad.documents}
        queries = squad.queries[:limit] if limit else squad.queries
        judged = await run_questions(deps, store, queries)
        print(f"squad2 answered through the service: {len(judged)} in {time.perf_counter() - started:.0f} s", flush=True)
        train = [j for j in judged if passage_title[next(iter(j.query.gold))] in train_titles and j.result.evidence]
        test = [j for j in judged if passage_title[next(iter(j.query.gold))] not in train_titles]

        # Others than Japanese: SQuAD's training half, plus its answerable questions asked with their
        # paragraph removed (the easy negatives SQuAD lacks).
        removed = await run_questions(deps, store, [j.query for j in train if j.query.answerable], remove_gold=True)
        default = fit_model([j for j in train + removed if j.result.evidence], (),
                            f"{len(train)} questions of squad2-dev-half (half its articles) and its "
                            f"{len(removed)} answerable ones with their paragraph removed")
        # Japanese: JaQuAD dev, each question with its paragraph and with it removed.
        jaquad = data.jaquad()
        jstore = await dataset_store(handle, jaquad, embedder)
        jq = jaquad.queries[: (limit or 1500)]
        ja_judged = await run_questions(deps, jstore, jq) + await run_questions(deps, jstore, jq, remove_gold=True)
        japanese = fit_model([j for j in ja_judged if j.result.evidence], ("ja",),
                             f"{len(jq)} jaquad-dev questions, each with and without its paragraph")
        models = AbstainModels((default, japanese))
        test_probs = margins(models, test)

        transfer: dict[str, tuple[list[Judged], list[float]]] = {}
        for dataset in (data.xquad("en"), data.xquad("ru"), data.jsquad()):
            tstore = await dataset_store(handle, dataset, embedder)
            qs = dataset.queries[: (limit or 1190)]
            both = await run_questions(deps, tstore, qs) + await run_questions(deps, tstore, qs, remove_gold=True)
            transfer[dataset.name] = (both, margins(models, both))
            print(f"  {dataset.name}: {len(both)} judged", flush=True)
    finally:
        await embedder.aclose()
        await handle.close()

    if not args.quick:
        MODEL_PATH.write_text(json.dumps({"models": [m.to_json() for m in models.models]}, indent=1) + "\n",
                              encoding="utf-8")
    write_report(models, test, test_probs, transfer, args.quick)


def write_report(models: AbstainModels, test: list[Judged], probs: list[float],
                 transfer: dict[str, tuple[list[Judged], list[float]]], quick: bool) -> None:
    labels_answerable = [j.query.answerable for j in test]
    labels_correct = [j.quote_has_answer for j in test]
    model = models.for_query(EMBEDDER, "en")
    assert model is not None
    at_t = curve_point(test, probs, 0.0)
    best = best_balanced(test, probs)
    single = [j.result.evidence.top_similarity if j.result.evidence else 0.0 for j in test]
    parts = [
        "## Answer or abstain (`python -m bench.abstain`)",
        "",
        f"Machine: {machine_line()}. The real answer service (e5, Weaviate hybrid, local reranker, extractive "
        "composer) over squad2-dev-half; the logistic model over "
        f"{', '.join(FEATURES)}: for all languages but Japanese fitted on {model.trained_on}; for Japanese on "
        f"{' '.join(m.trained_on for m in models.models if m.languages)}. Each threshold is the best balanced "
        "accuracy on its own training data; thresholds below are shown as the margin over it (0 = the shipped one). "
        "Everything is measured on the other half of the SQuAD articles, or on other datasets. *gold@1*, *abstained*, "
        "*answered precision (paragraph)* are defined as in ../shared/eval/BASELINES.md §2; *answered precision "
        "(quote)* is stricter: a shown quote contains a gold answer.",
        "",
        table(["signal", "AUROC answerable vs not", "AUROC quote correct", "best balanced acc", "at threshold",
               "gold@1", "abstained", "precision (paragraph)", "precision (quote)"],
              [["baseline B: best sentence max-sim (BASELINES.md)", 0.660, "-", 0.595, 0.8866, 0.440, 0.750, 0.587, "-"],
               ["best sentence similarity alone (ours)", auroc(single, labels_answerable), auroc(single, labels_correct),
                best_balanced(test, single)["balanced_acc"], "-", "-", "-", "-", "-"],
               ["learned model, best threshold on this half", auroc(probs, labels_answerable), auroc(probs, labels_correct),
                best["balanced_acc"], best["threshold"], best["gold@1"], best["abstained"], best["precision_paragraph"],
                best["precision_quote"]],
               ["learned model, shipped threshold", "", "", at_t["balanced_acc"], 0.0, at_t["gold@1"],
                at_t["abstained"], at_t["precision_paragraph"], at_t["precision_quote"]]]),
        "",
        "Curve (held-out SQuAD half): lowest threshold reaching each answered precision (paragraph / quote).",
        "",
    ]
    rows = []
    for key in ("precision_paragraph", "precision_quote"):
        for target in TARGETS:
            point = at_precision(test, probs, target, key)
            rows.append([key.split("_")[1], target] + (["unreachable"] + [""] * 4 if point is None else
                        [point["threshold"], point["answered"], point["gold@1"], point["abstained"], point["quote_coverage"]]))
    parts.append(table(["precision of", "target", "threshold", "answered", "gold@1", "abstained", "answers quoted right"], rows))
    parts += ["", "Transfer at the shipped threshold (each question asked with its paragraph, then with it removed):", ""]
    trows = []
    for name, (judged, p) in transfer.items():
        point = curve_point(judged, p, 0.0)
        best_t = best_balanced(judged, p)
        trows.append([name, len(judged) // 2, auroc(p, [not j.gold_removed for j in judged]), point["gold@1"],
                      point["abstained"], point["balanced_acc"], point["precision_paragraph"], point["precision_quote"],
                      best_t["balanced_acc"]])
    parts.append(table(["dataset", "questions", "AUROC present vs removed", "gold@1", "abstained (removed)",
                        "balanced acc", "precision (paragraph)", "precision (quote)", "best balanced acc (oracle threshold)"],
                       trows))
    totals = [j.result.timings_ms["total"] for j in test]
    parts += ["", f"Answer latency over these questions: p50 {percentile(totals, 50):.0f} ms, p95 {percentile(totals, 95):.0f} ms."]
    text = "\n".join(parts)
    if not quick:
        write_section("abstain", text)
    print(text)


if __name__ == "__main__":
    asyncio.run(main())
