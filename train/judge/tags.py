"""Which of an answering pair's tokens hold the answer: the judge's token-level teacher (``--span-weight``).

The judge is trained to say whether a sentence answers; the QA sets also say *where* in it the answer is, and a
reader taught to find the answer's tokens must look at what the question asks for, not only at what it is about.
The tags feed a second loss on the tuned layers' token states during training only; the shipped graph reads the
judge's one logit as before (docs/benchmarks.md, "Answer tokens as a second teacher", measured).
"""

from __future__ import annotations

import numpy as np

from retrieval.encoder.judge import CANDIDATE_TOKENS, QUESTION_TOKENS, Pair
from retrieval.encoder.tokenizer import METASPACE, E5Tokenizer


def answer_tags(tokenizer: E5Tokenizer, pairs: list[Pair], answers: list[str], lengths: list[int],
                ) -> list[np.ndarray | None]:
    """Per pair, 1 for each of its tokens (``pair_ids``' layout, ``lengths`` long) that holds part of its answer,
    else 0; None where there is no answer or it is not found whole in the candidate's kept tokens."""
    questions = tokenizer.content_ids([p.question for p in pairs], "query")
    pieces = tokenizer.content_pieces([p.candidate for p in pairs], "passage")
    prefix = len(tokenizer.normalize("passage: ")) - 1  # the trailing space opens the candidate's first word
    out: list[np.ndarray | None] = []
    for question, candidate, answer, length in zip(questions, pieces, answers, lengths):
        where = _find(candidate, answer, tokenizer, prefix) if answer.strip() else None
        widths = [tokenizer.piece_width(piece) for piece in candidate]  # ids each piece stands for
        if where is None or where[1] > _kept(candidate, widths):
            out.append(None)
            continue
        start, end = where
        offset = 1 + min(len(question), QUESTION_TOKENS) + 2  # bos, the question, eos eos
        tags = np.zeros(length, np.float32)
        position, token = 0, 0
        for piece, width in zip(candidate, widths):
            if position < end and position + len(piece) > start and piece != METASPACE:
                tags[offset + token:offset + token + width] = 1.0
            position += len(piece)
            token += width
        out.append(tags if tags.any() else None)
    return out


def _find(pieces: list[str], answer: str, tokenizer: E5Tokenizer, prefix: int) -> tuple[int, int] | None:
    """The answer's characters [start, end) in the joined pieces (after the prefix), or None."""
    text = "".join(pieces)
    wanted = tokenizer.normalize(answer)
    at = text.find(wanted, prefix)  # as a word of its own (en/ru): with the space before it
    if at < 0:
        wanted = wanted.lstrip(METASPACE)  # inside a run of characters (ja), or after punctuation
        at = text.find(wanted, prefix)
    return (at, at + len(wanted)) if at >= 0 and wanted else None


def _kept(pieces: list[str], widths: list[int]) -> int:
    """How many characters of the joined pieces the candidate's ``CANDIDATE_TOKENS`` kept tokens cover."""
    position, token = 0, 0
    for piece, width in zip(pieces, widths):
        token += width
        if token > CANDIDATE_TOKENS:
            break
        position += len(piece)
    return position
