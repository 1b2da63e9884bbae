"""The answer path over the store port's in-memory double: the same answers, quotes and visibility rules as
over Weaviate, with no server (the real local embedder makes the vectors)."""

from __future__ import annotations

from dataclasses import replace

from bot.answer.evidence import AbstainModels
from bot.answer.service import AnswerConfig, AnswerDeps, Question, answer
from bot.answer.types import Answered
from retrieval.embedders.local import E5Embedder
from retrieval.sentences import split_sentences
from retrieval.store_port import MemoryStore, StoredChunk
from tests.answer.builders import chunk

REFUNDS = "Annual plans can be refunded within 30 days of purchase. Monthly plans are not refunded."
CREDITS = "Team leads may approve goodwill credits of up to 200 EUR. Larger credits need a manager."


async def memory_store(embedder: E5Embedder) -> MemoryStore:
    refunds = chunk(REFUNDS, document_id="refunds")
    credits = replace(chunk(CREDITS, document_id="credits"), visibility=("C0LEADS",))
    stored = []
    for c in (refunds, credits):
        spans = split_sentences(c.text, c.language)
        vectors = await embedder.embed_documents([c.text] + [c.text[s.start : s.end] for s in spans])
        stored.append(StoredChunk(c, vectors[0], tuple(zip(spans, vectors[1:]))))
    return MemoryStore(stored)


async def test_a_question_is_answered_with_a_verbatim_quote_from_the_double(embedder: E5Embedder) -> None:
    deps = AnswerDeps(store=await memory_store(embedder), embedder=embedder, config=AnswerConfig(),
                      abstain_models=AbstainModels())
    result = await answer(Question("How long do I have to request a refund for an annual plan?"), deps)
    assert isinstance(result.outcome, Answered)
    quote = result.outcome.claims[0].quotes[0]
    assert quote.source.chunk.document_id == "refunds" and "within 30 days" in quote.text
    assert quote.text in REFUNDS


async def test_a_channel_restricted_chunk_is_seen_only_from_its_channel(embedder: E5Embedder) -> None:
    deps = AnswerDeps(store=await memory_store(embedder), embedder=embedder, config=AnswerConfig(),
                      abstain_models=AbstainModels())
    question = "Up to how much can a team lead approve a goodwill credit?"
    inside = await answer(Question(question, channel="C0LEADS"), deps)
    outside = await answer(Question(question, channel="C0GENERAL"), deps)
    assert isinstance(inside.outcome, Answered)
    assert inside.outcome.claims[0].quotes[0].source.chunk.document_id == "credits"
    assert [h.chunk.document_id for h in outside.retrieved] == ["refunds"]
    assert all(s.chunk.document_id != "credits" for s in outside.sources)


async def test_a_question_granted_several_channels_sees_each_ones_documents_and_none_sees_only_public(
        embedder: E5Embedder) -> None:
    """A private question carries the channels it may see, apart from where it was asked (a DM)."""
    deps = AnswerDeps(store=await memory_store(embedder), embedder=embedder, config=AnswerConfig(),
                      abstain_models=AbstainModels())
    question = "Up to how much can a team lead approve a goodwill credit?"
    granted = await answer(Question(question, channel="D0ANNA", sees=frozenset({"C0HR", "C0LEADS"})), deps)
    public = await answer(Question(question, channel="D0ANNA", sees=frozenset()), deps)
    assert "credits" in {h.chunk.document_id for h in granted.retrieved}
    assert [h.chunk.document_id for h in public.retrieved] == ["refunds"]


async def test_sources_narrow_what_a_question_sees_and_never_widen_it(embedder: E5Embedder) -> None:
    """A help channel's ``sources``: only documents whose id begins with one; a hidden one stays hidden."""
    deps = AnswerDeps(store=await memory_store(embedder), embedder=embedder, config=AnswerConfig(),
                      abstain_models=AbstainModels())
    question = "Up to how much can a team lead approve a goodwill credit?"
    narrowed = await answer(Question(question, channel="C0LEADS", sources=("refu",)), deps)
    not_widened = await answer(Question(question, channel="C0GENERAL", sources=("credits",)), deps)
    assert [h.chunk.document_id for h in narrowed.retrieved] == ["refunds"]
    assert not_widened.retrieved == ()
