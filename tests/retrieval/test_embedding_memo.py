"""A text repeated across an ingest (a footer, a navigation line) is embedded once, and every chunk and sentence
still gets the vector it would get alone."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from retrieval.chunking import ChunkingConfig
from retrieval.documents import Block, BlockKind, Document
from retrieval.embedders.local import E5Embedder
from retrieval.embedding_memo import EmbeddingMemo, new_texts
from retrieval.ingest import Status, ingest
from retrieval.search import search
from retrieval.search_config import SearchConfig
from retrieval.store import ChunkStore

FOOTER = "Contact the service desk at extension 4100 with any question about this page."


@pytest.mark.parametrize(("texts", "known", "expected"), [
    (["a", "b", "a", "c"], set(), ["a", "b", "c"]),  # a repeat within the batch, once, first-seen order
    (["a", "b", "a"], {"a"}, ["b"]),  # known from an earlier batch
    (["a", "a"], {"a"}, []),
    ([], set(), []),
])
def test_new_texts_are_the_unknown_ones_once_each(texts: list[str], known: set[str], expected: list[str]) -> None:
    assert new_texts(texts, known) == expected


class Counting:
    """The real e5 embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: E5Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> np.ndarray:
        return await self.inner.embed_query(text)

    async def aclose(self) -> None:
        return None


async def test_rows_equal_the_embedders_and_repeats_across_batches_are_not_embedded_again(
        embedder: E5Embedder) -> None:
    counting = Counting(embedder)
    memo = EmbeddingMemo(limit=3)
    first = await memo.embed_documents(counting, ["Пароль сбрасывается по ссылке.", FOOTER, FOOTER])
    second = await memo.embed_documents(counting, [FOOTER, "返金は30日以内です。"])
    alone = await embedder.embed_documents(["Пароль сбрасывается по ссылке.", FOOTER, "返金は30日以内です。"])
    assert counting.texts == ["Пароль сбрасывается по ссылке.", FOOTER, "返金は30日以内です。"]
    assert np.array_equal(first[2], first[1]) and np.array_equal(second[0], first[1])  # the repeat's own vector
    # The embedder's vectors of these texts; computed among other texts, up to their shared int8 activation scale.
    assert (first * alone[[0, 1, 1]]).sum(axis=1).min() > 0.997
    assert (second * alone[[1, 2]]).sum(axis=1).min() > 0.997
    assert (memo.embedded, memo.reused) == (3, 2)


async def test_the_memo_forgets_its_oldest_texts_past_its_limit(embedder: E5Embedder) -> None:
    counting = Counting(embedder)
    memo = EmbeddingMemo(limit=2)
    await memo.embed_documents(counting, ["one", "two", "three"])
    await memo.embed_documents(counting, ["one", "three"])
    assert counting.texts == ["one", "two", "three", "one"]  # "one" was forgotten, "three" kept


async def test_an_ingest_embeds_a_footer_shared_by_its_documents_once(store: ChunkStore, embedder: E5Embedder) -> None:
    pages = [("vpn", "VPN access", "Install the VPN client from the software portal. Sign in with your badge number."),
             ("printers", "Printers", "Printers on each floor accept badge release. Toner is ordered by facilities."),
             ("leave", "Leave requests", "Submit leave requests ten days ahead. Your manager approves them.")]
    documents = [Document(document_id=doc_id, title=title, blocks=(Block(BlockKind.PARAGRAPH, f"{body} {FOOTER}"),),
                          source=f"test:{doc_id}", language="en") for doc_id, title, body in pages]
    counting = Counting(embedder)
    report = await ingest(documents, store=store, embedder=counting, chunking=ChunkingConfig())
    assert report.count(Status.INGESTED) == 3
    assert counting.texts.count(FOOTER) == 1
    question = "How do I reach the service desk?"
    result = await search(question, store=store, embedder=embedder, config=SearchConfig(), limit=5)
    chunks = {h.chunk.chunk_id: h.chunk for h in result.hits}
    assert {c.document_id for c in chunks.values()} == {"vpn", "printers", "leave"}
    hits = await store.sentence_hits(await embedder.embed_query(question), list(chunks))
    footers = [h for h in hits if chunks[h.chunk_id].text[h.start : h.end] == FOOTER]
    assert len(footers) == 3 and len({round(h.score, 5) for h in footers}) == 1  # one vector, in every document
