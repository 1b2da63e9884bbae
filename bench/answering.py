"""Running the real answer service over the shared data: shared by the abstain, rerank and answer benches."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from bench import data
from bench.common import CachedEmbedder
from bot.answer.query import Turn
from bot.answer.service import AnswerDeps, AnswerResult, Question, answer
from bot.answer.types import Answered, Claim
from retrieval.chunking import ChunkingConfig
from retrieval.embedders import Embedder
from retrieval.ingest import ingest
from retrieval.store import SCHEMA_VERSION, ChunkStore
from retrieval.weaviate_server import WeaviateHandle


async def dataset_store(handle: WeaviateHandle, dataset: data.Dataset, embedder: Embedder | CachedEmbedder) -> ChunkStore:
    name = f"Answer{SCHEMA_VERSION}_{dataset.name.replace('-', '_')}_{embedder.name.split('-')[0]}"
    store = ChunkStore(handle.client, name)
    await store.open(embedder.name, embedder.dim, create=True)
    report = await ingest(dataset.documents, store=store, embedder=embedder, chunking=ChunkingConfig())
    if report.failures:
        raise SystemExit(f"bench ingest failed: {report.failures[0]}")
    return store


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def quote_has_answer(query: data.Query, gold_removed: bool, claims: Sequence[Claim]) -> bool:
    if gold_removed or not query.answerable or not query.answers:
        return False
    quotes = [q for c in claims for q in c.quotes if q.source.chunk.document_id in query.gold]
    return any(_fold(a) in _fold(q.text) for a in query.answers for q in quotes)


def quote_from_gold(query: data.Query, gold_removed: bool, claims: Sequence[Claim]) -> bool:
    if gold_removed or not query.answerable:
        return False
    return any(q.source.chunk.document_id in query.gold for c in claims for q in c.quotes)


@dataclass(frozen=True, slots=True)
class Judged:
    query: data.Query
    result: AnswerResult
    gold_removed: bool

    @property
    def quote_has_answer(self) -> bool:
        """Some shown quote contains a gold answer (what the asker needs), from the gold paragraph."""
        return quote_has_answer(self.query, self.gold_removed, self._claims())

    @property
    def answered(self) -> bool:
        return isinstance(self.result.outcome, Answered)

    @property
    def quote_from_gold(self) -> bool:
        """Some quote (shown, or withheld for weak evidence) comes from a gold passage."""
        return quote_from_gold(self.query, self.gold_removed, self._claims())

    @property
    def answered_elsewhere(self) -> bool:
        """Asked with its paragraph removed, yet a quote from another passage holds a gold answer: the
        collection does answer it after all, so it is neither a clean positive nor a clean negative."""
        if not self.gold_removed or not self.query.answers:
            return False
        quotes = [q.text for c in self._claims() for q in c.quotes]
        return any(_fold(a) in _fold(q) for a in self.query.answers for q in quotes)

    @property
    def should_answer(self) -> bool:
        return self.query.answerable and not self.gold_removed

    def _claims(self):
        outcome = self.result.outcome
        # Claims withheld for weak evidence count too: the bench asks whether answering would have been right.
        return outcome.claims if isinstance(outcome, Answered) else outcome.withheld


async def run_questions(deps: AnswerDeps, store: ChunkStore, queries: Sequence[data.Query], *,
                        remove_gold: bool = False) -> list[Judged]:
    judged = []
    for query in queries:
        # Removed: the question's own passages are left out inside Weaviate, before fusion.
        deps.store = store.with_options(exclude_documents=tuple(sorted(query.gold))) if remove_gold else store
        history = tuple(Turn(role, text) for role, text in query.history)
        result = await answer(Question(query.text, channel=query.channel, history=history), deps)
        judged.append(Judged(query, result, remove_gold))
    deps.store = store
    return judged
