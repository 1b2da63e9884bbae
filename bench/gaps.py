"""Coverage gaps on shared data: do the desk's topics recover the articles the questions were asked about?

The question log: SQuAD-style questions whose paragraphs are "removed" (every question is a no-support
question), the article each was asked about being its true topic — XQuAD for English and Russian (the same
48 articles in both), JSQuAD for Japanese. Per language, 48 articles (all of XQuAD; a fixed sample of JSQuAD),
at most 12 questions each, all taken in a fixed order (sha1 of the id), so every run reads the same log.

A true topic is the question's paragraph (the gap a writer would fill) or, coarser, its article. The articles
are split in two halves by that order. The clustering threshold is chosen on the tuning half only (the best
mean adjusted Rand index over the three languages, on a grid), then the reported figures are measured on the
other half's articles, which the threshold never saw. The clustering and the vectors are the desk's
own: `bot.review.clustering.cluster` over e5 query vectors (`E5Embedder.embed_queries`), cached on disk
(`bench.common.CachedEmbedder`), so a second run embeds nothing.

    PYTHONPATH=. python -m bench.gaps          # writes the "gaps" section of docs/benchmarks.md
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from bench import data
from bench.common import CachedEmbedder, machine_line, table, write_section
from bench.metrics import adjusted_rand_index, purity
from bot.review.clustering import DEFAULT_THRESHOLD, cluster
from retrieval.embedders.local import E5Embedder

TOPICS = 48
PER_TOPIC = 12
GRID = tuple(round(0.70 + 0.005 * step, 3) for step in range(51))  # 0.700 … 0.950
BATCH = 64


@dataclass(frozen=True, slots=True)
class Log:
    """One language's question log, split into the tuning and the reported halves of its topics."""

    language: str
    source: str
    tune: tuple[list[str], list[str], list[str]]  # (questions, articles, paragraphs)
    report: tuple[list[str], list[str], list[str]]


def _order(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()


def question_log(dataset: data.Dataset, source: str) -> Log:
    titles = {document.document_id: document.title for document in dataset.documents}
    by_topic: dict[str, list[data.Query]] = defaultdict(list)
    for query in dataset.queries:
        (passage,) = query.gold
        by_topic[titles[passage]].append(query)
    chosen = sorted(by_topic, key=_order)[:TOPICS]
    halves: list[tuple[list[str], list[str], list[str]]] = [([], [], []), ([], [], [])]
    for position, topic in enumerate(chosen):
        questions, topics, paragraphs = halves[position % 2]
        for query in sorted(by_topic[topic], key=lambda q: _order(q.id))[:PER_TOPIC]:
            questions.append(query.text)
            topics.append(topic)
            paragraphs.append(next(iter(query.gold)))
    return Log(dataset.language, source, halves[0], halves[1])


async def vectors(embedder: CachedEmbedder, texts: list[str]) -> np.ndarray:
    parts = [await embedder.embed_queries(texts[start:start + BATCH]) for start in range(0, len(texts), BATCH)]
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


def scores(matrix: np.ndarray, topics: list[str], threshold: float) -> tuple[float, float, int]:
    groups = cluster(matrix, threshold)
    return purity(groups, topics), adjusted_rand_index(groups, topics), len(set(groups))


async def main() -> None:
    logs = [question_log(data.xquad("en"), "XQuAD en"), question_log(data.xquad("ru"), "XQuAD ru"),
            question_log(data.jsquad(), "JSQuAD valid")]
    embedder = CachedEmbedder(E5Embedder())
    try:
        started = time.perf_counter()
        tune = {log.language: await vectors(embedder, log.tune[0]) for log in logs}
        report = {log.language: await vectors(embedder, log.report[0]) for log in logs}
        embed_s = time.perf_counter() - started
    finally:
        await embedder.aclose()

    started = time.perf_counter()
    rows, sweeps, chosen_at = [], {}, {}
    for level, column in (("paragraph", 2), ("article", 1)):
        sweep = {t: {log.language: scores(tune[log.language], log.tune[column], t) for log in logs} for t in GRID}
        chosen = max(GRID, key=lambda t: (float(np.mean([sweep[t][lang][1] for lang in sweep[t]])), -t))
        own = {log.language: max(GRID, key=lambda t, lang=log.language: (sweep[t][lang][1], -t)) for log in logs}
        sweeps[level], chosen_at[level] = sweep, chosen
        for log in logs:
            topics = log.report[column]
            shared = scores(report[log.language], topics, chosen)
            alone = scores(report[log.language], topics, own[log.language])
            rows.append([level, log.language, log.source, len(topics), len(set(topics)), chosen, shared[2], shared[0],
                         shared[1], own[log.language], alone[2], alone[0], alone[1]])
    cluster_s = time.perf_counter() - started

    text = "\n".join([
        "## Coverage gaps: topics recovered from no-support questions (`bench/gaps.py`)",
        "",
        f"Machine: {machine_line()}. Question logs: SQuAD-style questions with their paragraphs removed (each is a "
        f"no-support question); {TOPICS} articles per language, at most {PER_TOPIC} questions each, in a fixed "
        "order. A true topic is the paragraph the question was asked about (what a writer would add: the gap), or, "
        "coarser, its article. The clustering (`bot/review/clustering.py`, average linkage on cosine similarity of "
        "e5 query vectors) is the desk's. Per level, the threshold is chosen on half of the articles (grid "
        f"{GRID[0]}–{GRID[-1]}, best mean ARI over the three languages: paragraph **{chosen_at['paragraph']}**, "
        f"article **{chosen_at['article']}**; the desk ships {DEFAULT_THRESHOLD}, the paragraph level's), and every "
        "figure below is measured on the other half's articles, which no threshold saw.",
        "",
        table(["true topic", "lang", "log", "questions", "true topics", "threshold", "groups", "purity", "ARI",
               "own-language threshold (tuning half)", "groups", "purity", "ARI"], rows),
        "",
        "Purity alone rewards many small groups (all singletons score 1.0): read it with the adjusted Rand index "
        "(1 = the true topics exactly, 0 = chance) and the number of groups.",
        "",
        "Threshold sweep on the tuning half (ARI en / ru / ja, paragraph level | article level):",
        "",
        table(["threshold", "en", "ru", "ja", "en", "ru", "ja"],
              [[t, *[sweeps[level][t][log.language][1] for level in ("paragraph", "article") for log in logs]]
               for t in GRID if round(t * 1000) % 10 == 0 and t >= 0.75]),
        "",
        f"Run time: embedding {embed_s:.0f} s (cached after the first run), clustering {cluster_s:.0f} s for the "
        f"sweeps of {len(GRID)} thresholds × 3 languages × 2 levels and the reported runs.",
    ])
    write_section("gaps", text)
    print(text)


if __name__ == "__main__":
    asyncio.run(main())
