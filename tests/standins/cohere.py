"""A local stand-in for Cohere's HTTP API (v2 chat, rerank, embed), for the real ``cohere`` SDK.

::

    async with CohereStandIn() as co_api:
        co = cohere.AsyncClientV2(api_key=co_api.api_key, base_url=co_api.base_url, max_retries=0)
        co_api.script_chat('{"claims": []}', status(500), delay(5), malformed())
        response = await co.chat(model="command-a-03-2025", messages=[...])

Endpoints are the paths cohere 7.3.1 calls (``cohere/v2/raw_client.py``): ``POST /v2/chat``, ``/v2/rerank``,
``/v2/embed``, under ``base_url`` (``http://127.0.0.1:PORT``; the SDK joins ``base_url`` and ``v2/...``).
Each checks ``Authorization: Bearer <api_key>`` (401 ``{"id", "message": "invalid api token"}``
otherwise, which the SDK raises as ``cohere.errors.UnauthorizedError``) and the fields the real API
requires (400, ``BadRequestError``). Every request is recorded in ``requests`` as ``(path, json)``.

Responses are scripted per endpoint: each ``script_*`` call appends items to that endpoint's queue, one
item per request; when the queue is empty the endpoint's default answers. Items:

- chat: a ``str`` is the text the model writes (usually the JSON the prompt asks for); a ``dict`` is
  dumped to JSON text; ``malformed()`` is text that is not JSON.
- rerank and embed: ``ranking([(index, score), ...])`` / ``body({...})`` give the whole response body.
- any endpoint: ``status(500)``, ``status(429, retry_after=2)``, ``delay(seconds, then=...)``,
  ``raw(text, status=...)``, or a callable that gets the request JSON and returns one of these.

Defaults: chat writes ``{"claims": []}`` (a model that found nothing to claim; ``quote_first_sentence``
is a responder that quotes the first document instead); rerank scores each document by its share of the
query's words (CJK text by character bigrams) and returns ``results`` sorted by score, index breaking ties,
cut to ``top_n``; embed returns unit vectors seeded by a hash of each text, so equal texts embed equally, of
``output_dimension`` or the model's size (embed-v4.0: 1536, light models: 384, others: 1024), for each of
``embedding_types`` (``float`` when none are asked for).

What the SDK does with these (cohere 7.3.1, httpx 0.28), which the tests in ``tests/standins_tests`` pin:

- It retries 429, 408, 409 and every 5xx itself, ``max_retries`` times (default 2), sleeping for
  ``Retry-After`` (capped at 60 s) or 1 s, 2 s … with jitter. A single scripted ``status(500)`` is
  therefore invisible to a default client: build test clients with ``max_retries=0`` to see the error,
  or script as many failures as attempts. Errors surface as ``cohere.errors.InternalServerError`` (500),
  ``ServiceUnavailableError`` (503), ``TooManyRequestsError`` (429) … all subclasses of
  ``cohere.core.api_error.ApiError`` with ``status_code``, ``headers`` and the parsed ``body``.
- A response slower than the client's ``timeout`` raises ``httpx.ReadTimeout`` (an
  ``httpx.TimeoutException``), unwrapped and not retried; the SDK has no timeout error of its own.
- It parses responses leniently (``construct_type``), so a wrong shape would not fail there; the
  stand-in's tests validate its bodies with the SDK's pydantic models strictly.
- ``chat_stream`` (``"stream": true``) is not supported here: the stand-in answers 400.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import random
import re
import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar, Union

from aiohttp import web

from ._common import serve, wait_for

JsonDict = dict[str, Any]
T = TypeVar("T")

NO_CLAIMS = '{"claims": []}'
"""What the default chat model writes: valid JSON with nothing claimed."""

CHAT_PATH = "/v2/chat"
RERANK_PATH = "/v2/rerank"
EMBED_PATH = "/v2/embed"


# ---------------------------------------------------------------------- behaviours

@dataclass(frozen=True)
class Reply:
    """A chat answer: the assistant message's text content."""

    text: str
    finish_reason: str = "COMPLETE"


@dataclass(frozen=True)
class Status:
    """An error answer with Cohere's error body ``{"id", "message"}`` (and ``Retry-After`` when given)."""

    code: int
    retry_after: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds``, then answer with ``then`` (or the endpoint's default)."""

    seconds: float
    then: Item | None = None


@dataclass(frozen=True)
class Raw:
    """Exactly this HTTP answer: for bodies no behaviour above produces (200 with HTML, a full JSON body)."""

    status: int
    text: str
    content_type: str = "application/json"


Behaviour = Union[Reply, Status, Delay, Raw]
Responder = Callable[[JsonDict], "Item"]
Item = Union[Behaviour, str, Mapping[str, Any], Responder]


def status(code: int, *, retry_after: float | None = None, message: str | None = None) -> Status:
    """Answer HTTP ``code`` with Cohere's error JSON; ``retry_after`` (seconds) adds a ``Retry-After`` header."""
    return Status(code, retry_after, message)


def delay(seconds: float, then: Item | None = None) -> Delay:
    """Answer after ``seconds`` (to exceed a client timeout), with ``then`` or the default."""
    return Delay(seconds, then)


def malformed(text: str = "Sure! The documents say refunds take 30 days, see https://example.com/refunds") -> Reply:
    """A chat answer whose text is not JSON, as a model that ignores the response format writes."""
    return Reply(text)


def reply(content: str | Mapping[str, Any], *, finish_reason: str = "COMPLETE") -> Reply:
    """A chat answer; a mapping is written as JSON text."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return Reply(text, finish_reason)


def raw(text: str, *, status: int = 200, content_type: str = "application/json") -> Raw:
    """Answer exactly this text."""
    return Raw(status, text, content_type)


def body(payload: Mapping[str, Any], *, status: int = 200) -> Raw:
    """Answer this JSON body as it is (a complete rerank or embed response, say)."""
    return Raw(status, json.dumps(payload, ensure_ascii=False))


def ranking(results: Sequence[tuple[int, float]]) -> Raw:
    """A rerank answer with these ``(index, relevance_score)`` results, in the order given."""
    return body({"id": str(uuid.uuid4()),
                 "results": [{"index": i, "relevance_score": s} for i, s in results],
                 "meta": _meta(search_units=1)})


class CohereRequest(NamedTuple):
    """One request as the stand-in received it: the path (``/v2/chat``) and the JSON body."""

    path: str
    json: JsonDict


class CohereResponse(NamedTuple):
    """One answer the stand-in gave: the path, the HTTP status and the body text."""

    path: str
    status: int
    text: str


class _BadRequest(Exception):
    pass


# ---------------------------------------------------------------------- default responders

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def _is_cjk(char: str) -> bool:
    return ord(char) >= 0x2E80


def _tokens(text: str) -> set[str]:
    tokens: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if any(_is_cjk(c) for c in word):
            tokens.update(word[i:i + 2] for i in range(max(1, len(word) - 1)))
        else:
            tokens.add(word)
    return tokens


def overlap_rerank(request: JsonDict) -> Raw:
    """Default rerank: each document's score is the share of the query's tokens it contains."""
    query = _tokens(str(request["query"]))
    scored = []
    for index, document in enumerate(request["documents"]):
        overlap = len(query & _tokens(str(document))) / len(query) if query else 0.0
        scored.append((index, round(overlap, 6)))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    top_n = request.get("top_n")
    if isinstance(top_n, int) and top_n > 0:
        scored = scored[:top_n]
    return ranking(scored)


def unit_vector(text: str, dimension: int) -> list[float]:
    """A deterministic unit vector for ``text``: Gaussian components seeded by the text's SHA-256."""
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    values = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _dimension(request: JsonDict) -> int:
    requested = request.get("output_dimension")
    if isinstance(requested, int) and requested > 0:
        return requested
    model = str(request.get("model", ""))
    if model.startswith("embed-v4"):
        return 1536
    if "light" in model:
        return 384
    return 1024


def _quantised(kind: str, vectors: list[list[float]]) -> list[Any]:
    if kind == "float":
        return vectors
    if kind == "int8":
        return [[max(-128, min(127, round(v * 127))) for v in vec] for vec in vectors]
    if kind == "uint8":
        return [[max(0, min(255, round(v * 127) + 128)) for v in vec] for vec in vectors]
    if kind in ("binary", "ubinary"):
        packed = []
        for vec in vectors:
            bits = [1 if v > 0 else 0 for v in vec]
            octets = [int("".join(map(str, bits[i:i + 8])).ljust(8, "0"), 2) for i in range(0, len(bits), 8)]
            packed.append(octets if kind == "ubinary" else [o - 128 for o in octets])
        return packed
    if kind == "base64":
        return [base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode() for vec in vectors]
    raise _BadRequest(f"invalid request: embedding_types must be float, int8, uint8, binary, ubinary or base64, "
                      f"not {kind!r}")


def hashed_embed(request: JsonDict) -> Raw:
    """Default embed: a hash-seeded unit vector per text, for each requested embedding type."""
    texts = [str(t) for t in request["texts"]]
    dimension = _dimension(request)
    vectors = [unit_vector(t, dimension) for t in texts]
    kinds = request.get("embedding_types") or ["float"]
    embeddings = {kind: _quantised(kind, vectors) for kind in kinds}
    return body({
        "id": str(uuid.uuid4()),
        "embeddings": embeddings,
        "texts": texts,
        "meta": _meta(input_tokens=sum(len(t.split()) for t in texts)),
        "response_type": "embeddings_by_type",
    })


def quote_first_sentence(request: JsonDict) -> Reply:
    """A chat responder that claims the first sentence of the first document, quoting it exactly.

    Documents are read as the v2 API takes them (a string, or ``{"id", "data": {...}}`` whose ``text`` or
    ``snippet`` field holds the text); the source is the document's ``id`` (``doc_0`` … when it has none).
    With no documents it writes ``NO_CLAIMS``.
    """
    for index, document in enumerate(request.get("documents") or []):
        if isinstance(document, str):
            source, text = f"doc_{index}", document
        elif isinstance(document, dict):
            data = document.get("data") or {}
            source = str(document.get("id") or f"doc_{index}")
            text = str(data.get("text") or data.get("snippet") or "")
        else:
            continue
        sentence = _SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip()
        if sentence:
            return reply({"claims": [{"text": sentence, "citations": [{"source": source, "exact_quote": sentence}]}]})
    return Reply(NO_CLAIMS)


def _meta(**billed: int) -> JsonDict:
    return {"api_version": {"version": "2"}, "billed_units": billed}


def _error_body(message: str) -> str:
    return json.dumps({"id": str(uuid.uuid4()), "message": message})


_DEFAULT_MESSAGES = {
    400: "invalid request",
    401: "invalid api token",
    404: "not found",
    429: "You are past the per-minute request limit, please wait and try again later.",
    500: "internal server error, this has been reported to our developers",
    503: "service unavailable",
}


# ---------------------------------------------------------------------- the server

class _Endpoint:
    def __init__(self, path: str, default: Item) -> None:
        self.path = path
        self.queue: list[Item] = []
        self.default: Item = default


class CohereStandIn:
    """Cohere's v2 chat, rerank and embed endpoints on 127.0.0.1, scripted per test.

    Use it as ``async with CohereStandIn() as co_api:`` and point ``cohere.AsyncClientV2`` at
    ``co_api.base_url`` with ``co_api.api_key``.
    """

    def __init__(self, *, api_key: str = "co-standin-key") -> None:
        self.api_key = api_key
        self.requests: list[CohereRequest] = []
        self.responses: list[CohereResponse] = []
        self._endpoints = {
            CHAT_PATH: _Endpoint(CHAT_PATH, Reply(NO_CLAIMS)),
            RERANK_PATH: _Endpoint(RERANK_PATH, overlap_rerank),
            EMBED_PATH: _Endpoint(EMBED_PATH, hashed_embed),
        }
        self._validators: dict[str, Callable[[JsonDict], None]] = {
            CHAT_PATH: _validate_chat, RERANK_PATH: _validate_rerank, EMBED_PATH: _validate_embed,
        }
        self._base_url: str | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> CohereStandIn:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._handle)
        async with AsyncExitStack() as stack:
            self._base_url = await stack.enter_async_context(serve(app))
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: pass it as ``cohere.AsyncClientV2(base_url=...)``."""
        if self._base_url is None:
            raise RuntimeError("the Cohere stand-in is not running: use `async with CohereStandIn() as co_api`")
        return self._base_url

    # ------------------------------------------------------------------ scripting

    def script_chat(self, *items: Item, default: Item | None = None) -> None:
        """Queue chat answers, one per request; ``default`` replaces what answers once the queue is empty."""
        self._script(CHAT_PATH, items, default)

    def script_rerank(self, *items: Item, default: Item | None = None) -> None:
        """Queue rerank answers (``ranking(...)``, ``status(...)``, ``delay(...)`` …)."""
        self._script(RERANK_PATH, items, default)

    def script_embed(self, *items: Item, default: Item | None = None) -> None:
        """Queue embed answers (``body(...)``, ``status(...)``, ``delay(...)`` …)."""
        self._script(EMBED_PATH, items, default)

    def _script(self, path: str, items: Sequence[Item], default: Item | None) -> None:
        for item in (*items, *(() if default is None else (default,))):
            _check_item(path, item)
        endpoint = self._endpoints[path]
        endpoint.queue.extend(items)
        if default is not None:
            endpoint.default = default

    def pending(self, path: str = CHAT_PATH) -> int:
        """How many scripted answers for ``path`` have not been used yet."""
        return len(self._endpoints[path].queue)

    # ------------------------------------------------------------------ what happened

    def requests_to(self, path: str) -> list[JsonDict]:
        """The JSON bodies of the requests to ``path`` (``"/v2/chat"``), in order."""
        return [request.json for request in self.requests if request.path == path]

    @property
    def chat_requests(self) -> list[JsonDict]:
        return self.requests_to(CHAT_PATH)

    @property
    def rerank_requests(self) -> list[JsonDict]:
        return self.requests_to(RERANK_PATH)

    @property
    def embed_requests(self) -> list[JsonDict]:
        return self.requests_to(EMBED_PATH)

    async def wait_for(
        self, predicate: Callable[[], T | None], *, timeout: float = 10.0, what: str | None = None
    ) -> T:
        """Wait until ``predicate()`` is truthy and return it; ``AssertionError`` after ``timeout`` seconds."""
        return await wait_for(predicate, timeout=timeout, what=what)

    # ------------------------------------------------------------------ serving

    async def _handle(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["path"]
        try:
            payload = await request.json() if request.can_read_body else {}
        except json.JSONDecodeError:
            payload = None
        self.requests.append(CohereRequest(path, payload if isinstance(payload, dict) else {}))

        if request.headers.get("Authorization", "") != f"Bearer {self.api_key}":
            return self._answer(path, Raw(401, _error_body("invalid api token")))
        endpoint = self._endpoints.get(path)
        if endpoint is None:
            return self._answer(path, Raw(404, _error_body(f"{path} not found")))
        if not isinstance(payload, dict):
            return self._answer(path, Raw(400, _error_body("invalid request: the body must be a JSON object")))
        try:
            self._validators[path](payload)
        except _BadRequest as error:
            return self._answer(path, Raw(400, _error_body(str(error))))

        item = endpoint.queue.pop(0) if endpoint.queue else endpoint.default
        try:
            behaviour = await self._behaviour(endpoint, item, payload)
        except _BadRequest as error:
            return self._answer(path, Raw(400, _error_body(str(error))))
        return self._answer(path, behaviour, payload)

    async def _behaviour(self, endpoint: _Endpoint, item: Item, payload: JsonDict) -> Behaviour:
        """Resolve callables and delays down to something that can be answered."""
        for _ in range(100):
            if isinstance(item, Delay):
                await asyncio.sleep(item.seconds)
                item = item.then if item.then is not None else endpoint.default
                continue
            if isinstance(item, (Reply, Status, Raw)):
                return item
            if isinstance(item, str):
                return Reply(item)
            if isinstance(item, Mapping):
                return reply(item) if endpoint.path == CHAT_PATH else body(item)
            if callable(item):
                item = item(payload)
                continue
            break
        raise TypeError(f"cannot answer {endpoint.path} with {item!r}")

    def _answer(self, path: str, behaviour: Behaviour, payload: JsonDict | None = None) -> web.Response:
        headers: dict[str, str] = {}
        if isinstance(behaviour, Reply):
            status_code, text, content_type = 200, _chat_body(behaviour, payload or {}), "application/json"
        elif isinstance(behaviour, Status):
            message = behaviour.message or _DEFAULT_MESSAGES.get(behaviour.code, f"error {behaviour.code}")
            status_code, text, content_type = behaviour.code, _error_body(message), "application/json"
            if behaviour.retry_after is not None:
                headers["Retry-After"] = str(math.ceil(behaviour.retry_after))
        elif isinstance(behaviour, Raw):
            status_code, text, content_type = behaviour.status, behaviour.text, behaviour.content_type
        else:
            raise TypeError(f"cannot answer {path} with {behaviour!r}")
        self.responses.append(CohereResponse(path, status_code, text))
        return web.Response(status=status_code, text=text, content_type=content_type, headers=headers)


def _check_item(path: str, item: Item) -> None:
    """Reject at scripting time what cannot be an answer for ``path``, so mistakes point at the test line."""
    if isinstance(item, Delay):
        if item.then is not None:
            _check_item(path, item.then)
        return
    if isinstance(item, (Status, Raw)) or callable(item):
        return
    if path == CHAT_PATH and isinstance(item, (Reply, str, Mapping)):
        return
    if path != CHAT_PATH and isinstance(item, Mapping):
        return
    if isinstance(item, list):
        raise TypeError("pass scripted answers as separate arguments: script_chat(a, b), not script_chat([a, b])")
    raise TypeError(f"{item!r} cannot answer {path}")


def _chat_body(answer: Reply, request: JsonDict) -> str:
    input_tokens = len(json.dumps(request.get("messages", []), ensure_ascii=False).split()) + sum(
        len(json.dumps(d, ensure_ascii=False).split()) for d in request.get("documents") or [])
    output_tokens = len(answer.text.split())
    return json.dumps({
        "id": str(uuid.uuid4()),
        "finish_reason": answer.finish_reason,
        "message": {"role": "assistant", "content": [{"type": "text", "text": answer.text}]},
        "usage": {
            "billed_units": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            "tokens": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
    }, ensure_ascii=False)


def _require_model(request: JsonDict) -> None:
    if not isinstance(request.get("model"), str) or not request["model"]:
        raise _BadRequest("invalid request: model must be specified")


def _validate_chat(request: JsonDict) -> None:
    _require_model(request)
    if request.get("stream"):
        raise _BadRequest("invalid request: the Cohere stand-in does not stream; use chat, not chat_stream")
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest("invalid request: messages must contain at least one message")
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant", "tool"):
            raise _BadRequest("invalid request: each message needs a role of system, user, assistant or tool")
    response_format = request.get("response_format")
    if response_format is not None and (not isinstance(response_format, dict)
                                        or response_format.get("type") not in ("text", "json_object")):
        raise _BadRequest("invalid request: response_format.type must be text or json_object")


def _validate_rerank(request: JsonDict) -> None:
    _require_model(request)
    if not isinstance(request.get("query"), str) or not request["query"].strip():
        raise _BadRequest("invalid request: query must not be empty")
    documents = request.get("documents")
    if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
        raise _BadRequest("invalid request: documents must be a list of strings")
    if len(documents) > 1000:
        raise _BadRequest("invalid request: too many documents, at most 1000")
    top_n = request.get("top_n")
    if top_n is not None and (not isinstance(top_n, int) or top_n < 1):
        raise _BadRequest("invalid request: top_n must be a positive integer")


def _validate_embed(request: JsonDict) -> None:
    _require_model(request)
    if request.get("input_type") not in ("search_document", "search_query", "classification", "clustering",
                                         "image"):
        raise _BadRequest("invalid request: input_type must be search_document, search_query, classification, "
                          "clustering or image")
    texts = request.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise _BadRequest("invalid request: texts must be a non-empty list of strings (the stand-in embeds "
                          "texts only)")
    if len(texts) > 96:
        raise _BadRequest("invalid request: texts can have at most 96 elements")
    kinds = request.get("embedding_types")
    if kinds is not None and not isinstance(kinds, list):
        raise _BadRequest("invalid request: embedding_types must be a list")
