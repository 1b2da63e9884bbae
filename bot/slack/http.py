"""The bot's HTTP server: Slack's Events API, ``POST /api/ask`` for other tools, and a health check.

    POST /slack/events   Bolt's aiohttp adapter, nothing more: Bolt verifies the signature and the timestamp
                         (401 otherwise), answers url_verification, acks, and runs the listeners
                         (HTTP mode only; in Socket Mode events come over the socket)
    POST /api/ask        {"question": str, "channel"?: str} with ``Authorization: Bearer API_TOKEN`` ->
                         the ``ask --json`` object (DESIGN.md); 401 without the token, 404 when API_TOKEN is
                         unset, 400 for a bad body, 503 (with the error object) when answering failed
    GET  /metrics        Prometheus metrics (``bot.metrics``) with ``Authorization: Bearer METRICS_TOKEN``: 401
                         without the token, 404 when METRICS_TOKEN is unset (the rule of /api/ask)
    GET  /healthz        liveness: 200 while serving, 503 once shutting down (so a load balancer stops sending)
    GET  /readyz         readiness: {"status", "store", "database"}; 503 while the store cannot serve a search
                         (nothing can be answered) or shutting down. A database that is down is reported but
                         does not make the bot unready: answers go on and wait in the journal.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.app.async_app import AsyncApp
from sqlalchemy import text

from bot.answer.ask import Origin, ask
from bot.answer.render import ask_json
from bot.answer.service import Question
from bot.log_format import question_fields
from bot.metrics import CONTENT_TYPE
from bot.slack.deps import SlackDeps
from storage.journal import DATABASE_DOWN

EVENTS_PATH = "/slack/events"
ASK_PATH = "/api/ask"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
READY_CHECK_S = 2.0  # each check's bound: a probe must answer quickly even when a dependency hangs

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
DISPATCH_AT_ONCE = 4


@dataclass
class ServerState:
    mode: str  # "http" or "socket"
    draining: bool = False


def web_application(deps: SlackDeps, state: ServerState, *, bolt: AsyncApp | None, api_token: str | None,
                    metrics_token: str | None = None) -> web.Application:
    """The aiohttp application; ``bolt`` given: serve the Events API; ``api_token`` given: serve /api/ask;
    ``metrics_token`` given: serve /metrics."""
    application = web.Application(client_max_size=256 * 1024, middlewares=[_api_errors_as_json])
    if bolt is not None:
        application.router.add_post(EVENTS_PATH, _events(bolt))
    application.router.add_post(ASK_PATH, _ask(deps, api_token))
    application.router.add_get(HEALTH_PATH, _health(deps, state))
    application.router.add_get(READY_PATH, _ready(deps, state))
    application.router.add_get(METRICS_PATH, _metrics(deps, metrics_token))
    return application


def _events(bolt: AsyncApp) -> Handler:
    # A burst of deliveries is let into Bolt a few at a time: each dispatch is a millisecond or two of plain
    # Python, and a hundred started together would hold the event loop for ~100 ms (bench/slack.py).
    gate = asyncio.Semaphore(DISPATCH_AT_ONCE)

    async def events(request: web.Request) -> web.Response:
        refused = await _malformed_delivery(request)
        if refused is not None:
            return refused
        bolt_request = await to_bolt_request(request)
        async with gate:
            response = await bolt.async_dispatch(bolt_request)
        return await to_aiohttp_response(response)

    return events


async def _malformed_delivery(request: web.Request) -> web.Response | None:
    """What Slack's Events API never sends, refused before Bolt sees it (Bolt would fail with a 500).

    A timestamp that is not a number cannot be verified: 401, as for any unverifiable request. A body that is
    not UTF-8, or JSON that does not parse to an object: 400. A form body (interactivity) is left to Bolt.
    """
    if not request.headers.get("X-Slack-Request-Timestamp", "").strip().isdigit():
        return web.json_response({"error": "invalid request"}, status=401)
    raw = await request.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return web.json_response({"error": "the body is not UTF-8"}, status=400)
    if request.content_type == "application/json":
        try:
            parsed = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return web.json_response({"error": "the body is not JSON"}, status=400)
        if not isinstance(parsed, dict):
            return web.json_response({"error": "the body is not a JSON object"}, status=400)
    return None


@web.middleware
async def _api_errors_as_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Under /api/, aiohttp's own refusals (404, 405, 413 …) answer in JSON like everything else there."""
    try:
        return await handler(request)
    except web.HTTPException as error:
        if not request.path.startswith("/api/") or error.status < 400 or error.status >= 500:
            raise
        return web.json_response({"error": error.reason.lower()}, status=error.status, headers={
            k: v for k, v in error.headers.items() if k in ("Allow", "WWW-Authenticate")})


def _ready(deps: SlackDeps, state: ServerState) -> Handler:
    async def ready(request: web.Request) -> web.Response:
        store, database = await asyncio.gather(_store_ready(deps), _database_ready(deps))
        status = "draining" if state.draining else "ready" if store else "not_ready"
        body = {"status": status, "store": "ok" if store else "unavailable",
                "database": "ok" if database else "unavailable (answers wait in the journal)"}
        return web.json_response(body, status=200 if status == "ready" else 503)

    return ready


async def _store_ready(deps: SlackDeps) -> bool:
    try:
        return await asyncio.wait_for(deps.answer.store.ready(), READY_CHECK_S)
    except TimeoutError:
        return False


async def _database_ready(deps: SlackDeps) -> bool:
    async def select_one() -> None:
        async with deps.sessions() as session:
            await session.execute(text("SELECT 1"))
    try:
        await asyncio.wait_for(select_one(), READY_CHECK_S)
    except DATABASE_DOWN:
        return False
    return True


def _health(deps: SlackDeps, state: ServerState) -> Handler:
    async def health(request: web.Request) -> web.Response:
        body = {"status": "draining" if state.draining else "ok", "mode": state.mode, "in_flight": len(deps.in_flight)}
        return web.json_response(body, status=503 if state.draining else 200)

    return health


def _metrics(deps: SlackDeps, metrics_token: str | None) -> Handler:
    async def metrics(request: web.Request) -> web.Response:
        refused = _refused(request, metrics_token)
        if refused is not None:
            return refused
        await deps.metrics.refresh(deps.journal, deps.sessions)
        return web.Response(body=deps.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    return metrics


def _refused(request: web.Request, token: str | None) -> web.Response | None:
    """The bearer rule of /api/ask and /metrics: 404 when the endpoint's token is unset, 401 without it."""
    if token is None:
        raise web.HTTPNotFound()
    if not _bearer_matches(request, token):
        return web.json_response({"error": "a valid Authorization: Bearer token is required"}, status=401,
                                 headers={"WWW-Authenticate": 'Bearer realm="verbatim"'})
    return None


def _ask(deps: SlackDeps, api_token: str | None) -> Handler:
    async def ask(request: web.Request) -> web.Response:
        refused = _refused(request, api_token)
        if refused is not None:
            return refused
        parsed = await _ask_body(request)
        if isinstance(parsed, str):
            return web.json_response({"error": parsed}, status=400)
        with deps.in_flight.track():
            status, payload = await answer_for_api(parsed, deps)
        return web.json_response(payload, status=status, dumps=lambda o: json.dumps(o, ensure_ascii=False))

    return ask


def _bearer_matches(request: web.Request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # Compared in constant time, as bytes (compare_digest refuses non-ASCII str).
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


async def _ask_body(request: web.Request) -> Question | str:
    """The question of a request, or what is wrong with the body."""
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return 'the body must be JSON: {"question": "...", "channel": "C..."}'
    if not isinstance(data, dict) or not isinstance(data.get("question"), str) or not data["question"].strip():
        return '"question" must be a non-empty string'
    channel = data.get("channel")
    if channel is not None and not isinstance(channel, str):
        return '"channel" must be a Slack channel id string'
    if not _is_text(data["question"]) or (channel is not None and not _is_text(channel)):
        return '"question" and "channel" must be Unicode text (a lone surrogate such as \\ud800 is not)'
    if len(data["question"]) > 4000:
        return '"question" is longer than 4000 characters'
    return Question(data["question"].strip(), channel or None)


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def answer_for_api(question: Question, deps: SlackDeps) -> tuple[int, dict[str, object]]:
    """(HTTP status, the ``ask --json`` object); the exchange is recorded by the entry point, source "api"."""
    asked = await ask(question, deps.answer, deps.recorder, Origin("api"), limits=deps.limits)
    log.info("question api exchange=%s outcome=%s total_ms=%.0f", asked.exchange_id, asked.record.outcome,
             asked.record.timings_ms.get("total", 0.0),
             extra=question_fields(asked, reply_ts=None, log_questions=deps.options.log_questions))
    payload = ask_json(asked)
    return (503 if payload["status"] == "error" else 200), payload
