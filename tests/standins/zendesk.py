"""A local stand-in for the Zendesk Help Center API, for the ``zendesk`` connector's real ``httpx`` client.

::

    async with ZendeskStandIn(token="t0ken", email="bot@acme.test") as zd:
        zd.put(Article(1, "en-us", "Refunds", "<h2>Annual plans</h2><p>…</p>", section_id=10))
        zd.script("/api/v2/help_center/incremental/articles", status(429, retry_after=1), status(500))

Endpoints (GET, JSON, as Zendesk's API reference describes them; pages of ``page_size`` items chained by
``next_page`` absolute URLs): ``/api/v2/help_center/incremental/articles?start_time=T`` (articles whose
``updated_at`` is at or after ``T``, oldest first, with ``end_time``: the newest ``updated_at`` on the page),
``/api/v2/help_center/{locale}/articles``, ``/sections``, ``/categories``, ``/api/v2/users/me``. Every request must
carry ``Authorization: Basic base64(email/token:TOKEN)`` or gets 401 ``{"error": "Couldn't authenticate you"}``.
Drafts are listed as Zendesk lists them (``draft: true``); ``remove`` archives an article (gone from both). Time is
a counter the tests move (``tick``), so ``updated_at`` never depends on the clock.

``script(path, *responses)`` queues answers for requests whose path starts with ``path``, one per request, before
the real answer: ``status(code, retry_after=...)``, or ``real()`` to let one request through. ``requests`` records ``(path, query, monotonic time)``.
"""

from __future__ import annotations

import base64
import datetime as dt
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from tests.standins._common import Scripted, Scripts, real, serve, status

__all__ = ["Article", "Scripted", "ZendeskStandIn", "real", "status"]


@dataclass(frozen=True)
class Article:
    id: int
    locale: str
    title: str
    body: str
    section_id: int | None = None
    draft: bool = False
    user_segment_id: int | None = None
    updated: int = 0  # seconds since the epoch, set by ``put``


class ZendeskStandIn:
    def __init__(self, *, token: str, email: str, page_size: int = 2) -> None:
        self.token, self.email, self.page_size = token, email, page_size
        self.articles: dict[tuple[int, str], Article] = {}
        self.sections: dict[str, list[dict[str, Any]]] = {}
        self.categories: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, dict[str, str], float]] = []
        self._scripts = Scripts()
        self.now = 1_780_000_000
        self.base_url = ""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ZendeskStandIn]:
        app = web.Application()
        app.router.add_get("/api/v2/help_center/incremental/articles", self._incremental)
        app.router.add_get("/api/v2/help_center/{locale}/articles", self._articles)
        app.router.add_get("/api/v2/help_center/{locale}/sections", self._sections)
        app.router.add_get("/api/v2/help_center/{locale}/categories", self._categories)
        app.router.add_get("/api/v2/users/me", self._me)
        app.middlewares.append(self._gate)
        async with serve(app) as url:
            self.base_url = url
            yield self

    def tick(self, seconds: int = 60) -> None:
        self.now += seconds

    def put(self, article: Article) -> None:
        self.tick()
        self.articles[(article.id, article.locale)] = replace(article, updated=self.now)

    def remove(self, article_id: int, locale: str) -> None:
        self.articles.pop((article_id, locale), None)

    def script(self, path: str, *responses: Scripted) -> None:
        self._scripts.add(path, *responses)

    # -- the API ---------------------------------------------------------------------------------

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append((request.path, dict(request.query), time.monotonic()))
        expected = "Basic " + base64.b64encode(f"{self.email}/token:{self.token}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            return web.json_response({"error": "Couldn't authenticate you"}, status=401)
        scripted = self._scripts.next(request.path)
        if scripted is not None:
            return web.json_response({"error": f"scripted {scripted.status}"}, status=scripted.status,
                                     headers=scripted.headers)
        return await handler(request)

    def _json(self, article: Article) -> dict[str, Any]:
        stamp = dt.datetime.fromtimestamp(article.updated, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"id": article.id, "locale": article.locale, "title": article.title, "body": article.body,
                "section_id": article.section_id, "draft": article.draft, "user_segment_id": article.user_segment_id,
                "html_url": f"{self.base_url}/hc/{article.locale}/articles/{article.id}",
                "updated_at": stamp, "edited_at": stamp, "created_at": stamp, "source_locale": "en-us"}

    def _page(self, request: web.Request, items: list[dict[str, Any]], key: str, **extra: Any) -> web.Response:
        page = int(request.query.get("page", "1"))
        size = min(int(request.query.get("per_page", self.page_size)), self.page_size)
        chunk = items[(page - 1) * size : page * size]
        query = dict(request.query) | {"page": str(page + 1)}
        more = page * size < len(items)
        next_page = str(request.url.with_query(query)) if more else None
        return web.json_response({key: chunk, "next_page": next_page, "count": len(items), **extra})

    async def _incremental(self, request: web.Request) -> web.Response:
        start = int(request.query["start_time"])
        changed = sorted((a for a in self.articles.values() if a.updated >= start), key=lambda a: (a.updated, a.id))
        items = [self._json(a) for a in changed]
        page = int(request.query.get("page", "1"))
        on_page = changed[(page - 1) * self.page_size : page * self.page_size]
        end_time = on_page[-1].updated + 1 if on_page else self.now
        return self._page(request, items, "articles", end_time=end_time)

    async def _articles(self, request: web.Request) -> web.Response:
        locale = request.match_info["locale"]
        items = [self._json(a) for a in sorted(self.articles.values(), key=lambda a: a.id) if a.locale == locale]
        return self._page(request, items, "articles")

    async def _sections(self, request: web.Request) -> web.Response:
        return self._page(request, self.sections.get(request.match_info["locale"], []), "sections")

    async def _categories(self, request: web.Request) -> web.Response:
        return self._page(request, self.categories.get(request.match_info["locale"], []), "categories")

    async def _me(self, request: web.Request) -> web.Response:
        return web.json_response({"user": {"id": 1, "email": self.email, "name": "Docs bot", "role": "agent"}})
