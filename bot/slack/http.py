"""Slack's Events API over HTTP: ``POST /slack/events``, the bolt-python aiohttp adapter's shape and nothing more:
translate the request -> dispatch it to Bolt -> translate the response.

Bolt verifies the signature and the timestamp (401 otherwise), answers url_verification, acks, and runs the
listeners. HTTP mode only; in Socket Mode events come over the socket. The server (``bot.serve``) mounts this
route on the HTTP API's application (``bot.api.app``), which serves /api/ask, /healthz, /readyz and /metrics.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from aiohttp.typedefs import Handler
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.app.async_app import AsyncApp

EVENTS_PATH = "/slack/events"
DISPATCH_AT_ONCE = 4


def mount_events(application: web.Application, bolt: AsyncApp) -> None:
    """Serve Slack's Events API (and interactivity) at /slack/events on ``application``."""
    application.router.add_post(EVENTS_PATH, _events(bolt))


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
