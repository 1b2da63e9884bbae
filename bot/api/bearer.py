"""The bearer rule of ``/api/ask`` and ``/metrics``: each endpoint has its own token (API_TOKEN, METRICS_TOKEN);
unset, the endpoint is not served (404); a request without that token is refused (401)."""

from __future__ import annotations

import hmac

from aiohttp import web


def refused(request: web.Request, token: str | None) -> web.Response | None:
    """The refusal of a request that may not use this endpoint, or None when it may."""
    if token is None:
        raise web.HTTPNotFound()
    if not _bearer_matches(request, token):
        return web.json_response({"error": "a valid Authorization: Bearer token is required"}, status=401,
                                 headers={"WWW-Authenticate": 'Bearer realm="verbatim"'})
    return None


def _bearer_matches(request: web.Request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # Compared in constant time, as bytes (compare_digest refuses non-ASCII str).
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
