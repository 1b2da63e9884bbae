"""Serving a Bolt app over HTTP the way the bot does: aiohttp, Bolt's adapter, port 0."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.app.async_app import AsyncApp

from tests.standins._common import serve

EVENTS_PATH = "/slack/events"


@asynccontextmanager
async def serve_bolt(app: AsyncApp) -> AsyncIterator[str]:
    """Serve ``app``'s Events API endpoint; yields its URL (``http://127.0.0.1:PORT/slack/events``)."""

    async def events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    web_app = web.Application()
    web_app.router.add_post(EVENTS_PATH, events)
    async with serve(web_app) as base_url:
        yield base_url + EVENTS_PATH
