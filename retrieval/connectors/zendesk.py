"""The ``zendesk`` connector: a Zendesk Help Center's articles, by locale, through its REST API over ``httpx`` (no
maintained client library covers the Help Center).

Settings (``[sources.NAME]``)::

    type = "zendesk"
    url = "https://acme.zendesk.com"      # the Help Center's Zendesk subdomain
    email = "docs-bot@acme.com"           # with an API token (Basic "email/token:TOKEN"); omit it for an OAuth token
    token_env = "ZENDESK_TOKEN"
    locales = ["en-us", "ja", "ru"]       # default: ["en-us"]
    max_wait_s = 120                      # how long 429s may make a sync wait in all (Retry-After is honoured)

    [sources.NAME.visibility]              # user segments -> channels (public articles are "everyone")
    everyone = "public"
    "segment:360001" = ["C0AGENTS"]

What it asks (all GET, JSON):

- ``/api/v2/help_center/incremental/articles?start_time=T``: articles changed since ``T`` (the cursor: the last
  page's ``end_time``; 0 the first time), page after page through ``next_page``;
- ``/api/v2/help_center/{locale}/articles?per_page=100``: every article id of a locale, page after page, to find
  the articles that were archived or deleted (their documents are removed);
- ``/api/v2/help_center/{locale}/sections`` and ``/categories``: names, so a document's section is
  "Category > Section".

Each (article, locale) is one document, id ``NAME:ID/LOCALE``, its HTML body parsed as an HTML file would be, its
link the article's ``html_url``, its version and updated time the article's ``updated_at``. A draft is never
indexed (an article turned into a draft leaves). Its audience is ``everyone`` without a user segment, else
``segment:ID``. 401/403, a 5xx, a timeout or 429s past ``max_wait_s`` end the pull with ``SourceFailed``.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from retrieval.connectors import Event, Gone, Item, Listed, Skipped, SourceFailed, document_id, secret
from retrieval.connectors.patience import Patience, max_wait_s
from retrieval.documents import Document
from retrieval.loaders import checked
from retrieval.loaders.html import parse_html
from retrieval.sources import EVERYONE, SourceSpec

_TIMEOUT = httpx.Timeout(30.0)
_MAX_DOCUMENT_CHARS = 5_000_000


@dataclass(frozen=True)
class ZendeskConnector:
    name: str
    base_url: str
    auth: str = field(repr=False)  # the Authorization header's value: never printed
    locales: tuple[str, ...] = ("en-us",)
    max_wait_s: float = 120.0
    transport: httpx.AsyncBaseTransport | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_spec(cls, spec: SourceSpec, environ: Mapping[str, str]) -> ZendeskConnector:
        spec.only("url", "email", "locales", "max_wait_s")
        url = spec.text("url").rstrip("/")
        if urlsplit(url).scheme not in ("http", "https"):
            raise spec.problem("url must be the Help Center's address, https://SUBDOMAIN.zendesk.com")
        token = secret(spec, environ, "API token")
        email = spec.optional_text("email")
        auth = (f"Basic {base64.b64encode(f'{email}/token:{token}'.encode()).decode()}" if email
                else f"Bearer {token}")
        return cls(spec.name, url, auth, spec.texts("locales", ("en-us",)), max_wait_s(spec))

    async def check(self) -> str:
        async with self._client() as client:
            waited = Patience(self.max_wait_s, "Zendesk")
            for locale in self.locales:
                await self._get(client, f"/api/v2/help_center/{locale}/categories", waited)
            me = await self._get(client, "/api/v2/users/me", waited)
        user = me.get("user") if isinstance(me.get("user"), dict) else {}
        return f"{self.base_url}: signed in as {user.get('email') or user.get('name') or 'anonymous'}, " \
               f"locales {', '.join(self.locales)}"

    async def pull(self, cursor: str | None) -> AsyncIterator[Event]:
        waited = Patience(self.max_wait_s, "Zendesk")
        async with self._client() as client:
            sections = {locale: await self._sections(client, locale, waited) for locale in self.locales}
            start = int(cursor) if cursor and cursor.isdigit() else 0
            path: str | None = f"/api/v2/help_center/incremental/articles?start_time={start}"
            end_time = start
            while path is not None:
                page = await self._get(client, path, waited)
                for article in page.get("articles") or []:
                    event = self._event(article, sections)
                    if event is not None:
                        yield event
                end_time = int(page.get("end_time") or end_time)
                path = page.get("next_page") if page.get("articles") else None
            present = set()
            for locale in self.locales:
                async for article in self._pages(client, f"/api/v2/help_center/{locale}/articles?per_page=100",
                                                 "articles", waited):
                    if not article.get("draft"):
                        present.add(self._id(article))
        yield Listed(str(end_time), frozenset(present))

    def _event(self, article: dict[str, Any], sections: Mapping[str, Mapping[int, str]]) -> Event | None:
        locale = str(article.get("locale") or "")
        if locale not in self.locales:
            return None
        doc_id = self._id(article)
        if article.get("draft"):  # never indexed; one that was published before leaves now
            return Gone(doc_id)
        where = str(article.get("html_url") or doc_id)
        body = article.get("body")
        if not isinstance(body, str) or not body.strip():
            return Skipped(where, "the article has no body (half exported?): it is kept as indexed", doc_id)
        parsed = checked(parse_html(body, source=where, document_id=doc_id, stem=str(article.get("title") or doc_id)),
                         _MAX_DOCUMENT_CHARS)
        if not isinstance(parsed, Document):
            return Skipped(where, parsed.message, doc_id)
        updated = str(article.get("updated_at") or "") or None
        document = replace(parsed, title=str(article.get("title") or parsed.title), url=article.get("html_url"),
                           section=sections.get(locale, {}).get(article.get("section_id") or -1),
                           version=updated, updated_at=updated, language=_language(locale), source_path=None)
        segment = article.get("user_segment_id")
        return Item(document, frozenset({EVERYONE if segment is None else f"segment:{segment}"}))

    def _id(self, article: Mapping[str, Any]) -> str:
        return document_id(self.name, f"{article.get('id')}/{article.get('locale')}")

    async def _sections(self, client: httpx.AsyncClient, locale: str, waited: Patience) -> dict[int, str]:
        categories = {c["id"]: str(c.get("name") or "") async for c in
                      self._pages(client, f"/api/v2/help_center/{locale}/categories?per_page=100", "categories",
                                  waited)}
        return {s["id"]: " > ".join(n for n in (categories.get(s.get("category_id")), str(s.get("name") or "")) if n)
                async for s in self._pages(client, f"/api/v2/help_center/{locale}/sections?per_page=100", "sections",
                                           waited)}

    async def _pages(self, client: httpx.AsyncClient, path: str, key: str,
                     waited: Patience) -> AsyncIterator[dict[str, Any]]:
        next_path: str | None = path
        while next_path is not None:
            page = await self._get(client, next_path, waited)
            for item in page.get(key) or []:
                if isinstance(item, dict):
                    yield item
            next_path = page.get("next_page")

    async def _get(self, client: httpx.AsyncClient, path: str, waited: Patience) -> dict[str, Any]:
        """One GET (``path`` relative, or a ``next_page`` URL), 429s waited out as Retry-After asks."""
        while True:
            try:
                response = await client.get(path)
            except httpx.HTTPError as error:
                raise SourceFailed(f"Zendesk could not be reached ({type(error).__name__}): check url and the "
                                   "network") from None
            if response.status_code == 429:
                await waited.wait(response.headers.get("Retry-After"))
                continue
            if response.status_code in (401, 403):
                raise SourceFailed(f"Zendesk refused the credentials (HTTP {response.status_code}): check the API "
                                   "token, its email and that the user may read the Help Center")
            if response.status_code >= 400:
                raise SourceFailed(f"Zendesk answered HTTP {response.status_code} for {_path_only(path)}: try again "
                                   "later; its indexed documents are kept")
            try:
                data = response.json()
            except ValueError:
                raise SourceFailed(f"Zendesk answered something that is not JSON for {_path_only(path)}") from None
            if not isinstance(data, dict):
                raise SourceFailed(f"Zendesk answered an unexpected shape for {_path_only(path)}")
            return data

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url, headers={"Authorization": self.auth,
                                                                  "Accept": "application/json"},
                                 timeout=_TIMEOUT, transport=self.transport, follow_redirects=False)


def _language(locale: str) -> str | None:
    code = locale.split("-")[0].lower()
    return code if code in ("en", "ja", "ru") else None


def _path_only(path: str) -> str:
    return urlsplit(path).path or path
