"""The judge over harvested answers: each question's candidates scored once (cached), then the decision and the
quote it would give at a candidate count and any threshold — what ``bench.answers`` reports and fits.

A harvest holds what the service found without a decision (sources, scored sentences); the judge reads the same
candidates the service would (``bot.answer.judge.candidates``), in one run of their own as the service runs them,
and the quote is composed as the service composes it (``quote_order`` + ``compose_chosen``) and verified
(``quotes.verify``), so a row's figures are the service's.

Why a run of their own: the judge's int8 graph quantizes its activations per tensor, so a pair's logit depends on
the pairs it shares a run with. Scored in runs of ~4096 tokens (as this bench did until 2026-12-05), a pair's
logit differed from the one the service computes for it alone by 0.16 on average, 0.45 at the 95th percentile and
up to 1.1 (576 XQuAD-en and JSQuAD questions, docs/benchmarks.md): the decision was fitted on logits the service
never sees.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.answering import Judged as Harvested
from bench.answering import quote_from_gold, quote_has_answer
from bench.common import CACHE
from bot.answer.extractive import ExtractiveConfig, compose_chosen
from bot.answer.judge import Judged, candidates, pairs, quote_order
from bot.answer.quotes import verify
from bot.answer.service import AnswerConfig
from retrieval.encoder.judge import Judge

# The candidate counts the bench scores: each count is a scoring pass of its own (its pairs run together, as the
# service runs them), about 8 minutes for the shared sets at one candidate on 2 cores of an AMD EPYC. 1 ships
# (bench/answers.py says why); the figures of 2-4, from the earlier batched scoring, are in docs/benchmarks.md.
COUNTS = (1,)


def score(harvested: Sequence[Harvested], judge: Judge, name: str, count: int, threads: int = 2,
          cache: Path = CACHE / "answers") -> list[list[float]]:
    """Each question's first ``count`` candidates' probabilities, the candidates of a question in one run of their
    own (cached in ``cache`` by set, judge version and weights, and count)."""
    path = cache / f"judge-{judge.version}-{judge.weights[:12]}-{name}-served{count}.pickle"
    if path.exists():
        with open(path, "rb") as handle:
            return pickle.load(handle)  # our own cache, written below

    def run(h: Harvested) -> list[float]:
        scored = h.result.best_sentences
        return [float(p) for p in judge.probabilities(pairs(h.result.query, candidates(scored, count), scored))]

    with ThreadPoolExecutor(threads) as pool:
        out = list(pool.map(run, harvested))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        pickle.dump(out, handle)
    return out


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the judge's decision gives a question with ``n`` candidates: the best probability and the quote."""

    probability: float  # the most probable candidate's (answer when >= the threshold)
    has_claims: bool  # a verified quote to show
    right: bool  # a quote from a gold passage
    has_span: bool  # … holding a gold answer span


def outcome(h: Harvested, probabilities: Sequence[float], n: int, margin: float = AnswerConfig().judge_margin,
            config: ExtractiveConfig = ExtractiveConfig()) -> Outcome:
    """The service's judged path for ``h`` with its first ``n`` candidates."""
    scored = h.result.best_sentences
    chosen = candidates(scored, n)
    judged = [Judged(s, p) for s, p in zip(chosen, probabilities[:n])]
    if not judged:
        return Outcome(0.0, False, False, False)
    claims = verify(compose_chosen(quote_order(judged, margin), scored, config), h.result.sources).claims
    return Outcome(max(j.probability for j in judged), bool(claims), quote_from_gold(h.query, h.gold_removed, claims),
                   quote_has_answer(h.query, h.gold_removed, claims))
