"""A local stand-in for Notion's API (version 2025-09-03), for the ``notion`` connector's real ``notion-client``.

::

    async with NotionStandIn(token="ntn_t0ken", workspace="Acme").running() as notion:
        notion.put(Page(ROOT, "Support", (h2("Refunds"), p("Annual plans …"))))
        notion.script("/v1/search", status(429, retry_after=1), status(500))

Endpoints (JSON, as Notion's API reference describes them; lists of ``page_size`` items chained by
``next_cursor`` / ``has_more``, the cursor being the id of the next item, as Notion's are):

- ``POST /v1/search``: ``filter: {property: object, value: page | data_source}`` (``database`` is refused, as it
  is in 2025-09-03), ``sort: {timestamp: last_edited_time, direction}`` (newest first without one); every page
  shared with the integration, trashed ones included (``in_trash`` / ``archived``);
- ``GET /v1/pages/{id}``, ``GET /v1/blocks/{id}``, ``GET /v1/blocks/{id}/children``: ``object_not_found`` (404) for
  what is not shared;
- ``GET /v1/users/me``: the integration's bot user, with its workspace's name.

Every request must carry ``Authorization: Bearer TOKEN`` (else 401 ``unauthorized``) and ``Notion-Version:
2025-09-03`` (else 400 ``missing_version`` / ``validation_error``). Every text is split into two rich-text runs
(the second bold), so a reader must join them. Time is a counter the tests move, one minute per ``put`` (Notion
keeps ``last_edited_time`` to the minute); block ids are derived from the page and the block's place, so a
heading keeps its id across edits. ``script(path, *responses)`` queues answers for requests whose path starts
with ``path`` (``status``, ``real`` from ``tests.standins._common``), in Notion's error body. ``requests`` records
``(method, path, query, body)``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from tests.standins._common import Scripted, Scripts, real, serve, status

__all__ = ["B", "DataSource", "NotionStandIn", "Page", "block_id_at", "child_page", "code", "divider", "h1", "h2",
           "h3", "image", "li", "p", "quote", "real", "status", "table", "todo", "toggle"]

VERSION = "2025-09-03"
_CODES = {400: "validation_error", 401: "unauthorized", 403: "restricted_resource", 404: "object_not_found",
          409: "conflict_error", 429: "rate_limited", 500: "internal_server_error", 503: "service_unavailable"}


@dataclass(frozen=True)
class B:
    """A block as a test writes it: its type, text, children; a table's rows; a child page's id."""

    type: str
    text: str = ""
    children: tuple[B, ...] = ()
    checked: bool = False
    rows: tuple[tuple[str, ...], ...] = ()
    page: str = ""


def h1(text: str, *children: B) -> B:
    return B("heading_1", text, children)


def h2(text: str, *children: B) -> B:
    return B("heading_2", text, children)


def h3(text: str) -> B:
    return B("heading_3", text)


def p(text: str, *children: B) -> B:
    return B("paragraph", text, children)


def li(text: str, *children: B, numbered: bool = False) -> B:
    return B("numbered_list_item" if numbered else "bulleted_list_item", text, children)


def todo(text: str, checked: bool = False) -> B:
    return B("to_do", text, checked=checked)


def quote(text: str) -> B:
    return B("quote", text)


def toggle(text: str, *children: B) -> B:
    return B("toggle", text, children)


def code(text: str) -> B:
    return B("code", text)


def table(*rows: tuple[str, ...]) -> B:
    return B("table", rows=rows)


def image(caption: str = "") -> B:
    return B("image", caption)


def divider() -> B:
    return B("divider")


def child_page(page_id: str, title: str) -> B:
    return B("child_page", title, page=page_id)


@dataclass(frozen=True)
class Page:
    id: str  # 32 hex digits
    title: str
    blocks: tuple[B, ...] = ()
    parent: tuple[str, str] = ("workspace", "")  # ("page_id" | "data_source_id" | "block_id", id)
    in_trash: bool = False
    public: bool = False
    edited: int = 0  # set by ``put``


@dataclass(frozen=True)
class DataSource:
    id: str
    database_id: str
    title: str
    parent: tuple[str, str]  # where its database sits


def dashed(key: str) -> str:
    return str(uuid.UUID(key))


class NotionStandIn:
    def __init__(self, *, token: str, workspace: str, page_size: int = 2) -> None:
        self.token, self.workspace, self.page_size = token, workspace, page_size
        self.pages: dict[str, Page] = {}
        self.data_sources: dict[str, DataSource] = {}
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self._scripts = Scripts()
        self.now = 1_780_000_000 // 60 * 60
        self.base_url = ""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[NotionStandIn]:
        app = web.Application(middlewares=[self._gate])
        app.router.add_post("/v1/search", self._search)
        app.router.add_get("/v1/pages/{id}", self._page)
        app.router.add_get("/v1/blocks/{id}/children", self._children)
        app.router.add_get("/v1/blocks/{id}", self._block)
        app.router.add_get("/v1/users/me", self._me)
        async with serve(app) as url:
            self.base_url = url
            yield self

    def put(self, page: Page) -> None:
        """Share (or edit) a page: its edit time is the next minute."""
        self.now += 60
        self.pages[page.id] = replace(page, edited=self.now)

    def unshare(self, page_id: str) -> None:
        self.pages.pop(page_id, None)

    def script(self, path: str, *responses: Scripted) -> None:
        self._scripts.add(path, *responses)

    def block_reads(self) -> list[str]:
        """The ids (32 hex) whose children were asked for, in order."""
        return [path.split("/")[3].replace("-", "") for method, path, _, _ in self.requests
                if path.endswith("/children")]

    # -- the API ---------------------------------------------------------------------------------

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body = await request.json() if request.body_exists else None
        self.requests.append((request.method, request.path, dict(request.query), body))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return _error(401, "API token is invalid.")
        version = request.headers.get("Notion-Version")
        if version is None:
            return _error(400, "Notion-Version header failed validation: Notion-Version header should be defined.",
                          code="missing_version")
        if version != VERSION:
            return _error(400, f"Notion-Version {version} is not served by this stand-in.")
        scripted = self._scripts.next(request.path)
        if scripted is not None:
            return _error(scripted.status, f"scripted {scripted.status}", headers=scripted.headers)
        return await handler(request)

    def _list(self, items: list[dict[str, Any]], cursor: str | None, size: object, kind: str) -> web.Response:
        count = min(int(size), self.page_size) if isinstance(size, int | str) and str(size).isdigit() else \
            self.page_size
        ids = [item["id"] for item in items]
        if cursor is not None and cursor not in ids:
            return _error(400, f"start_cursor {cursor} is not valid.")
        start = ids.index(cursor) if cursor is not None else 0
        chunk = items[start : start + count]
        more = start + count < len(items)
        return web.json_response({"object": "list", "results": chunk, "next_cursor": ids[start + count] if more else
                                  None, "has_more": more, "type": kind, kind: {},
                                  "request_id": str(uuid.uuid4())})

    async def _search(self, request: web.Request) -> web.Response:
        body = await request.json() if request.body_exists else {}
        wanted = (body.get("filter") or {}).get("value")
        sort = body.get("sort") or {"timestamp": "last_edited_time", "direction": "descending"}
        if wanted == "page":
            pages = sorted(self.pages.values(), key=lambda pg: (pg.edited, pg.id),
                           reverse=sort.get("direction") != "ascending")
            items = [self._page_json(pg) for pg in pages]
        elif wanted == "data_source":
            items = [self._data_source_json(ds) for ds in self.data_sources.values()]
        else:
            return _error(400, 'body failed validation: body.filter.value should be `"page"` or `"data_source"`, '
                               f'instead was `"{wanted}"`.')
        return self._list(items, body.get("start_cursor"), body.get("page_size", 100), "page_or_data_source")

    async def _page(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["id"].replace("-", ""))
        if page is None:
            return _not_found(request.match_info["id"], "page")
        return web.json_response(self._page_json(page))

    async def _children(self, request: web.Request) -> web.Response:
        key = request.match_info["id"].replace("-", "")
        if key in self.pages:  # a page's own blocks: found without building every page's (a sync asks for each page)
            children = blocks_of_page(self.pages[key])
        elif key in (blocks := self._blocks()) and blocks[key][0].type not in ("child_page",):
            children = blocks[key][2]
        else:
            return _not_found(request.match_info["id"], "block")
        items = [self._block_json(block, block_id, parent) for block, block_id, parent in children]
        return self._list(items, request.query.get("start_cursor"), request.query.get("page_size", "100"), "block")

    async def _block(self, request: web.Request) -> web.Response:
        key = request.match_info["id"].replace("-", "")
        found = self._blocks().get(key)
        if found is None:
            return _not_found(request.match_info["id"], "block")
        block, parent, _ = found
        return web.json_response(self._block_json(block, key, parent))

    async def _me(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "user", "id": dashed("b0" * 16), "name": "Verbatim docs",
                                  "avatar_url": None, "type": "bot",
                                  "bot": {"owner": {"type": "workspace", "workspace": True},
                                          "workspace_name": self.workspace}, "request_id": str(uuid.uuid4())})

    # -- shapes ------------------------------------------------------------------------------------

    def _blocks(self) -> dict[str, tuple[B, tuple[str, str], list[tuple[B, str, tuple[str, str]]]]]:
        """Every block of every shared page: id -> (block, its parent, its children with their ids)."""
        found: dict[str, tuple[B, tuple[str, str], list[tuple[B, str, tuple[str, str]]]]] = {}
        for page in self.pages.values():
            stack = [(block, block_id, parent) for block, block_id, parent in blocks_of_page(page)]
            while stack:
                block, block_id, parent = stack.pop()
                children = _children_of(block, block_id)
                found[block_id] = (block, parent, children)
                stack.extend(children)
        return found

    def _stamp(self, seconds: int) -> str:
        return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:00.000Z")

    def _page_json(self, page: Page) -> dict[str, Any]:
        in_database = page.parent[0] == "data_source_id"
        properties: dict[str, Any] = {("Name" if in_database else "title"): {"id": "title", "type": "title",
                                                                             "title": rich_text(page.title)}}
        if in_database:
            properties["Status"] = {"id": "s%3Ft", "type": "select", "select": {"name": "Published"}}
        slug = "-".join(page.title.split()) or "Untitled"
        return {"object": "page", "id": dashed(page.id), "created_time": self._stamp(1_700_000_000),
                "last_edited_time": self._stamp(page.edited), "created_by": {"object": "user", "id": dashed("a" * 32)},
                "last_edited_by": {"object": "user", "id": dashed("a" * 32)}, "cover": None, "icon": None,
                "parent": self._parent_json(page.parent), "archived": page.in_trash, "in_trash": page.in_trash,
                "is_locked": False, "properties": properties, "url": f"https://www.notion.so/{slug}-{page.id}",
                "public_url": f"https://acme.notion.site/{slug}-{page.id}" if page.public else None}

    def _parent_json(self, parent: tuple[str, str]) -> dict[str, Any]:
        kind, key = parent
        if kind == "workspace":
            return {"type": "workspace", "workspace": True}
        if kind == "data_source_id":
            return {"type": kind, kind: dashed(key), "database_id": dashed(self.data_sources[key].database_id)}
        return {"type": kind, kind: dashed(key)}

    def _data_source_json(self, source: DataSource) -> dict[str, Any]:
        return {"object": "data_source", "id": dashed(source.id), "created_time": self._stamp(1_700_000_000),
                "last_edited_time": self._stamp(self.now), "properties": {},
                "parent": {"type": "database_id", "database_id": dashed(source.database_id)},
                "database_parent": self._parent_json(source.parent), "title": rich_text(source.title),
                "url": f"https://www.notion.so/{source.database_id}", "archived": False, "in_trash": False}

    def _block_json(self, block: B, block_id: str, parent: tuple[str, str]) -> dict[str, Any]:
        if block.type == "child_page":
            body: dict[str, Any] = {"title": block.text}
        elif block.type == "table":
            body = {"table_width": max((len(r) for r in block.rows), default=0), "has_column_header": True,
                    "has_row_header": False}
        elif block.type == "table_row":
            body = {"cells": [rich_text(cell) for cell in block.rows[0]]}
        elif block.type == "image":
            body = {"type": "external", "external": {"url": "https://example.test/a.png"},
                    "caption": rich_text(block.text)}
        elif block.type == "divider":
            body = {}
        else:
            body = {"rich_text": rich_text(block.text), "color": "default"}
            if block.type == "to_do":
                body["checked"] = block.checked
            if block.type == "code":
                body |= {"language": "plain text", "caption": []}
            if block.type.startswith("heading_"):
                body["is_toggleable"] = bool(block.children)
        has_children = bool(block.children or block.rows) or (block.type == "child_page" and block.page in self.pages)
        return {"object": "block", "id": dashed(block_id), "parent": self._parent_json(parent),
                "created_time": self._stamp(1_700_000_000), "last_edited_time": self._stamp(self.now),
                "created_by": {"object": "user", "id": dashed("a" * 32)},
                "last_edited_by": {"object": "user", "id": dashed("a" * 32)},
                "has_children": has_children, "archived": False, "in_trash": False, "type": block.type,
                block.type: body}


def blocks_of_page(page: Page) -> list[tuple[B, str, tuple[str, str]]]:
    """The page's top blocks, each with its id (a child page's block has the child page's id) and parent."""
    return [(block, _block_id(page.id, str(i), block), ("page_id", page.id)) for i, block in enumerate(page.blocks)]


def _children_of(block: B, block_id: str) -> list[tuple[B, str, tuple[str, str]]]:
    if block.type == "child_page":
        return []
    if block.type == "table":
        return [(B("table_row", rows=(row,)), _block_id(block_id, f"r{i}", None), ("block_id", block_id))
                for i, row in enumerate(block.rows)]
    return [(child, _block_id(block_id, str(i), child), ("block_id", block_id))
            for i, child in enumerate(block.children)]


def block_id_at(page_id: str, *places: int) -> str:
    """The id the stand-in gives the block at ``places`` (indexes from the page's top blocks down)."""
    current = page_id
    for place in places:
        current = _block_id(current, str(place), None)
    return current


def _block_id(parent: str, place: str, block: B | None) -> str:
    if block is not None and block.type == "child_page":
        return block.page
    return uuid.uuid5(uuid.NAMESPACE_URL, f"notion-standin/{parent}/{place}").hex


def rich_text(text: str) -> list[dict[str, Any]]:
    head, space, tail = text.partition(" ")
    runs = [run for run in (head + space, tail) if run]
    return [{"type": "text", "text": {"content": run, "link": None},
             "annotations": {"bold": i == 1, "italic": False, "strikethrough": False, "underline": False,
                             "code": False, "color": "default"}, "plain_text": run, "href": None}
            for i, run in enumerate(runs)]


def _error(status_code: int, message: str, *, code: str | None = None,
           headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"object": "error", "status": status_code,
                              "code": code or _CODES.get(status_code, "internal_server_error"), "message": message,
                              "request_id": str(uuid.uuid4())}, status=status_code, headers=headers or {})


def _not_found(object_id: str, kind: str) -> web.Response:
    return _error(404, f"Could not find {kind} with ID: {object_id}. Make sure the relevant pages and databases "
                       "are shared with your integration.")
