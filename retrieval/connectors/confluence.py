"""The ``confluence`` connector: the pages (and PDF attachments) of Confluence Cloud or Data Center spaces, through
``atlassian-python-api``'s REST v1 client.

Settings (``[sources.NAME]``)::

    type = "confluence"
    url = "https://acme.atlassian.net/wiki"   # Cloud: the site and /wiki; Data Center: its base URL
    email = "docs-bot@acme.com"              # Cloud: with an API token (Basic); omit it for a Data Center PAT (Bearer)
    token_env = "CONFLUENCE_TOKEN"
    spaces = ["ENG", "SUP"]                  # space keys; and/or
    cql = 'label = "kb"'                     # a CQL filter for the pages (both: pages matching both)
    attachments = true                       # index the pages' PDF attachments (default true)
    max_wait_s = 120                         # how long 429s may make a sync wait in all (Retry-After is honoured)

    [sources.NAME.visibility]                 # audiences -> channels
    "space:ENG" = "public"
    "group:support" = ["C0SUPPORT"]

The client is ``atlassian.ConfluenceServer`` (``cloud=True`` for Cloud), the library's REST v1 client, for both
editions: Cloud still serves v1 at ``/wiki/rest/api``, and only v1 has CQL search and restrictions. (In 5.0.5,
``atlassian.Confluence(cloud=True)`` builds the v2-root client, which asks ``{url}/content/search`` and has no
restrictions call.) Its own 429 sleeps are turned off so that ``max_wait_s`` governs; every call runs in a thread.

What one sync asks (``/rest/api/content/search?cql=...``, page after page through ``_links.next``):

1. every page id of the scope, with space, version, ancestors and read restrictions (no bodies): what the source
   holds now (``Listed.present``: a deleted page, or one moved to a space not configured, leaves) and who may see
   each page; then, if attachments are on, every attachment of those spaces (version, container);
2. the pages changed since the cursor, with bodies: CQL ``lastmodified >= "yyyy-MM-dd HH:mm"``;
3. any other page or PDF whose version or audience differs from what the cursor recorded (a restriction added,
   a move between spaces, a change the minute-precision CQL missed), one by one.

The cursor is JSON kept by the engine: ``since`` (the newest page's ``version.when``, UTC, to the minute) and
``seen`` (per id, a short fingerprint of version, space and audience).

Each page is one document, id ``NAME:ID``, its storage-format XHTML parsed as HTML (``ac:`` macro parameters
dropped, code bodies kept), title the page's, link ``_links.base`` + ``_links.webui`` and each heading's anchor as
the edition makes it, version ``version.number``, updated time ``version.when``. A page without text is not a
document. A PDF attachment is one document too (``NAME:ID``), parsed by the PDF loader, with its page's audience.

Audience: ``space:KEY`` for a page without read restrictions. A page restricted (itself or through an ancestor,
as Confluence inherits view restrictions) is never ``space:KEY``: its audience is the ``group:NAME`` and
``user:ID`` keys that every restricting level allows (empty: nobody). 401/403, a 5xx, a timeout or 429s past
``max_wait_s`` end the pull with ``SourceFailed``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from html import escape
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
from atlassian import ConfluenceServer
from atlassian.errors import ApiError

from retrieval.connectors import Event, Item, Listed, Skipped, SourceFailed, document_id, secret
from retrieval.connectors.patience import Patience, max_wait
from retrieval.documents import Block, BlockKind, Document
from retrieval.loaders import checked
from retrieval.loaders.common import LoadError
from retrieval.loaders.html import parse_html
from retrieval.loaders.pdf import parse_pdf
from retrieval.sources import SourceSpec

_TIMEOUT_S = 30
_PAGE_SIZE = 50
_MAX_DOCUMENT_CHARS = 5_000_000
_MAX_ATTACHMENT_BYTES = 50_000_000
_SPACES = re.compile(r"\s+")
_SPACE_KEY = re.compile(r"^~?[A-Za-z0-9_.-]{1,255}$")
_RESTRICTIONS = "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
_LISTING_EXPAND = f"space,version,ancestors,{_RESTRICTIONS}"
_PAGE_EXPAND = "body.storage,version,space"
_SERVICE = "Confluence"


@dataclass(frozen=True, slots=True)
class _Listed:
    """One page or attachment as the listing found it (no body)."""

    id: str
    space: str
    version: int
    when: str | None
    ancestors: tuple[str, ...] = ()  # pages only: root first
    restricted: frozenset[str] | None = None  # pages only: its own read restriction's keys; None when it has none
    container: str | None = None  # attachments only: its page's id
    title: str = ""
    link: str | None = None  # attachments only: where to download it
    url: str | None = None  # attachments only: its page on the site


@dataclass(frozen=True)
class ConfluenceConnector:
    name: str
    base_url: str
    token: str = field(repr=False)  # an API token (Cloud, with email) or a personal access token: never printed
    email: str | None = None
    spaces: tuple[str, ...] = ()
    cql: str | None = None
    attachments: bool = True
    max_wait_s: float = 120.0

    @property
    def cloud(self) -> bool:
        return self.email is not None

    @classmethod
    def from_spec(cls, spec: SourceSpec, environ: Mapping[str, str]) -> ConfluenceConnector:
        spec.only("url", "email", "spaces", "cql", "attachments", "max_wait_s")
        url = spec.text("url").rstrip("/")
        if urlsplit(url).scheme not in ("http", "https"):
            raise spec.problem("url must be the site's address: https://SITE.atlassian.net/wiki (Cloud) or the "
                               "Data Center base URL")
        spaces = spec.texts("spaces")
        bad = [key for key in spaces if not _SPACE_KEY.match(key)]
        if bad:
            raise spec.problem(f"'{bad[0]}' is not a space key (letters and digits, as in the space's URL): fix "
                               "spaces")
        cql = spec.optional_text("cql")
        if not spaces and cql is None:
            raise spec.problem("set spaces (a list of space keys) or cql (a CQL filter for the pages)")
        attachments = spec.settings.get("attachments", True)
        if not isinstance(attachments, bool):
            raise spec.problem("attachments must be true or false")
        token = secret(spec, environ, "API token" if spec.optional_text("email") else "personal access token")
        return cls(spec.name, url, token, spec.optional_text("email"), spaces, cql, attachments, max_wait(spec))

    # -- the protocol ----------------------------------------------------------------------------

    async def check(self) -> str:
        waited = Patience(self.max_wait_s, _SERVICE)
        client = self._client()
        try:
            me = await self._ask(waited, "the current user", client.get_current_user)
            for key in self.spaces:
                if await self._ask(waited, f"space {key}", client.get_space, key, allow_missing=True) is None:
                    raise SourceFailed(f"Confluence has no space {key}, or the user may not see it: check spaces and "
                                       "the user's space permissions")
        finally:
            client.close()
        who = me.get("email") or me.get("displayName") or me.get("username") or "anonymous"
        what = [f"spaces {', '.join(self.spaces)}"] if self.spaces else []
        what += ["a CQL filter"] if self.cql else []
        return f"{self.base_url}: signed in as {who} ({'Cloud' if self.cloud else 'Data Center'}), {' and '.join(what)}"

    async def pull(self, cursor: str | None) -> AsyncIterator[Event]:
        since, seen = parse_cursor(cursor)
        waited = Patience(self.max_wait_s, _SERVICE)
        client = self._client()
        try:
            pages: dict[str, _Listed] = {}
            async for result, _base in self._search(client, f"type = page AND {self._scope()}", _LISTING_EXPAND,
                                                   waited):
                listed = _listed_page(result)
                if listed is not None:
                    pages[listed.id] = listed
            audiences = await self._audiences(client, pages, waited)
            attachments = await self._attachments(client, pages, waited) if self.attachments and pages else {}
            prints = {pid: fingerprint(p, audiences[pid]) for pid, p in pages.items()}
            prints |= {aid: fingerprint(a, audiences[a.container or ""]) for aid, a in attachments.items()}
            present: set[str] = set()

            def emit(result: Mapping[str, Any], base: str) -> Event | None:
                pid = str(result.get("id"))
                event = self._page_event(result, base, audiences[pid])
                if event is not None:
                    present.add(document_id(self.name, pid))
                return event

            changed = f"type = page AND {self._scope()}" + (f' AND lastmodified >= "{since}"' if since else "")
            fetched: set[str] = set()
            async for result, base in self._search(client, changed, _PAGE_EXPAND, waited):
                pid = str(result.get("id"))
                if pid in pages and pid not in fetched and prints[pid] != seen.get(pid):
                    fetched.add(pid)
                    if (event := emit(result, base)) is not None:
                        yield event
            for pid in pages:
                if pid in fetched:
                    continue
                if prints[pid] == seen.get(pid):  # unchanged: indexed as it is (or, without text, not a document)
                    present.add(document_id(self.name, pid))
                    continue
                result = await self._ask(waited, f"page {pid}", client.get_page_by_id, pid, expand=_PAGE_EXPAND,
                                         allow_missing=True)
                if result is None:  # deleted since the listing: the next sync's listing removes it
                    yield Skipped(f"{self.base_url} page {pid}", "the page was not found (deleted since it was "
                                  "listed?): it is kept as indexed until the next sync", document_id(self.name, pid))
                    continue
                if (event := emit(result, self.base_url)) is not None:
                    yield event
            for aid, attachment in attachments.items():
                present.add(document_id(self.name, aid))
                if prints[aid] != seen.get(aid):
                    yield await self._attachment_event(client, attachment, audiences[attachment.container or ""],
                                                       waited)
        finally:
            client.close()
        newest = max((p.when for p in pages.values() if p.when), key=_utc, default=None)
        yield Listed(make_cursor(_cql_minute(newest) if newest else since, prints), frozenset(present))

    # -- the steps -------------------------------------------------------------------------------

    def _scope(self) -> str:
        parts = [f"space in ({', '.join(json.dumps(k) for k in self.spaces)})"] if self.spaces else []
        parts += [f"({self.cql})"] if self.cql else []
        return " AND ".join(parts)

    async def _audiences(self, client: ConfluenceServer, pages: Mapping[str, _Listed],
                         waited: Patience) -> dict[str, frozenset[str]]:
        """Each page's audience, its ancestors' read restrictions included (asked for those the listing lacks)."""
        outside: dict[str, frozenset[str] | None] = {}
        for page in pages.values():
            for ancestor in page.ancestors:
                if ancestor not in pages and ancestor not in outside:
                    found = await self._ask(waited, f"the restrictions of page {ancestor}",
                                            client.get_all_restrictions_for_content, ancestor)
                    outside[ancestor] = read_restriction(found)

        def restriction(pid: str) -> frozenset[str] | None:
            return pages[pid].restricted if pid in pages else outside.get(pid)

        return {pid: audience(page.space, [restriction(a) for a in (*page.ancestors, pid)])
                for pid, page in pages.items()}

    async def _attachments(self, client: ConfluenceServer, pages: Mapping[str, _Listed],
                           waited: Patience) -> dict[str, _Listed]:
        keys = sorted({p.space for p in pages.values()})
        query = f"type = attachment AND space in ({', '.join(json.dumps(k) for k in keys)})"
        found: dict[str, _Listed] = {}
        async for result, base in self._search(client, query, "version,container,space", waited):
            listed = _listed_attachment(result, base, self.cloud)
            if listed is not None and listed.container in pages:
                found[listed.id] = listed
        return found

    def _page_event(self, page: Mapping[str, Any], base: str, audience_keys: frozenset[str]) -> Event | None:
        pid = str(page.get("id"))
        doc_id = document_id(self.name, pid)
        title = str(page.get("title") or pid)
        webui = _get(page, "_links", "webui")
        url = f"{base.rstrip('/')}{webui}" if isinstance(webui, str) and webui else None
        where = url or f"{self.base_url} page {pid}"
        body = _get(page, "body", "storage", "value")
        if not isinstance(body, str):
            return Skipped(where, "Confluence sent the page without its body (storage format): it is kept as "
                           "indexed", doc_id)
        parsed = parse_html(storage_to_html(body), source=where, document_id=doc_id, stem=title)
        if not any(block.kind is BlockKind.PARAGRAPH for block in parsed.blocks):
            return None  # a page of only child pages, macros or headings: nothing to quote
        document = checked(parsed, _MAX_DOCUMENT_CHARS)
        if not isinstance(document, Document):
            return Skipped(where, document.message, doc_id)
        version = _get(page, "version", "number")
        when = _get(page, "version", "when")
        blocks = with_anchors(document.blocks, title, cloud=self.cloud) if url else document.blocks
        return Item(replace(document, title=title, blocks=blocks, url=url,
                            version=str(version) if version is not None else None,
                            updated_at=str(when) if when else None, source_path=None), audience_keys)

    async def _attachment_event(self, client: ConfluenceServer, attachment: _Listed, audience_keys: frozenset[str],
                                waited: Patience) -> Event:
        doc_id = document_id(self.name, attachment.id)
        where = f"{self.base_url} attachment {attachment.title}"
        if attachment.link is None:
            return Skipped(where, "Confluence listed the attachment without a download link: it is kept as indexed",
                           doc_id)
        data = await self._ask(waited, f"attachment {attachment.id}", client.get, attachment.link,
                               not_json_response=True, allow_missing=True, expect_json=False)
        if not isinstance(data, bytes):
            return Skipped(where, "the attachment could not be downloaded (deleted since it was listed?): it is "
                           "kept as indexed", doc_id)
        if len(data) > _MAX_ATTACHMENT_BYTES:
            return Skipped(where, f"the attachment is {len(data):,} bytes, over the limit of "
                           f"{_MAX_ATTACHMENT_BYTES:,}: split it", doc_id)
        stem = attachment.title.rsplit(".", 1)[0] or attachment.id
        parsed = parse_pdf(data, source=where, document_id=doc_id, stem=stem)
        document = checked(parsed, _MAX_DOCUMENT_CHARS) if isinstance(parsed, Document) else parsed
        if isinstance(document, LoadError):
            return Skipped(where, document.message, doc_id)
        return Item(replace(document, title=attachment.title or document.title,
                            url=attachment.url, version=str(attachment.version),
                            updated_at=attachment.when, source_path=None), audience_keys)

    # -- HTTP through the library ----------------------------------------------------------------

    async def _search(self, client: ConfluenceServer, cql: str, expand: str,
                      waited: Patience) -> AsyncIterator[tuple[dict[str, Any], str]]:
        """Every result of a CQL content search, with the ``_links.base`` its links are relative to. Pages are
        followed through ``_links.next`` (``start`` on Data Center, ``cursor`` on Cloud), asked again through the
        client so that its base URL and authentication stay."""
        params: dict[str, str] = {"limit": str(_PAGE_SIZE), "expand": expand}
        while True:
            page = await self._ask(waited, "the CQL search", client.search_content, cql, **params)
            results = [r for r in page.get("results") or [] if isinstance(r, dict)]
            base = str(_get(page, "_links", "base") or self.base_url)
            for result in results:
                yield result, base
            following = _get(page, "_links", "next")
            if not results or not isinstance(following, str):
                return
            params = {k: v for k, v in parse_qsl(urlsplit(following).query) if k != "cql"}

    async def _ask(self, waited: Patience, what: str, call: Callable[..., Any], *args: Any,
                   allow_missing: bool = False, expect_json: bool = True, **kwargs: Any) -> Any:
        """One library call in a thread, 429s waited out as Retry-After asks; ``None`` for a 404 when
        ``allow_missing``. Messages name the status and what was asked, never the server's text (it may echo)."""
        while True:
            try:
                answer = await asyncio.to_thread(call, *args, **kwargs)
            except (requests.HTTPError, ApiError) as error:
                response = _response_of(error)
                code = response.status_code if response is not None else 0
                if code == 429:
                    await waited.wait(response.headers.get("Retry-After") if response is not None else None)
                    continue
                if code == 404 and allow_missing:
                    return None
                if code in (401, 403):
                    raise SourceFailed(f"Confluence refused the credentials (HTTP {code}): check the token"
                                       f"{', its email' if self.cloud else ''} and that the user may read the "
                                       "spaces") from None
                if code == 400:
                    raise SourceFailed(f"Confluence refused {what} (HTTP 400): check cql and spaces") from None
                raise SourceFailed(f"Confluence answered HTTP {code or 'error'} for {what}: try again later; its "
                                   "indexed documents are kept") from None
            except requests.RequestException as error:
                raise SourceFailed(f"Confluence could not be reached ({type(error).__name__}): check url and the "
                                   "network") from None
            if expect_json and not isinstance(answer, dict):
                raise SourceFailed(f"Confluence answered something that is not a JSON object for {what}: check url "
                                   "(Cloud: https://SITE.atlassian.net/wiki)")
            return answer

    def _client(self) -> ConfluenceServer:
        # The library would sleep out a 429 itself (once, up to 30 minutes): off, so that max_wait_s governs.
        common: dict[str, Any] = {"cloud": self.cloud, "timeout": _TIMEOUT_S, "retry_with_header": False,
                                  "backoff_and_retry": False}
        if self.email is not None:
            return ConfluenceServer(self.base_url, username=self.email, password=self.token, **common)
        return ConfluenceServer(self.base_url, token=self.token, **common)


# -- pure helpers (table-tested) -----------------------------------------------------------------


def read_restriction(restrictions: object) -> frozenset[str] | None:
    """The keys a ``read`` restriction allows (``group:NAME``, ``user:ID``), from a content's ``restrictions``
    expansion or ``/restriction/byOperation``; ``None`` when nothing restricts reading."""
    read = _get(restrictions, "read", "restrictions")
    if not isinstance(read, dict):
        return None
    keys: set[str] = set()
    for group in _get(read, "group", "results") or []:
        if isinstance(group, dict) and (group.get("name") or group.get("id")):
            keys.add(f"group:{group.get('name') or group.get('id')}")
    for user in _get(read, "user", "results") or []:
        if isinstance(user, dict):
            who = user.get("accountId") or user.get("username") or user.get("userKey")
            if who:
                keys.add(f"user:{who}")
    return frozenset(keys) if keys else None


def audience(space: str, levels: Sequence[frozenset[str] | None]) -> frozenset[str]:
    """Who may read a page, from its space and the read restrictions of its ancestors and itself (root first).

    Unrestricted: ``space:KEY``. Restricted: a reader must pass every restricting level, so only the keys every
    level allows are kept (an empty set: nobody), and never ``space:KEY``."""
    restricting = [level for level in levels if level is not None]
    if not restricting:
        return frozenset({f"space:{space}"})
    return frozenset.intersection(*restricting)


def storage_to_html(storage: str) -> str:
    """Confluence storage format as HTML the HTML loader reads as a reader sees the page: macro parameters (names
    and settings, not content) dropped, a code macro's body as ``<pre>``, other CDATA as text."""
    text = re.sub(r"<ac:parameter\b[^>]*?(?:/>|>.*?</ac:parameter>)", "", storage, flags=re.DOTALL)
    text = re.sub(r"<ac:plain-text-body>\s*<!\[CDATA\[(.*?)\]\]>\s*</ac:plain-text-body>",
                  lambda m: f"<pre>{escape(m.group(1), quote=False)}</pre>", text, flags=re.DOTALL)
    return re.sub(r"<!\[CDATA\[(.*?)\]\]>", lambda m: escape(m.group(1), quote=False), text, flags=re.DOTALL)


def heading_anchor(title: str, heading: str, *, cloud: bool) -> str:
    """The fragment Confluence gives a heading: Cloud, the heading with its spaces as hyphens (``Annual-plans``);
    Data Center, the page title and the heading without spaces, joined by a hyphen (``Refundpolicy-Annualplans``)."""
    if cloud:
        return _SPACES.sub("-", heading.strip())
    return f"{_SPACES.sub('', title)}-{_SPACES.sub('', heading)}"


def with_anchors(blocks: Iterable[Block], title: str, *, cloud: bool) -> tuple[Block, ...]:
    return tuple(replace(b, anchor=heading_anchor(title, b.text, cloud=cloud)) if b.kind is BlockKind.HEADING else b
                 for b in blocks)


def fingerprint(listed: _Listed, audience_keys: frozenset[str]) -> str:
    """What the cursor remembers of a page or attachment: a change of version, space or audience means read it."""
    raw = json.dumps([listed.version, listed.space, sorted(audience_keys)], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def parse_cursor(cursor: str | None) -> tuple[str | None, dict[str, str]]:
    """(``since``, ``seen``) from the cursor; a missing or unreadable one means read everything."""
    if not cursor:
        return None, {}
    try:
        data = json.loads(cursor)
    except ValueError:
        return None, {}
    if not isinstance(data, dict) or not isinstance(data.get("seen"), dict):
        return None, {}
    since = data.get("since")
    valid = isinstance(since, str) and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", since)
    return (since if valid else None), {str(k): str(v) for k, v in data["seen"].items()}


def make_cursor(since: str | None, seen: Mapping[str, str]) -> str:
    return json.dumps({"since": since, "seen": dict(sorted(seen.items()))}, separators=(",", ":"))


def _cql_minute(when: str) -> str:
    return _utc(when).strftime("%Y-%m-%d %H:%M")


def _utc(when: str) -> dt.datetime:
    try:
        stamp = dt.datetime.fromisoformat(when)
    except ValueError:
        return dt.datetime.min.replace(tzinfo=dt.UTC)
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def _listed_page(result: Mapping[str, Any]) -> _Listed | None:
    space, number = _get(result, "space", "key"), _get(result, "version", "number")
    if result.get("id") is None or not isinstance(space, str) or not isinstance(number, int):
        return None
    ancestors = tuple(str(a.get("id")) for a in result.get("ancestors") or [] if isinstance(a, dict) and a.get("id"))
    return _Listed(str(result["id"]), space, number, _text_or_none(_get(result, "version", "when")), ancestors,
                   read_restriction(result.get("restrictions")), title=str(result.get("title") or ""))


def _listed_attachment(result: Mapping[str, Any], base: str, cloud: bool) -> _Listed | None:
    title = str(result.get("title") or "")
    media = _get(result, "extensions", "mediaType") or _get(result, "metadata", "mediaType")
    container, number = _get(result, "container", "id"), _get(result, "version", "number")
    if result.get("id") is None or container is None or not isinstance(number, int):
        return None
    if media != "application/pdf" and not title.lower().endswith(".pdf"):
        return None
    if cloud:  # the library's own rule: Cloud's _links.download is a deprecated route
        link: str | None = f"rest/api/content/{container}/child/attachment/{result['id']}/download"
    else:
        download = _get(result, "_links", "download")
        link = download if isinstance(download, str) else None
    webui = _get(result, "_links", "webui")
    return _Listed(str(result["id"]), str(_get(result, "space", "key") or ""), number,
                   _text_or_none(_get(result, "version", "when")), container=str(container), title=title, link=link,
                   url=f"{base.rstrip('/')}{webui}" if isinstance(webui, str) and webui else None)


def _response_of(error: Exception) -> requests.Response | None:
    if isinstance(error, requests.HTTPError):
        return error.response
    reason = getattr(error, "reason", None)  # the library's ApiError wraps the HTTPError it met
    return reason.response if isinstance(reason, requests.HTTPError) else None


def _get(value: object, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _text_or_none(value: object) -> str | None:
    return str(value) if value else None
