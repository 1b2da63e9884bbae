"""The ``notion`` connector: the pages a Notion internal integration was shared, through the official client
library ``notion-client`` (its ``AsyncClient`` on httpx), API version 2025-09-03 (databases hold data sources).

Settings (``[sources.NAME]``)::

    type = "notion"
    token_env = "NOTION_TOKEN"            # the internal integration's secret ("ntn_…")
    root_pages = ["https://www.notion.so/acme/Support-1f2e…"]   # optional: only pages under these (links or ids)
    max_wait_s = 120                      # how long 429s may make a sync wait in all (Retry-After is honoured)
    api_url = "https://api.notion.com"    # optional (a proxy)

    [sources.NAME.visibility]              # the workspace's members, or one root's pages -> channels
    workspace = "public"
    "root:1f2e…" = ["C0SUPPORT"]

What it asks (through the library):

- ``POST /v1/search`` with ``filter: {property: object, value: page}``, newest edit first, page after page
  (``start_cursor`` / ``has_more``): every page shared with the integration, database entries included. Every
  sync lists them all, since a page that left (unshared, deleted, moved out of the roots) is known only by its
  absence; so the listing never stops early, and the newest-first order only makes the cursor its first page's
  time. With ``root_pages``, also ``value: data_source`` (which database holds which entries, and where the
  database sits) and ``GET /v1/blocks/{id}`` for a page inside a block (a toggle, a column), to tell whether a page
  is under a root;
- ``GET /v1/blocks/{id}/children``, page after page and down every block that has children: the text of the pages
  edited at or after the cursor (Notion keeps ``last_edited_time`` to the minute, so the cursor's minute is read
  again: unchanged text is skipped by its hash), and of every page the last sync did not list (one shared since,
  whose edit time may be older);
- ``GET /v1/users/me`` and ``GET /v1/pages/{id}`` (each root) for ``check``.

Each page is one document, id ``NAME:PAGEID`` (32 hex digits, as in its link), built as HTML and parsed by the
HTML loader: ``heading_1..3`` are headings (sections; each links to ``page-url#blockid``); paragraphs, list items,
to-dos (``[x]`` / ``[ ]``), quotes, callouts, toggles, equations and media captions are paragraphs; code keeps its
lines; a table is one paragraph, a line per row. A child page is a document of its own, never part of its
parent's text. A page with no text (only headings, images, embeds…) is reported as ``Skipped`` and not indexed;
one holding only child pages or databases (an index page) is not a document. An archived or trashed page, or one
that answers ``object_not_found`` (unshared meanwhile), is ``Gone``. Link: the page's ``url``; version and updated
time: its ``last_edited_time``; title: its title property.

Audience: Notion does not tell an integration who may see a page, so it is ``workspace`` (its members), plus
``root:ID`` for each configured root it is under, plus ``everyone`` for a page published to the web
(``public_url``). The visibility rule maps these (with no rule, ``everyone = "public"`` maps only published
pages: map ``workspace`` to say who else sees them).

401, 403, a 5xx, a timeout or 429s past ``max_wait_s`` end the pull with ``SourceFailed`` (the library's own
retries are off: ours spend one budget per sync, as ``Retry-After`` asks).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx
from notion_client import AsyncClient
from notion_client.errors import APIErrorCode, HTTPResponseError, RequestTimeoutError

from retrieval.connectors import Event, Gone, Item, Listed, Skipped, SourceFailed, document_id, secret
from retrieval.connectors.patience import Patience, max_wait
from retrieval.documents import BlockKind, Document
from retrieval.loaders import checked
from retrieval.loaders.html import parse_html
from retrieval.sources import EVERYONE, SourceSpec

API_VERSION = "2025-09-03"  # the shapes this module reads; pinned so that a library upgrade cannot move them
WORKSPACE = "workspace"
_DEFAULT_API = "https://api.notion.com"
_PAGE_SIZE = 100  # the most Notion gives per request
_TIMEOUT_MS = 30_000
_MAX_DOCUMENT_CHARS = 5_000_000
# The library logs every failed request as a warning; each failure here is already one line of the sync's report.
_LIBRARY_LOG = logging.getLogger(__name__ + ".client")
_ID = re.compile(r"[0-9a-f]{32}$")


@dataclass(frozen=True, slots=True)
class NotionPage:
    """A page as the search lists it. ``id`` is 32 hex digits (no dashes), as in its link."""

    id: str
    title: str
    url: str
    edited: str  # last_edited_time, as Notion writes it
    parent: tuple[str, str]  # ("page_id" | "data_source_id" | "database_id" | "block_id" | "workspace", id)
    gone: bool = False  # archived or in the trash
    public: bool = False  # published to the web


@dataclass(frozen=True, slots=True)
class NotionBlock:
    """One block of a page, its rich text as plain text; ``cells`` for a table row."""

    id: str
    type: str
    text: str = ""
    children: tuple[NotionBlock, ...] = ()
    checked: bool = False
    cells: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rendered:
    html: str
    heading_ids: tuple[str, ...]  # each heading's block id, in the order the headings appear
    paragraphs: int  # blocks with text that is not a heading
    child_pages: int  # child pages and databases: documents of their own


@dataclass(frozen=True, slots=True)
class _Cursor:
    """Where a sync starts: the newest edit it saw, and the pages it listed (one missing from them is new)."""

    edited: dt.datetime | None = None
    pages: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str | None) -> _Cursor:
        # A cursor that cannot be read starts over: a full read, never a missed page.
        try:
            data = json.loads(text) if text else {}
            edited = _time(data.get("edited")) if isinstance(data, dict) else None
            pages = data.get("pages") if isinstance(data, dict) else None
        except ValueError:
            return cls()
        if edited is None or not isinstance(pages, list):
            return cls()
        return cls(edited, frozenset(p for p in pages if isinstance(p, str)))

    def wants(self, page: NotionPage) -> bool:
        """Whether the page's blocks must be read again."""
        edited = _time(page.edited)
        return self.edited is None or edited is None or edited >= self.edited or page.id not in self.pages


@dataclass(frozen=True)
class NotionConnector:
    name: str
    token: str = field(repr=False)  # the integration's secret: never printed
    roots: tuple[str, ...] = ()  # root page ids (32 hex digits); empty: every shared page
    max_wait_s: float = 120.0
    api_url: str = _DEFAULT_API
    transport: httpx.AsyncBaseTransport | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_spec(cls, spec: SourceSpec, environ: Mapping[str, str]) -> NotionConnector:
        spec.only("root_pages", "max_wait_s", "api_url")
        api_url = spec.text("api_url", _DEFAULT_API).rstrip("/")
        if urlsplit(api_url).scheme not in ("http", "https"):
            raise spec.problem(f"api_url must be an http(s) address, like {_DEFAULT_API}")
        roots = []
        for root in spec.texts("root_pages"):
            key = page_key(root)
            if key is None:
                raise spec.problem(f"root_pages: '{root}' is not a Notion page's link or id (32 hex digits at the "
                                   "end of its link): copy the page's link")
            roots.append(key)
        token = secret(spec, environ, "internal integration secret")
        return cls(spec.name, token, tuple(roots), max_wait(spec), api_url)

    async def check(self) -> str:
        waited = Patience(self.max_wait_s, "Notion")
        async with self._client() as notion:
            me = await self._ask(lambda: notion.users.me(), "GET /v1/users/me", waited)
            titles = []
            for root in self.roots:
                page = await self._ask(lambda r=root: notion.pages.retrieve(r), f"GET /v1/pages/{root}", waited,
                                       missing_ok=True)
                found = page_of(page) if page is not None else None
                if found is None:
                    raise SourceFailed(f"root page {root} is not shared with the integration: share it (the page's "
                                       "menu → Connections) or fix root_pages")
                titles.append(found.title)
        bot = me.get("bot") if isinstance(me.get("bot"), dict) else {}
        workspace = bot.get("workspace_name") or "(unnamed)"
        line = f"Notion workspace '{workspace}': signed in as {me.get('name') or 'the integration'}"
        return line + (f", root pages {', '.join(titles)}" if titles else ", every page shared with it")

    async def pull(self, cursor: str | None) -> AsyncIterator[Event]:
        since = _Cursor.parse(cursor)
        waited = Patience(self.max_wait_s, "Notion")
        async with self._client() as notion:
            found: dict[str, NotionPage] = {}
            async for raw in self._search(notion, "page", waited):
                page = page_of(raw)
                if page is not None:  # a page edited while listed may come twice: once is one document
                    found.setdefault(page.id, page)
            pages = list(found.values())
            links: dict[str, tuple[str, str]] = {page.id: page.parent for page in pages}
            if self.roots:
                async for raw in self._search(notion, "data_source", waited):
                    links.update(_data_source_links(raw))
            present: set[str] = set()
            listed: set[str] = set()
            newest = since.edited
            for page in pages:
                doc_id = document_id(self.name, page.id)
                under = await self._roots_of(notion, page.id, links, waited) if self.roots else ()
                if self.roots and not under:
                    continue  # outside the roots: not this source's (one that was indexed leaves by the listing)
                if page.gone:
                    yield Gone(doc_id)
                    continue
                edited = _time(page.edited)
                if edited is not None and (newest is None or edited > newest):
                    newest = edited
                if not since.wants(page):
                    listed.add(page.id)
                    present.add(doc_id)
                    continue
                blocks = await self._blocks(notion, page.id, waited)
                if blocks is None:  # unshared since the search listed it
                    yield Gone(doc_id)
                    continue
                listed.add(page.id)
                present.add(doc_id)
                yield page_event(page, blocks, doc_id, self._audience(page, under))
        state = {"edited": newest.isoformat() if newest else None, "pages": sorted(listed)}
        yield Listed(json.dumps(state) if newest else None, frozenset(present))

    def _audience(self, page: NotionPage, under: Sequence[str]) -> frozenset[str]:
        return frozenset({WORKSPACE, *(f"root:{root}" for root in under), *((EVERYONE,) if page.public else ())})

    async def _roots_of(self, notion: AsyncClient, page_id: str, links: dict[str, tuple[str, str]],
                        waited: Patience) -> tuple[str, ...]:
        """The configured roots among the page and its ancestors (a page inside a block asks for the block's
        parent once per sync; an ancestor not shared with the integration ends the walk)."""
        found, seen, current = [], set(), page_id
        while current and current not in seen:
            seen.add(current)
            if current in self.roots:
                found.append(current)
            kind, parent = links.get(current, ("", ""))
            if kind == "block_id" and parent not in links:
                block = await self._ask(lambda b=parent: notion.blocks.retrieve(b), f"GET /v1/blocks/{parent}",
                                        waited, missing_ok=True)
                links[parent] = _parent(block.get("parent")) if block is not None else ("", "")
            current = parent if kind in ("page_id", "data_source_id", "database_id", "block_id") else ""
        return tuple(found)

    async def _search(self, notion: AsyncClient, kind: str, waited: Patience) -> AsyncIterator[dict[str, Any]]:
        start: str | None = None
        while True:
            body: dict[str, Any] = {"filter": {"property": "object", "value": kind},
                                    "sort": {"direction": "descending", "timestamp": "last_edited_time"},
                                    "page_size": _PAGE_SIZE}
            if start:
                body["start_cursor"] = start
            answer = await self._ask(lambda b=body: notion.search(**b), "POST /v1/search", waited)
            for raw in answer.get("results") or []:
                if isinstance(raw, dict) and raw.get("object") == kind:
                    yield raw
            start = answer.get("next_cursor")
            if not answer.get("has_more") or not start:
                return

    async def _blocks(self, notion: AsyncClient, block_id: str, waited: Patience) -> tuple[NotionBlock, ...] | None:
        """The block's children, each with its own (a child page's and a child database's are their own
        documents), page after page; ``None`` when Notion no longer lets the integration see it."""
        found: list[NotionBlock] = []
        start: str | None = None
        while True:
            query: dict[str, Any] = {"page_size": _PAGE_SIZE} | ({"start_cursor": start} if start else {})
            answer = await self._ask(lambda q=query: notion.blocks.children.list(block_id, **q),
                                     f"GET /v1/blocks/{block_id}/children", waited, missing_ok=True)
            if answer is None:
                return None
            for raw in answer.get("results") or []:
                if not isinstance(raw, dict):
                    continue
                block = block_of(raw)
                if raw.get("has_children") and block.type not in ("child_page", "child_database"):
                    children = await self._blocks(notion, str(raw.get("id")), waited)
                    block = replace(block, children=children or ())  # None: deleted since its parent was read
                found.append(block)
            start = answer.get("next_cursor")
            if not answer.get("has_more") or not start:
                return tuple(found)

    async def _ask(self, call: Callable[[], Awaitable[Any]], what: str, waited: Patience, *,
                   missing_ok: bool = False) -> Any:
        """One request through the library, 429s waited out as Retry-After asks; ``None`` for object_not_found
        when ``missing_ok``; every other failure one line."""
        while True:
            try:
                answer = await call()
            except HTTPResponseError as error:
                if error.status == 429:
                    await waited.wait(error.headers.get("retry-after"))
                    continue
                if missing_ok and error.code == APIErrorCode.ObjectNotFound:
                    return None
                raise SourceFailed(_refusal(error, what)) from None
            except RequestTimeoutError:
                raise SourceFailed(f"Notion did not answer {what} within {_TIMEOUT_MS // 1000} s: try again later; "
                                   "its indexed documents are kept") from None
            except httpx.HTTPError as error:
                raise SourceFailed(f"Notion could not be reached ({type(error).__name__}): check api_url and the "
                                   "network") from None
            except ValueError:  # the library parses a 200's body as JSON
                raise SourceFailed(f"Notion answered something that is not JSON for {what}") from None
            if not isinstance(answer, dict):
                raise SourceFailed(f"Notion answered an unexpected shape for {what}")
            return answer

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[AsyncClient]:
        notion = AsyncClient(client=httpx.AsyncClient(transport=self.transport, follow_redirects=False),
                             auth=self.token, base_url=self.api_url, notion_version=API_VERSION,
                             timeout_ms=_TIMEOUT_MS, retry=False, logger=_LIBRARY_LOG, log_level=logging.ERROR)
        try:
            yield notion
        finally:
            await notion.aclose()


def _refusal(error: HTTPResponseError, what: str) -> str:
    code = error.code.value if isinstance(error.code, APIErrorCode) else str(error.code)
    if error.status == 401:
        return ("Notion refused the token (HTTP 401 unauthorized): check the internal integration secret in the "
                "variable token_env names")
    if error.status == 403:
        return (f"Notion refused {what} (HTTP 403 {code}): give the integration the capability Read content, and "
                "share the pages with it")
    return f"Notion answered HTTP {error.status} ({code}) for {what}: try again later; its indexed documents are kept"


# --- Notion's JSON, read at the edge into the values above --------------------------------------------------


def page_key(text: str) -> str | None:
    """A page's id as 32 hex digits, from its id (dashes or not) or its link; ``None`` when there is none."""
    bare = re.split(r"[?#]", text.strip())[0].replace("-", "").lower()
    match = _ID.search(bare)
    return match.group(0) if match else None


def page_of(raw: Mapping[str, Any]) -> NotionPage | None:
    key = page_key(str(raw.get("id") or ""))
    if key is None:
        return None
    properties = raw.get("properties") if isinstance(raw.get("properties"), dict) else {}
    title = next((_plain(p.get("title")) for p in properties.values()
                  if isinstance(p, dict) and p.get("type") == "title"), "")
    return NotionPage(key, title.strip() or "Untitled", str(raw.get("url") or f"https://www.notion.so/{key}"),
                      str(raw.get("last_edited_time") or ""), _parent(raw.get("parent")),
                      bool(raw.get("archived") or raw.get("in_trash")), bool(raw.get("public_url")))


def block_of(raw: Mapping[str, Any]) -> NotionBlock:
    kind = str(raw.get("type") or "")
    body = raw.get(kind) if isinstance(raw.get(kind), dict) else {}
    if kind == "table_row":
        cells = body.get("cells") if isinstance(body.get("cells"), list) else []
        return NotionBlock(str(raw.get("id") or ""), kind, cells=tuple(_plain(cell) for cell in cells))
    if kind == "equation":
        text = str(body.get("expression") or "")
    elif kind in ("child_page", "child_database"):
        text = str(body.get("title") or "")
    elif "rich_text" in body:
        text = _plain(body.get("rich_text"))
    else:  # media, bookmarks, embeds: what a reader sees is the caption
        text = _plain(body.get("caption"))
    return NotionBlock(str(raw.get("id") or ""), kind, text, checked=bool(body.get("checked")))


def _plain(rich_text: object) -> str:
    if not isinstance(rich_text, list):
        return ""
    return "".join(str(part.get("plain_text") or "") for part in rich_text if isinstance(part, dict))


def _parent(raw: object) -> tuple[str, str]:
    if not isinstance(raw, dict):
        return ("", "")
    kind = str(raw.get("type") or "")
    return (kind, page_key(str(raw.get(kind) or "")) or "") if kind != "workspace" else ("workspace", "")


def _data_source_links(raw: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """A data source's way up: to its database, and from the database to where the database sits."""
    source, database = page_key(str(raw.get("id") or "")), _parent(raw.get("parent"))
    links: dict[str, tuple[str, str]] = {}
    if source is not None:
        links[source] = database
    if database[0] == "database_id" and database[1]:
        links[database[1]] = _parent(raw.get("database_parent"))
    return links


def _time(text: object) -> dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        stamp = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)


# --- blocks to text (pure) ------------------------------------------------------------------------------------

_HEADING_LEVELS = {"heading_1": 1, "heading_2": 2, "heading_3": 3}
_PARAGRAPHS = frozenset({"paragraph", "bulleted_list_item", "numbered_list_item", "toggle", "callout", "equation",
                         "image", "video", "audio", "file", "pdf", "bookmark", "embed", "link_preview"})
_CHILD_DOCUMENTS = frozenset({"child_page", "child_database"})


def render(blocks: Sequence[NotionBlock]) -> Rendered:
    """The blocks as HTML for the HTML loader, in reading order: a block's children follow it."""
    parts: list[str] = []
    heading_ids: list[str] = []
    counts = {"paragraphs": 0, "child_pages": 0}

    def text(value: str) -> str:
        return html.escape(value).replace("\n", "<br>")

    def add(block: NotionBlock) -> None:
        if block.type in _CHILD_DOCUMENTS:
            counts["child_pages"] += 1
            return
        level = _HEADING_LEVELS.get(block.type)
        if level is not None and block.text.strip():
            parts.append(f"<h{level}>{text(block.text)}</h{level}>")
            heading_ids.append(block.id.replace("-", ""))
        elif block.type == "table":
            rows = [row.cells for row in block.children if row.type == "table_row"]
            if any(cell.strip() for cells in rows for cell in cells):
                cells_html = ("".join(f"<td>{text(c)}</td>" for c in cells) for cells in rows)
                parts.append("<table>" + "".join(f"<tr>{row}</tr>" for row in cells_html) + "</table>")
                counts["paragraphs"] += 1
            return  # its children were its rows
        elif block.text.strip() and block.type in (*_PARAGRAPHS, "to_do", "quote", "code"):
            if block.type == "code":
                parts.append(f"<pre>{html.escape(block.text)}</pre>")
            elif block.type == "quote":
                parts.append(f"<blockquote>{text(block.text)}</blockquote>")
            elif block.type == "to_do":
                parts.append(f"<p>{'[x]' if block.checked else '[ ]'} {text(block.text)}</p>")
            else:
                parts.append(f"<p>{text(block.text)}</p>")
            counts["paragraphs"] += 1
        for child in block.children:  # columns, synced blocks, toggles, nested list items
            add(child)

    for block in blocks:
        add(block)
    return Rendered("\n".join(parts), tuple(heading_ids), counts["paragraphs"], counts["child_pages"])


def page_event(page: NotionPage, blocks: Sequence[NotionBlock], doc_id: str, audience: frozenset[str]) -> Event:
    """The page as a document (``Item``), or why it is none: ``Skipped`` for a page with no text, ``Gone`` for an
    index page (only child pages or databases, which are documents of their own)."""
    rendered = render(blocks)
    if not rendered.paragraphs:
        if rendered.child_pages:
            return Gone(doc_id)
        return Skipped(page.url, f"the Notion page '{page.title}' has no text (only headings, media, embeds or "
                                 "empty blocks): it is not indexed; add text to it, or leave it out of the "
                                 "integration's pages", doc_id)
    parsed = parse_html(rendered.html, source=page.url, document_id=doc_id, stem=page.title)
    headings = [b for b in parsed.blocks if b.kind is BlockKind.HEADING]
    if len(headings) == len(rendered.heading_ids):  # the loader kept every heading: each gets its block's anchor
        anchors = iter(rendered.heading_ids)
        parsed = replace(parsed, blocks=tuple(replace(b, anchor=next(anchors)) if b.kind is BlockKind.HEADING else b
                                              for b in parsed.blocks))
    document = checked(replace(parsed, title=page.title, url=page.url, version=page.edited or None,
                               updated_at=page.edited or None, source_path=None), _MAX_DOCUMENT_CHARS)
    if not isinstance(document, Document):
        return Skipped(page.url, document.message, doc_id)
    return Item(document, audience)
