"""The judge over harvested answers: each question's candidates scored once (cached), then the decision and the
quote it would give for any number of candidates and any threshold — what ``bench.answers`` reports and fits.

A harvest holds what the service found without a decision (sources, scored sentences); the judge reads the same
candidates the service would (``bot.answer.judge.candidates``), and the quote is composed as the service composes
it (``quote_order`` + ``compose_chosen``) and verified (``quotes.verify``), so a row's figures are the service's.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from bench.answering import Judged as Harvested
from bench.answering import quote_from_gold, quote_has_answer
from bench.common import CACHE
from bot.answer.extractive import ExtractiveConfig, compose_chosen
from bot.answer.judge import Judged, candidates, pairs, quote_order
from bot.answer.quotes import verify
from bot.answer.service import AnswerConfig
from retrieval.encoder.judge import Judge, pair_ids
from retrieval.encoder.runtime import length_groups

MAX_CANDIDATES = 4
COUNTS = (1, 2, 3, 4)  # candidate counts the bench compares (prefixes of the four scored)
RUN_TOKENS = 4096  # padded tokens per run of the judge (runs of similar length pad little)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the judge's decision gives a question with ``n`` candidates: the best probability and the quote."""

    probability: float  # the most probable candidate's (answer when >= the threshold)
    has_claims: bool  # a verified quote to show
    right: bool  # a quote from a gold passage
    has_span: bool  # … holding a gold answer span


def score(harvested: Sequence[Harvested], judge: Judge, name: str, threads: int = 2) -> list[list[float]]:
    """Each question's first ``MAX_CANDIDATES`` candidates' probabilities (cached by set and judge version)."""
    path = CACHE / "answers" / f"judge-{judge.version}-{name}.pickle"
    if path.exists():
        with open(path, "rb") as handle:
            return pickle.load(handle)  # our own cache, written below
    owners, all_ids = [], []
    for index, h in enumerate(harvested):
        scored = h.result.best_sentences
        chosen = candidates(scored, MAX_CANDIDATES)
        ids = pair_ids(judge.encoder.tokenizer, pairs(h.result.query, chosen, scored))
        owners += [index] * len(ids)
        all_ids += ids
    runs = length_groups([len(x) for x in all_ids], RUN_TOKENS)
    logits = np.zeros(len(all_ids))

    def run(members: list[int]) -> None:
        logits[members] = judge.logits([all_ids[i] for i in members])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(run, runs))
    probabilities = 1.0 / (1.0 + np.exp(-logits))
    out: list[list[float]] = [[] for _ in harvested]
    for owner, p in zip(owners, probabilities):
        out[owner].append(float(p))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        pickle.dump(out, handle)
    return out


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
