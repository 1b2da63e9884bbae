"""``POST /api/ask``: ``{"question": str, "channel"?: str}`` with ``Authorization: Bearer API_TOKEN`` -> the
``ask --json`` object (DESIGN.md "Contracts"); 400 for a bad body, 503 (with the error object) when answering
failed. The exchange is recorded by the one entry point (``bot.answer.ask``), source "api"."""

from __future__ import annotations

import json
import logging

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.answer.ask import Origin, ask
from bot.answer.render import ask_json
from bot.answer.types import Question
from bot.api.bearer import refused
from bot.api.deps import ApiDeps
from bot.log_format import question_fields

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 4000


def ask_handler(deps: ApiDeps, api_token: str | None) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        refusal = refused(request, api_token)
        if refusal is not None:
            return refusal
        parsed = await _ask_body(request)
        if isinstance(parsed, str):
            return web.json_response({"error": parsed}, status=400)
        with deps.in_flight.track():
            status, payload = await answer_for_api(parsed, deps)
        return web.json_response(payload, status=status, dumps=lambda o: json.dumps(o, ensure_ascii=False))

    return handle


async def answer_for_api(question: Question, deps: ApiDeps) -> tuple[int, dict[str, object]]:
    """(HTTP status, the ``ask --json`` object): 200 for an answer or no support, 503 for an error."""
    asked = await ask(question, deps.answer, deps.recorder, Origin("api"), limits=deps.limits)
    log.info("question api exchange=%s outcome=%s total_ms=%.0f", asked.exchange_id, asked.record.outcome,
             asked.record.timings_ms.get("total", 0.0),
             extra=question_fields(asked, reply_ts=None, log_questions=deps.log_questions))
    payload = ask_json(asked)
    return (503 if payload["status"] == "error" else 200), payload


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
    if len(data["question"]) > MAX_QUESTION_CHARS:
        return f'"question" is longer than {MAX_QUESTION_CHARS} characters'
    return Question(data["question"].strip(), channel or None)


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
