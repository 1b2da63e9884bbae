"""The answer-token teacher (``--span-weight``): which of an answering pair's tokens hold its answer, found in the
tokens the judge reads (``pair_ids``' layout), in English, Russian and Japanese; none where the answer is absent
or was cut off with the candidate's end."""

from __future__ import annotations

import pytest

from retrieval.encoder.judge import CANDIDATE_TOKENS, Pair, pair_ids
from retrieval.encoder.runtime import E5Encoder
from retrieval.encoder.tokenizer import E5Tokenizer
from train.judge.tags import answer_tags

LONG = " ".join(["word"] * (CANDIDATE_TOKENS + 10))


@pytest.mark.parametrize(("pair", "answer", "tagged"), [
    (Pair("When did the war end?", "The war ended in 1945, after six years.", "WW2", "It began in 1939."), "1945",
     "1945"),
    (Pair("Who wrote it?", "It was written by Leo Tolstoy in Yasnaya Polyana.", "War and Peace"), "Leo Tolstoy",
     "LeoTolstoy"),
    (Pair("Когда закончилась война?", "Война закончилась в 1945 году.", "Война"), "в 1945 году", "в1945году"),
    # no spaces in Japanese: a piece that holds part of the answer counts (年 comes with に here)
    (Pair("戦争はいつ終わりましたか？", "戦争は1945年に終わった。", "戦争"), "1945年", "1945年に"),
    # the question's and the title's tokens are never tagged, though they hold the answer's words
    (Pair("Was it 1945?", "It ended in 1945.", "1945"), "1945", "1945"),
    (Pair("Who?", "Nothing answers here.", ""), "Paris", None),
    (Pair("Who?", "Nothing answers here.", ""), "", None),
    (Pair("What is last?", f"{LONG} Paris", ""), "Paris", None),  # past the kept tokens
])
def test_the_answers_tokens_are_tagged_in_the_candidate(encoder: E5Encoder, pair: Pair, answer: str,
                                                        tagged: str | None) -> None:
    tokenizer = encoder.tokenizer
    (ids,) = pair_ids(tokenizer, [pair])
    (tags,) = answer_tags(tokenizer, [pair], [answer], [len(ids)])
    if tagged is None:
        assert tags is None
        return
    assert tags is not None and len(tags) == len(ids)
    pieces = tokenizer.content_pieces([pair.candidate], "passage")[0]
    text = "".join(pieces[i] for i in range(len(pieces)) if tags[_candidate_offset(tokenizer, pair) + i])
    assert text.replace("\u2581", "") == tagged


def _candidate_offset(tokenizer: E5Tokenizer, pair: Pair) -> int:
    (question,) = tokenizer.content_ids([pair.question], "query")
    return 1 + len(question) + 2
