"""What operators probe and scrape.

    GET /healthz   liveness: 200 while serving, 503 once shutting down (so a load balancer stops sending)
    GET /readyz    readiness: {"status", "store", "database"}; 503 while the store cannot serve a search
                   (nothing can be answered) or shutting down. A database that is down is reported but does
                   not make the bot unready: answers go on and wait in the journal. Each check is bounded.
    GET /metrics   Prometheus metrics (``bot.metrics``) behind METRICS_TOKEN (``bot.api.bearer``)
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.api.bearer import refused
from bot.api.deps import ApiDeps, ServerState
from bot.metrics import CONTENT_TYPE
from storage.db import ping

READY_CHECK_S = 2.0  # each check's bound: a probe must answer quickly even when a dependency hangs


def health_handler(deps: ApiDeps, state: ServerState) -> Handler:
    async def health(request: web.Request) -> web.Response:
        body = {"status": "draining" if state.draining else "ok", "mode": state.mode, "in_flight": len(deps.in_flight)}
        return web.json_response(body, status=503 if state.draining else 200)

    return health


def ready_handler(deps: ApiDeps, state: ServerState) -> Handler:
    async def ready(request: web.Request) -> web.Response:
        store, database = await asyncio.gather(_store_ready(deps), ping(deps.sessions, READY_CHECK_S))
        status = "draining" if state.draining else "ready" if store else "not_ready"
        body = {"status": status, "store": "ok" if store else "unavailable",
                "database": "ok" if database else "unavailable (answers wait in the journal)"}
        return web.json_response(body, status=200 if status == "ready" else 503)

    return ready


async def _store_ready(deps: ApiDeps) -> bool:
    try:
        return await asyncio.wait_for(deps.answer.store.ready(), READY_CHECK_S)
    except TimeoutError:
        return False


def metrics_handler(deps: ApiDeps, metrics_token: str | None) -> Handler:
    async def metrics(request: web.Request) -> web.Response:
        refusal = refused(request, metrics_token)
        if refusal is not None:
            return refusal
        await deps.metrics.refresh(deps.journal, deps.sessions)
        return web.Response(body=deps.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    return metrics
