"""The judge as the service runs it: beside the embedder's worker, the passes of many questions at once, each
giving what it gives alone (a burst's questions must not read each other's pairs or build the judge twice)."""

from __future__ import annotations

import asyncio

import numpy as np

from retrieval.embedders.local import E5Embedder
from retrieval.encoder.judge import Pair
from retrieval.judging import LocalJudge

QUESTIONS = [  # (question, candidates): en, ja, ru; one answers, one is only about it
    ("How long is a password reset link valid?",
     ["The reset link is valid for 60 minutes.", "You can reset your password from the sign-in page."]),
    ("返品は何日以内に受け付けますか？", ["返品は商品到着後14日以内に受け付けます。", "返品の際は注文番号をご用意ください。"]),
    ("Когда обращение передаётся на вторую линию?",
     ["Обращение передаётся на вторую линию, если оно не решено в течение 2 часов.",
      "Первая линия отвечает на звонки и письма клиентов."]),
]


async def test_questions_judged_at_once_get_what_each_gets_alone(embedder: E5Embedder) -> None:
    judge = LocalJudge(embedder)  # not yet built: the first questions, all at once, build it together
    batches = [[Pair(question, c, "Help") for c in candidates] for question, candidates in QUESTIONS] * 3
    *together, _ = await asyncio.gather(*(judge.probabilities(b) for b in batches),  # and a question embedded
                                        embedder.embed_query("How long is a password reset link valid?"))
    alone = [await judge.probabilities(b) for b in batches]
    for at_once, by_itself in zip(together, alone, strict=True):
        assert np.array_equal(at_once, by_itself)
    assert all(right > wrong for right, wrong in alone)  # each answering sentence above its near miss
