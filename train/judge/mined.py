"""Hard negatives ranked as the service ranks its quotes: ``--mined-by e5``.

The judge meets, in the gold-removed case, the sentence the extractive composer puts first: the one whose e5 vector
is closest to the question's, plus ``ExtractiveConfig.lexical_weight`` times the share of the question's terms it
holds (``bot/answer/extractive.py`` ``score_sentences``). Term overlap alone (``data.term_closeness``) picks
sentences that repeat the question's words; this picks the ones the service would quote.

Vectors come from the answer bench's cache (``bench.common.CachedEmbedder``: on disk, keyed by text, the graph's
version and the int8 kernel), so an interrupted build resumes and a rebuild embeds nothing.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from bench.common import CachedEmbedder
from bot.answer.extractive import ExtractiveConfig
from bot.answer.lexical import content_terms, coverage
from retrieval.embedders.local import E5Embedder
from retrieval.sentences import Sentence


class E5Closeness:
    """``data.Closeness`` by the composer's score, on ``embedder``'s vectors (e5's, as the index holds them); it
    owns the embedder from then on (``close`` closes it). Not thread-safe: the pairs are built on one thread."""

    def __init__(self, embedder: E5Embedder | CachedEmbedder,
                 lexical_weight: float = ExtractiveConfig().lexical_weight) -> None:
        self._loop = asyncio.new_event_loop()
        self._embedder = embedder
        self._lexical_weight = lexical_weight
        # Every question of an article asks for the article's sentences again: held here, not read back from disk.
        self._documents: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self._embedded, self._started = 0, time.perf_counter()

    def __call__(self, question: str, language: str, sentences: list[Sentence]) -> list[float]:
        if not sentences:
            return []
        if question not in self._queries:
            (self._queries[question],) = self._loop.run_until_complete(self._embedder.embed_queries([question]))
        missing = list(dict.fromkeys(s.text for s in sentences if s.text not in self._documents))
        if missing:
            vectors = self._loop.run_until_complete(self._embedder.embed_documents(missing))
            self._documents.update(zip(missing, vectors))
            self._report(len(missing))
        query = self._queries[question]
        terms = content_terms(question, language)
        return [float(self._documents[s.text] @ query) + self._lexical_weight * coverage(terms, s.text, language)
                for s in sentences]

    def _report(self, count: int) -> None:
        before, self._embedded = self._embedded, self._embedded + count
        if before // 10_000 != self._embedded // 10_000:
            print(f"[{time.strftime('%H:%M:%S')}] mined: {self._embedded} sentences embedded or read "
                  f"({time.perf_counter() - self._started:.0f} s)", flush=True)

    def close(self) -> None:
        self._loop.run_until_complete(self._embedder.aclose())
        self._loop.close()
