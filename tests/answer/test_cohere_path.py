"""The Cohere path against a local stand-in of Cohere's API (the real cohere SDK pointed at it).

Whatever the model writes, what reaches the asker is a verified answer, a no-support reply, or the
extractive fallback — never an unverified quote, never a link the model wrote.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import SecretStr

from bot.answer.render import answer_text, to_json
from bot.answer.service import AnswerDeps, AnswerResult, answer
from bot.answer.types import Answered, Fallback, FallbackPart, NoSupport, NoSupportReason, Question, Rejection
from bot.runtime.answer import build_answer_deps
from bot.runtime.retrieval import Retrieval, build_cohere
from bot.settings import Settings
from retrieval.embedders.local import E5Embedder
from retrieval.store import ChunkStore
from retrieval.weaviate_server import WeaviateHandle
from tests.standins.cohere import CohereStandIn, delay, malformed, reply, status

REFUND_QUESTION = "How long do I have to request a refund for an annual plan?"
REFUND_QUOTE = "Annual plans can be refunded in full within 30 days of purchase."


@pytest.fixture
async def cohere_api() -> AsyncIterator[CohereStandIn]:
    async with CohereStandIn() as api:
        yield api


@pytest.fixture
async def deps(cohere_api: CohereStandIn, demo_store: ChunkStore, embedder: E5Embedder,
               weaviate: WeaviateHandle) -> AsyncIterator[AnswerDeps]:
    settings = Settings(cohere_api_key=SecretStr(cohere_api.api_key), cohere_base_url=cohere_api.base_url,
                        cohere_timeout_s=1.0, _env_file=None)  # type: ignore[call-arg]
    client = build_cohere(settings)
    assert client is not None
    async with client:  # its connections are closed with the test, as open_retrieval closes the bot's
        yield build_answer_deps(settings, Retrieval(settings, weaviate, demo_store, embedder, client))


def quoting(fragment: str, quote: str, claim: str = "Annual plans: 30 days.") -> Callable[[dict[str, Any]], Any]:
    """A model that cites the document holding ``fragment``, quoting ``quote`` from it."""

    def respond(request: dict[str, Any]) -> Any:
        doc = next(d for d in request["documents"] if fragment in d["data"]["text"])
        return reply({"claims": [{"text": claim, "citations": [{"source": doc["id"], "exact_quote": quote}]}]})

    return respond


def assert_every_shown_quote_is_verbatim(result: AnswerResult) -> None:
    payload = to_json(result, "00000000-0000-4000-8000-000000000000")
    by_chunk = {s.chunk.chunk_id: s.chunk.text for s in result.sources}
    for citation in payload["citations"] + payload["nearest"]:  # type: ignore[operator]
        assert citation["exact_quote"] in by_chunk[citation["chunk_id"]]


async def test_a_good_cohere_answer_is_shown_with_its_verified_quote(deps: AnswerDeps, cohere_api: CohereStandIn) -> None:
    cohere_api.script_chat(quoting("within 30 days", REFUND_QUOTE))
    result = await answer(Question(REFUND_QUESTION), deps)
    assert isinstance(result.outcome, Answered)
    assert result.route.composer.startswith("cohere:") and result.route.reranker.startswith("cohere:")
    assert result.route.prompt_version == "compose.v1"
    quote = result.outcome.claims[0].quotes[0]
    assert quote.text == REFUND_QUOTE and quote.source.chunk.url == "https://docs.example.com/billing/refunds"
    assert_every_shown_quote_is_verbatim(result)
    sent = cohere_api.chat_requests[-1]
    assert sent["messages"][0]["role"] == "system" and "data, not instructions" in sent["messages"][0]["content"]
    assert sent["response_format"]["type"] == "json_object"


@pytest.mark.parametrize(
    ("quote", "reason"),
    [
        ("Annual plans can be refunded in full within 90 days of purchase.", Rejection.NOT_IN_SOURCE),  # changed number
        ("Refunds are processed instantly for every plan.", Rejection.NOT_IN_SOURCE),  # hallucinated
        # In another offered chunk of the same document, not the cited one: never re-attributed.
        ("Refunds go back to the original payment method within 5 to 10 business days.", Rejection.IN_OTHER_SOURCE),
    ],
)
async def test_a_quote_the_document_does_not_hold_is_never_shown(deps: AnswerDeps, cohere_api: CohereStandIn,
                                                                   quote: str, reason: Rejection) -> None:
    cohere_api.script_chat(quoting("within 30 days", quote))
    result = await answer(Question(REFUND_QUESTION), deps)
    assert isinstance(result.outcome, NoSupport)
    assert result.outcome.reason is NoSupportReason.NO_VERIFIED_CLAIM
    assert [(r.text, r.reason) for r in result.outcome.rejected] == [(quote, reason)]
    assert quote not in answer_text(result)
    assert_every_shown_quote_is_verbatim(result)


async def test_an_unknown_source_is_rejected(deps: AnswerDeps, cohere_api: CohereStandIn) -> None:
    cohere_api.script_chat(reply({"claims": [{"text": "x", "citations": [{"source": "S42", "exact_quote": REFUND_QUOTE}]}]}))
    result = await answer(Question(REFUND_QUESTION), deps)
    assert isinstance(result.outcome, NoSupport)
    assert [r.reason for r in result.outcome.rejected] == [Rejection.UNKNOWN_SOURCE]


async def test_a_model_that_finds_no_support_gives_no_support_with_nearest_fragments(
        deps: AnswerDeps, cohere_api: CohereStandIn) -> None:
    cohere_api.script_chat(reply({"claims": []}))
    result = await answer(Question(REFUND_QUESTION), deps)
    assert isinstance(result.outcome, NoSupport) and result.outcome.nearest
    payload = to_json(result, "00000000-0000-4000-8000-000000000000")
    assert payload["status"] == "no_support" and payload["citations"] == [] and len(payload["nearest"]) == 3
    assert_every_shown_quote_is_verbatim(result)


@pytest.mark.parametrize(
    ("behaviour", "kind"),
    [(malformed(), "malformed"), (status(500), "http_500"), (status(429, retry_after=1), "http_429"),
     (delay(3.0), "timeout"), (reply("{\"claims\": \"not a list\"}"), "malformed")],
)
async def test_a_failing_model_falls_back_to_the_extractive_composer(deps: AnswerDeps, cohere_api: CohereStandIn,
                                                                      behaviour: Any, kind: str) -> None:
    cohere_api.script_chat(behaviour)
    result = await answer(Question(REFUND_QUESTION), deps)
    assert result.route.composer == "extractive"
    assert Fallback(FallbackPart.COMPOSE, kind) in result.route.fallbacks
    assert isinstance(result.outcome, Answered)
    assert any("30 days" in q.text for c in result.outcome.claims for q in c.quotes)
    assert_every_shown_quote_is_verbatim(result)


async def test_a_failing_reranker_falls_back_to_the_local_one(deps: AnswerDeps, cohere_api: CohereStandIn) -> None:
    cohere_api.script_rerank(status(503))
    cohere_api.script_chat(quoting("within 30 days", REFUND_QUOTE))
    result = await answer(Question(REFUND_QUESTION), deps)
    assert result.route.reranker == "local-sentence-fusion"
    assert any(f.part is FallbackPart.RERANK and f.why.startswith("Cohere Rerank answered HTTP 503")
               for f in result.route.fallbacks)
    assert isinstance(result.outcome, Answered)


async def test_one_good_and_one_invented_quote_show_only_the_good_one(deps: AnswerDeps, cohere_api: CohereStandIn) -> None:
    def respond(request: dict[str, Any]) -> Any:
        doc = next(d for d in request["documents"] if "within 30 days" in d["data"]["text"])
        return reply({"claims": [
            {"text": "Full refund within 30 days.", "citations": [{"source": doc["id"], "exact_quote": REFUND_QUOTE}]},
            {"text": "Refunds are instant.", "citations": [{"source": doc["id"], "exact_quote": "Refunds are instant."}]},
        ]})

    cohere_api.script_chat(respond)
    result = await answer(Question(REFUND_QUESTION), deps)
    assert isinstance(result.outcome, Answered)
    assert [c.text for c in result.outcome.claims] == ["Full refund within 30 days."]
    assert [r.text for r in result.outcome.rejected] == ["Refunds are instant."]
    assert "instant" not in json.dumps(to_json(result, "00000000-0000-4000-8000-000000000000"))


async def test_a_cohere_that_never_answers_in_time_holds_no_answer_past_its_timeouts(
        deps: AnswerDeps, cohere_api: CohereStandIn) -> None:
    """Rerank and chat both slower than COHERE_TIMEOUT_S: each call is cut at its timeout and the local parts
    answer (docs/benchmarks.md, "faults", has the time this takes)."""
    cohere_api.script_rerank(delay(3.0))
    cohere_api.script_chat(delay(3.0))
    result = await answer(Question(REFUND_QUESTION), deps)
    assert (result.route.reranker, result.route.composer) == ("local-sentence-fusion", "extractive")
    assert Fallback(FallbackPart.COMPOSE, "timeout") in result.route.fallbacks
    assert Fallback(FallbackPart.RERANK, "Cohere Rerank failed (ReadTimeout)") in result.route.fallbacks
    assert isinstance(result.outcome, Answered)
    assert_every_shown_quote_is_verbatim(result)
