"""A local stand-in for Confluence's REST API (v1), for the ``confluence`` connector's real ``atlassian-python-api``
client (``requests``).

::

    async with ConfluenceStandIn(token="t0ken", email="bot@acme.test").running() as cf:   # Cloud, under /wiki
        cf.put(Page("101", "ENG", "Refunds", "<h2>Annual plans</h2><p>…</p>"))
        cf.restrict("101", groups=("support",))
        cf.script("/rest/api/content/search", status(429, retry_after=1), real(), status(500))

Two editions: with ``email``, Cloud (``Authorization: Basic base64(email:token)``, context ``/wiki``, cursor
pagination, ``/spaces/KEY/pages/ID/Title`` links, users by ``accountId``, attachments downloaded through
``/rest/api/content/{page}/child/attachment/{id}/download``); without, Data Center (``Bearer`` personal access
token, context ``/confluence``, ``start`` pagination, ``viewpage.action`` links, users by ``username``,
``/download/attachments/{page}/{file}``). Anything else gets 401 ``{"statusCode": 401, "message": ...}``.

Endpoints (GET, JSON, under the context): ``/rest/api/content/search?cql=&expand=&limit=`` (pages of
``page_size``, chained by ``_links.next``), ``/rest/api/content/{id}?expand=``,
``/rest/api/content/{id}/restriction/byOperation``, ``/rest/api/space/{key}``, ``/rest/api/user/current`` and the
downloads. Only what ``expand`` asks for is expanded (``space``, ``version``, ``ancestors``, ``body.storage``,
``container``, ``restrictions.read.restrictions.user|group``), as Confluence does. CQL: ``type``, ``space``,
``id``, ``label``, ``lastmodified`` with ``= != > >= < <= in (...) not in (...)``, ``and``/``or``/``not`` and
parentheses; anything else is 400. ``lastmodified`` in CQL is read in the user's time zone, ``cql_zone`` (UTC
unless a test moves it).

Time is a counter the tests move (``tick``): ``put`` makes a new version at the current time; ``restrict`` and
``move`` change a page without a new version, as Confluence does. ``script``, ``requests``: as in the Zendesk
stand-in (paths relative to the context).
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote_plus

from aiohttp import web

from tests.standins._common import Scripted, Scripts, real, serve, status

__all__ = ["Attachment", "ConfluenceStandIn", "Page", "real", "status"]

Content = dict[str, Any]


@dataclass(frozen=True)
class Page:
    id: str
    space: str
    title: str
    body: str  # storage format (XHTML)
    parent: str | None = None
    labels: tuple[str, ...] = ()
    read_groups: tuple[str, ...] = ()
    read_users: tuple[str, ...] = ()
    version: int = 0  # set by ``put``
    when: int = 0  # seconds since the epoch, set by ``put``


@dataclass(frozen=True)
class Attachment:
    id: str
    page: str
    title: str
    data: bytes
    media_type: str = "application/pdf"
    version: int = 0
    when: int = 0


class CqlError(ValueError):
    pass


class ConfluenceStandIn:
    def __init__(self, *, token: str, email: str | None = None, page_size: int = 2,
                 spaces: dict[str, str] | None = None) -> None:
        self.token, self.email, self.page_size = token, email, page_size
        self.cloud = email is not None
        self.context = "/wiki" if self.cloud else "/confluence"
        self.spaces = dict(spaces or {})
        self.pages: dict[str, Page] = {}
        self.attachments: dict[str, Attachment] = {}
        self.requests: list[tuple[str, dict[str, str], float]] = []
        self._scripts = Scripts()
        self.now = 1_780_000_000
        self.cql_zone: dt.tzinfo = dt.UTC
        self.base_url = ""  # the server, without the context

    @property
    def url(self) -> str:
        """What a source's ``url`` is: the site with its context."""
        return self.base_url + self.context

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ConfluenceStandIn]:
        app = web.Application(middlewares=[self._gate])
        api = f"{self.context}/rest/api"
        app.router.add_get(f"{api}/content/search", self._search)
        app.router.add_get(f"{api}/content/{{id}}", self._content)
        app.router.add_get(f"{api}/content/{{id}}/restriction/byOperation", self._restrictions)
        app.router.add_get(f"{api}/content/{{page}}/child/attachment/{{id}}/download", self._cloud_download)
        app.router.add_get(f"{self.context}/download/attachments/{{page}}/{{name}}", self._dc_download)
        app.router.add_get(f"{api}/space/{{key}}", self._space)
        app.router.add_get(f"{api}/user/current", self._me)
        async with serve(app) as url:
            self.base_url = url
            yield self

    # -- what tests do at the source -------------------------------------------------------------

    def tick(self, seconds: int = 120) -> None:
        self.now += seconds

    def put(self, page: Page) -> None:
        """Create the page, or save a new version of it (keeping its restrictions unless ``page`` sets some)."""
        self.tick()
        old = self.pages.get(page.id)
        if old is not None and not page.read_groups and not page.read_users:
            page = replace(page, read_groups=old.read_groups, read_users=old.read_users)
        self.pages[page.id] = replace(page, version=(old.version if old else 0) + 1, when=self.now)

    def restrict(self, page_id: str, *, groups: tuple[str, ...] = (), users: tuple[str, ...] = ()) -> None:
        self.pages[page_id] = replace(self.pages[page_id], read_groups=groups, read_users=users)

    def move(self, page_id: str, space: str) -> None:
        self.pages[page_id] = replace(self.pages[page_id], space=space, parent=None)

    def remove(self, page_id: str) -> None:
        self.pages.pop(page_id, None)

    def attach(self, attachment: Attachment) -> None:
        self.tick()
        old = self.attachments.get(attachment.id)
        self.attachments[attachment.id] = replace(attachment, version=(old.version if old else 0) + 1, when=self.now)

    def script(self, path: str, *responses: Scripted) -> None:
        self._scripts.add(self.context + path, *responses)

    def searched(self) -> list[dict[str, str]]:
        """The query of every CQL search asked, in order."""
        return [q for p, q, _ in self.requests if p == "/rest/api/content/search"]

    # -- the API ---------------------------------------------------------------------------------

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append((request.path.removeprefix(self.context), dict(request.query), time.monotonic()))
        if self.cloud:
            expected = "Basic " + base64.b64encode(f"{self.email}:{self.token}".encode()).decode()
        else:
            expected = f"Bearer {self.token}"
        if request.headers.get("Authorization") != expected:
            return _error(401, "This request requires authentication")
        scripted = self._scripts.next(request.path)
        if scripted is not None:
            return web.json_response({"statusCode": scripted.status, "message": f"scripted {scripted.status}"},
                                     status=scripted.status, headers=scripted.headers)
        return await handler(request)

    async def _search(self, request: web.Request) -> web.Response:
        try:
            matches = compile_cql(request.query.get("cql", ""), self.cql_zone)
        except CqlError as error:
            return _error(400, f"Could not parse cql : {request.query.get('cql')} ({error})")
        expand = set(request.query.get("expand", "").split(","))
        found = [self._json(c, expand) for c in self._contents() if matches(self._fields(c))]
        limit = min(int(request.query.get("limit", "25")), self.page_size)
        start = int(base64.b64decode(request.query["cursor"]).decode()) if "cursor" in request.query \
            else int(request.query.get("start", "0"))
        links: dict[str, str] = {"base": self.url, "context": self.context}
        if start + limit < len(found):
            query = {"cql": request.query.get("cql", ""), "expand": request.query.get("expand", ""),
                     "limit": str(limit)}
            if self.cloud:
                query = {"next": "true", "cursor": base64.b64encode(str(start + limit).encode()).decode(), **query}
            else:
                query["start"] = str(start + limit)
            links["next"] = "/rest/api/content/search?" + "&".join(f"{k}={quote_plus(v)}" for k, v in query.items())
        return web.json_response({"results": found[start : start + limit], "start": start, "limit": limit,
                                  "size": len(found[start : start + limit]), "_links": links})

    async def _content(self, request: web.Request) -> web.Response:
        content = self.pages.get(request.match_info["id"]) or self.attachments.get(request.match_info["id"])
        if content is None:
            return _error(404, f"No content found with id: {request.match_info['id']}")
        return web.json_response(self._json(content, set(request.query.get("expand", "").split(","))))

    async def _restrictions(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["id"])
        if page is None:
            return _error(404, f"No content found with id: {request.match_info['id']}")
        return web.json_response(self._restriction_json(page) | {
            "update": {"operation": "update", "restrictions": {"user": {"results": [], "size": 0},
                                                               "group": {"results": [], "size": 0}}}})

    async def _cloud_download(self, request: web.Request) -> web.Response:
        found = self.attachments.get(request.match_info["id"])
        if found is None or found.page != request.match_info["page"]:
            return _error(404, "No attachment found")
        return web.Response(body=found.data, content_type=found.media_type)

    async def _dc_download(self, request: web.Request) -> web.Response:
        for found in self.attachments.values():
            if found.page == request.match_info["page"] and found.title == request.match_info["name"]:
                return web.Response(body=found.data, content_type=found.media_type)
        return _error(404, "No attachment found")

    async def _space(self, request: web.Request) -> web.Response:
        key = request.match_info["key"]
        if key not in self.spaces:
            return _error(404, f"No space with key : {key}")
        return web.json_response({"key": key, "name": self.spaces[key], "type": "global"})

    async def _me(self, request: web.Request) -> web.Response:
        if self.cloud:
            return web.json_response({"type": "known", "accountId": "5b10ac8d82e05b22cc7d4ef5", "email": self.email,
                                      "displayName": "Docs bot"})
        return web.json_response({"type": "known", "username": "docs-bot", "userKey": "8a7f808a", "displayName":
                                  "Docs bot"})

    # -- content as JSON -------------------------------------------------------------------------

    def _contents(self) -> list[Page | Attachment]:
        return sorted([*self.pages.values(), *self.attachments.values()], key=lambda c: int(re.sub(r"\D", "", c.id)))

    def _space_of(self, content: Page | Attachment) -> str:
        return content.space if isinstance(content, Page) else self.pages[content.page].space

    def _fields(self, content: Page | Attachment) -> dict[str, Any]:
        return {"type": "page" if isinstance(content, Page) else "attachment", "space": self._space_of(content),
                "id": content.id, "label": content.labels if isinstance(content, Page) else (),
                "lastmodified": dt.datetime.fromtimestamp(content.when, dt.UTC)}

    def _stamp(self, seconds: int) -> str:
        # Cloud answers in UTC; this Data Center's server runs at UTC+3.
        zone = dt.UTC if self.cloud else dt.timezone(dt.timedelta(hours=3))
        stamp = dt.datetime.fromtimestamp(seconds, zone).isoformat(timespec="milliseconds")
        return stamp.replace("+00:00", "Z")

    def _webui(self, page: Page) -> str:
        if self.cloud:
            return f"/spaces/{page.space}/pages/{page.id}/{quote_plus(page.title)}"
        return f"/pages/viewpage.action?pageId={page.id}"

    def _ancestors(self, page: Page) -> list[Page]:
        chain: list[Page] = []
        parent = page.parent
        while parent is not None and parent in self.pages:
            chain.insert(0, self.pages[parent])
            parent = self.pages[parent].parent
        return chain

    def _restriction_json(self, page: Page) -> Content:
        users = [{"type": "known", "accountId": u} if self.cloud else {"type": "known", "username": u, "userKey": u}
                 for u in page.read_users]
        groups = [{"type": "group", "name": g, "id": f"id-{g}"} for g in page.read_groups]
        return {"read": {"operation": "read", "restrictions": {"user": {"results": users, "size": len(users)},
                                                               "group": {"results": groups, "size": len(groups)}}}}

    def _json(self, content: Page | Attachment, expand: set[str]) -> Content:
        space = self._space_of(content)
        out: Content = {"id": content.id, "status": "current", "title": content.title}
        if "space" in expand:
            out["space"] = {"key": space, "name": self.spaces.get(space, space), "type": "global"}
        if "version" in expand:
            out["version"] = {"number": content.version, "when": self._stamp(content.when), "minorEdit": False}
        if isinstance(content, Attachment):
            out |= {"type": "attachment", "extensions": {"mediaType": content.media_type,
                                                         "fileSize": len(content.data)},
                    "_links": {"webui": f"/pages/viewpageattachments.action?pageId={content.page}&preview="
                                        f"{quote_plus('/' + content.page + '/' + content.title)}",
                               "download": f"/download/attachments/{content.page}/{content.title}?version="
                                           f"{content.version}&api=v2"}}
            if "container" in expand:
                page = self.pages[content.page]
                out["container"] = {"id": page.id, "type": "page", "title": page.title}
            return out
        out |= {"type": "page", "_links": {"webui": self._webui(content), "tinyui": f"/x/{content.id}"}}
        if "ancestors" in expand:
            out["ancestors"] = [{"id": a.id, "type": "page", "title": a.title} for a in self._ancestors(content)]
        if "body.storage" in expand:
            out["body"] = {"storage": {"value": content.body, "representation": "storage"}}
        if {"restrictions.read.restrictions.user", "restrictions.read.restrictions.group"} & expand:
            out["restrictions"] = self._restriction_json(content)
        return out


def _error(code: int, message: str) -> web.Response:
    return web.json_response({"statusCode": code, "message": message}, status=code)


# -- a CQL subset: enough to answer what a client asks, and to refuse what it cannot answer --------

_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<op>!=|>=|<=|=|>|<|~|\(|\)|,)|(?P<word>[\w.-]+))')
_FIELDS = ("type", "space", "id", "label", "lastmodified")


def compile_cql(text: str, zone: dt.tzinfo) -> Callable[[dict[str, Any]], bool]:
    """A predicate over a content's fields; ``CqlError`` for what this subset (or CQL) does not know."""
    tokens = _tokens(text)
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take(expected: str | None = None) -> str:
        nonlocal position
        token = peek()
        if token is None or (expected is not None and token.lower() != expected):
            raise CqlError(f"expected {expected or 'more'} at token {position}")
        position += 1
        return token

    def disjunction() -> Callable[[dict[str, Any]], bool]:
        parts = [conjunction()]
        while (peek() or "").lower() == "or":
            take()
            parts.append(conjunction())
        return lambda f: any(p(f) for p in parts)

    def conjunction() -> Callable[[dict[str, Any]], bool]:
        parts = [negation()]
        while (peek() or "").lower() == "and":
            take()
            parts.append(negation())
        return lambda f: all(p(f) for p in parts)

    def negation() -> Callable[[dict[str, Any]], bool]:
        if (peek() or "").lower() == "not":
            take()
            inner = negation()
            return lambda f: not inner(f)
        if peek() == "(":
            take()
            inner = disjunction()
            take(")")
            return inner
        return clause()

    def clause() -> Callable[[dict[str, Any]], bool]:
        name = take().lower()
        if name not in _FIELDS:
            raise CqlError(f"unknown field {name}")
        op = take().lower()
        if op == "not":
            take("in")
            op = "not in"
        if op in ("in", "not in"):
            take("(")
            values = [_value(take())]
            while peek() == ",":
                take()
                values.append(_value(take()))
            take(")")
            inside = op == "in"
            return lambda f: any(_equal(f[name], v) for v in values) == inside
        value = _value(take())
        if name == "lastmodified":
            try:
                moment = dt.datetime.strptime(value, "%Y-%m-%d %H:%M").replace(tzinfo=zone)
            except ValueError:
                raise CqlError(f"not a date: {value}") from None
            compare = {">=": lambda a: a >= moment, ">": lambda a: a > moment, "<=": lambda a: a <= moment,
                       "<": lambda a: a < moment, "=": lambda a: a.replace(second=0) == moment}
            if op not in compare:
                raise CqlError(f"operator {op} on lastmodified")
            return lambda f: compare[op](f["lastmodified"])
        if op not in ("=", "!="):
            raise CqlError(f"operator {op} on {name}")
        return lambda f: _equal(f[name], value) == (op == "=")

    predicate = disjunction()
    if peek() is not None:
        raise CqlError(f"unexpected {peek()}")
    return predicate


def _tokens(text: str) -> list[str]:
    tokens, position = [], 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        if match is None:
            raise CqlError(f"cannot read {text[position:position + 10]!r}")
        tokens.append(match.group(match.lastgroup or "word"))
        position = match.end()
    return tokens


def _value(token: str) -> str:
    return token[1:-1].replace('\\"', '"') if token.startswith('"') else token


def _equal(field: object, value: str) -> bool:
    return value in field if isinstance(field, tuple) else str(field) == value
