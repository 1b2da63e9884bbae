"""The aiohttp application of the HTTP API; the server mounts Slack's ``/slack/events`` on it too.

    POST /api/ask   bot.api.ask          (404 when API_TOKEN is unset)
    GET  /healthz   bot.api.operations
    GET  /readyz    bot.api.operations
    GET  /metrics   bot.api.operations   (404 when METRICS_TOKEN is unset)

Under /api/, aiohttp's own refusals (404, 405, 413 …) answer in JSON like everything else there.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from bot.api.ask import ask_handler
from bot.api.deps import ApiDeps, ServerState
from bot.api.operations import health_handler, metrics_handler, ready_handler

ASK_PATH = "/api/ask"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
MAX_BODY_BYTES = 256 * 1024


def web_application(deps: ApiDeps, state: ServerState, *, api_token: str | None,
                    metrics_token: str | None = None) -> web.Application:
    """The API's routes; ``api_token`` given: serve /api/ask; ``metrics_token`` given: serve /metrics."""
    application = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[_api_errors_as_json])
    application.router.add_post(ASK_PATH, ask_handler(deps, api_token))
    application.router.add_get(HEALTH_PATH, health_handler(deps, state))
    application.router.add_get(READY_PATH, ready_handler(deps, state))
    application.router.add_get(METRICS_PATH, metrics_handler(deps, metrics_token))
    return application


@web.middleware
async def _api_errors_as_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as error:
        if not request.path.startswith("/api/") or error.status < 400 or error.status >= 500:
            raise
        return web.json_response({"error": error.reason.lower()}, status=error.status, headers={
            k: v for k, v in error.headers.items() if k in ("Allow", "WWW-Authenticate")})
