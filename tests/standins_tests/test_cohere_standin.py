"""The Cohere stand-in, driven by the real ``cohere.AsyncClientV2``."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator

import cohere
import pytest
from cohere.core.api_error import ApiError
from cohere.errors import BadRequestError, UnauthorizedError
from cohere.types import EmbedByTypeResponse
from cohere.v2.types import V2ChatResponse, V2RerankResponse

from tests.standins import CohereStandIn
from tests.standins.cohere import (
    CHAT_PATH,
    NO_CLAIMS,
    RERANK_PATH,
    body,
    malformed,
    quote_first_sentence,
    ranking,
    status,
    unit_vector,
)

CHAT_MODEL = "command-a-03-2025"
RERANK_MODEL = "rerank-v3.5"
EMBED_MODEL = "embed-multilingual-v3.0"
DOCUMENTS = [
    {"id": "S1", "data": {"title": "Refund policy", "text": "Refunds are paid within 30 days. Ask support first."}},
    {"id": "S2", "data": {"title": "Shipping", "text": "Parcels ship on weekdays."}},
]
CLAIMS = {"claims": [{"text": "Refunds take 30 days.",
                      "citations": [{"source": "S1", "exact_quote": "Refunds are paid within 30 days."}]}]}


@pytest.fixture
async def co(co_api: CohereStandIn) -> AsyncIterator[cohere.AsyncClientV2]:
    """A real client without the SDK's own retries, so each scripted answer is seen as it is."""
    async with cohere.AsyncClientV2(api_key=co_api.api_key, base_url=co_api.base_url, max_retries=0) as client:
        yield client


async def _ask(co: cohere.AsyncClientV2) -> cohere.V2ChatResponse:
    return await co.chat(
        model=CHAT_MODEL,
        messages=[{"role": "system", "content": "Answer only from the documents."},
                  {"role": "user", "content": "How long do refunds take?"}],
        documents=DOCUMENTS,
        response_format={"type": "json_object"},
    )


def _text(response: cohere.V2ChatResponse) -> str:
    content = response.message.content or []
    return "".join(getattr(item, "text", "") for item in content)


async def test_chat_returns_the_scripted_text_in_a_valid_response(
    co: cohere.AsyncClientV2, co_api: CohereStandIn
) -> None:
    """The model's JSON comes back as the assistant message's text; the body passes the SDK's strict model."""
    co_api.script_chat(json.dumps(CLAIMS))
    response = await _ask(co)

    assert json.loads(_text(response)) == CLAIMS
    assert response.finish_reason == "COMPLETE" and response.message.role == "assistant"
    assert response.usage is not None and response.usage.tokens is not None
    V2ChatResponse.model_validate_json(co_api.responses[-1].text)
    sent = co_api.chat_requests[0]
    assert sent["model"] == CHAT_MODEL and sent["documents"] == DOCUMENTS
    assert sent["response_format"] == {"type": "json_object"} and sent["messages"][1]["role"] == "user"


async def test_scripted_answers_are_used_in_order_then_the_default(
    co: cohere.AsyncClientV2, co_api: CohereStandIn
) -> None:
    co_api.script_chat(CLAIMS, malformed())
    answers = [_text(await _ask(co)) for _ in range(3)]

    assert json.loads(answers[0]) == CLAIMS, "a dict is written as JSON"
    with pytest.raises(json.JSONDecodeError):
        json.loads(answers[1])
    assert answers[2] == NO_CLAIMS
    assert co_api.pending(CHAT_PATH) == 0


async def test_a_responder_can_quote_the_first_document(co: cohere.AsyncClientV2, co_api: CohereStandIn) -> None:
    co_api.script_chat(default=quote_first_sentence)
    claims = json.loads(_text(await _ask(co)))["claims"]
    assert claims == [{"text": "Refunds are paid within 30 days.",
                       "citations": [{"source": "S1", "exact_quote": "Refunds are paid within 30 days."}]}]


async def test_wrong_api_key_is_refused_with_401(co_api: CohereStandIn) -> None:
    async with cohere.AsyncClientV2(api_key="not-the-key", base_url=co_api.base_url, max_retries=0) as client:
        with pytest.raises(UnauthorizedError) as failure:
            await _ask(client)
    assert failure.value.status_code == 401 and failure.value.body["message"] == "invalid api token"


async def test_requests_the_real_api_would_refuse_get_400(co: cohere.AsyncClientV2) -> None:
    with pytest.raises(BadRequestError):
        await co.chat(model="", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(BadRequestError):
        v1_style_documents = [{"text": "v1-style document"}]
        await co.rerank(model=RERANK_MODEL, query="q", documents=v1_style_documents)  # type: ignore[arg-type]
    with pytest.raises(BadRequestError):
        await co.embed(model=EMBED_MODEL, input_type="search_query", texts=["x"] * 97, embedding_types=["float"])


async def test_rerank_default_orders_by_query_overlap_and_honours_top_n(
    co: cohere.AsyncClientV2, co_api: CohereStandIn
) -> None:
    documents = ["Parcels ship on weekdays.", "Refunds are paid within 30 days.", "Refunds need a receipt.",
                 "返金は30日以内に支払われます。"]
    response = await co.rerank(model=RERANK_MODEL, query="When are refunds paid?", documents=documents, top_n=3)

    assert [r.index for r in response.results] == [1, 2, 0]
    scores = [r.relevance_score for r in response.results]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    V2RerankResponse.model_validate_json(co_api.responses[-1].text)

    japanese = await co.rerank(model=RERANK_MODEL, query="返金はいつ支払われますか", documents=documents)
    assert japanese.results[0].index == 3, "CJK text is compared by character bigrams"


async def test_rerank_can_be_scripted(co: cohere.AsyncClientV2, co_api: CohereStandIn) -> None:
    co_api.script_rerank(ranking([(2, 0.9), (0, 0.1)]), status(503))
    scripted = await co.rerank(model=RERANK_MODEL, query="q", documents=["a", "b", "c"])
    assert [(r.index, r.relevance_score) for r in scripted.results] == [(2, 0.9), (0, 0.1)]
    with pytest.raises(ApiError) as failure:
        await co.rerank(model=RERANK_MODEL, query="q", documents=["a"])
    assert failure.value.status_code == 503
    assert [r.path for r in co_api.requests] == [RERANK_PATH, RERANK_PATH]


async def test_embed_default_gives_deterministic_unit_vectors(co: cohere.AsyncClientV2, co_api: CohereStandIn) -> None:
    texts = ["refund policy", "shipping", "refund policy"]
    response = await co.embed(model=EMBED_MODEL, input_type="search_document", texts=texts,
                              embedding_types=["float", "int8"])

    vectors = response.embeddings.float_
    assert vectors is not None and len(vectors) == 3 and all(len(v) == 1024 for v in vectors)
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0, rel_tol=1e-9) for v in vectors)
    assert vectors[0] == vectors[2] == unit_vector("refund policy", 1024) and vectors[0] != vectors[1]
    assert response.embeddings.int8 is not None and all(-128 <= x <= 127 for x in response.embeddings.int8[0])
    assert response.texts == texts and response.response_type == "embeddings_by_type"
    EmbedByTypeResponse.model_validate_json(co_api.responses[-1].text)


async def test_embed_honours_output_dimension_and_model_size(co: cohere.AsyncClientV2) -> None:
    smaller = await co.embed(model="embed-v4.0", input_type="search_query", texts=["q"], embedding_types=["float"],
                             output_dimension=256)
    v4_default = await co.embed(model="embed-v4.0", input_type="search_query", texts=["q"], embedding_types=["float"])
    assert smaller.embeddings.float_ is not None and len(smaller.embeddings.float_[0]) == 256
    assert v4_default.embeddings.float_ is not None and len(v4_default.embeddings.float_[0]) == 1536


async def test_embed_can_be_scripted_with_a_whole_body(co: cohere.AsyncClientV2, co_api: CohereStandIn) -> None:
    co_api.script_embed(body({"id": "e1", "embeddings": {"float": [[1.0, 0.0]]}, "texts": ["x"],
                              "response_type": "embeddings_by_type"}))
    response = await co.embed(model=EMBED_MODEL, input_type="search_query", texts=["x"], embedding_types=["float"])
    assert response.id == "e1" and response.embeddings.float_ == [[1.0, 0.0]]


async def test_scripting_mistakes_fail_at_the_test_line(co_api: CohereStandIn) -> None:
    with pytest.raises(TypeError, match="separate arguments"):
        co_api.script_chat(["a", "b"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot answer /v2/rerank"):
        co_api.script_rerank("a chat answer is not a ranking")
