"""The ``gdrive`` connector: Google Docs, PDFs and text files in Drive folders or shared drives, through Google's
own client (``google-api-python-client`` over ``httplib2``, authorised by ``google-auth``).

Settings (``[sources.NAME]``)::

    type = "gdrive"
    folders = ["1AbCdEfGhIjK"]             # folder ids (the last part of a folder's address), subfolders included
    drives = ["0AAbCdEfGhIj"]              # shared drive ids; at least one of folders / drives
    token_env = "GDRIVE_KEY"              # a service account's JSON key (its text or its file's path), or an OAuth
                                          # access token
    subject = "docs-bot@acme.com"         # optional: the user a key with domain-wide delegation acts as
    max_wait_s = 120                      # how long 429s may make a sync wait in all (Retry-After is honoured)

    [sources.NAME.visibility]              # Drive sharing -> channels
    anyone = "public"
    "domain:acme.com" = "public"
    "group:support@acme.com" = ["C0SUPPORT"]

What it asks (drive v3, read-only scope; the client's discovery document is the one it ships, so nothing is
downloaded to build it):

- first sync (and whenever the cursor is not one of this source's): ``changes.getStartPageToken``, then every file
  under the folders (``files.list`` with ``q = "'ID' in parents and trashed = false"``, subfolders in turn) and in the
  shared drives (``corpora = "drive"``), page after page, each read and listed, so a file absent from the listing
  leaves the index;
- later syncs: ``changes.list`` from the saved token. A removed or trashed file, or one whose folders no longer lead
  to a configured folder or drive (moved out), is gone; a changed file is read again. A changed folder (moved,
  renamed, trashed) makes the sync list everything again, since what it holds may have come or gone with it.

A Google Doc is exported as HTML (``files.export``, ``text/html``) and parsed as an HTML file is, its headings
sections linking to ``#heading=…``; a PDF, text or Markdown file is downloaded (``alt=media``) and parsed by its
loader. Anything else (sheets, images) is not a document here. Each file is one document, id ``NAME:FILE_ID``, its
link ``webViewLink``, its version ``version`` (else ``headRevisionId``), its updated time ``modifiedTime``.

Audience: each permission of the file (from the listing, or ``permissions.list`` where the listing has none, as for
shared drive items) is a key: ``anyone`` (anyone, with the link or not), ``domain:acme.com``, ``group:x@acme.com``,
``user:y@acme.com``. A file whose sharing the account may not see has no keys: visible to nobody.

Faults: 401/403 (and a token endpoint that refuses the key) end the pull with ``SourceFailed``; so does a 5xx or
the network. 429, and 403 ``rateLimitExceeded``, are waited out as Retry-After asks up to ``max_wait_s``: the client's
own ``num_retries`` is not used, since it backs off at random and ignores both Retry-After and the sync's patience.
One file that cannot be exported or downloaded is skipped (what is indexed of it stays).
"""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import google.auth.exceptions
import google_auth_httplib2
import httplib2
from google.auth.credentials import Credentials
from google.oauth2 import credentials as oauth2_credentials
from google.oauth2 import service_account

# google-api-core (under the client) warns at import that the grpcio installed beside it (Weaviate's) predates its
# post-quantum plans; the Drive client speaks HTTP, not gRPC, so a user's every sync need not print it.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Package google.api_core depends on grpcio", category=FutureWarning)
    from googleapiclient.discovery import Resource, build
    from googleapiclient.errors import HttpError
    from googleapiclient.http import HttpRequest

from retrieval.connectors import Event, Gone, Item, Listed, Skipped, SourceFailed, document_id, secret
from retrieval.connectors.patience import Patience, max_wait
from retrieval.documents import Document
from retrieval.loaders import checked, parse_bytes
from retrieval.loaders.common import LoadError, decode_text
from retrieval.loaders.html import parse_html
from retrieval.sources import SourceSpec

SCOPES = ("https://www.googleapis.com/auth/drive.readonly",)
FOLDER = "application/vnd.google-apps.folder"
GOOGLE_DOC = "application/vnd.google-apps.document"
# What a downloaded file is parsed as, by its type.
_EXTENSIONS = {"application/pdf": ".pdf", "text/plain": ".txt", "text/markdown": ".md", "text/x-markdown": ".md",
               "text/html": ".html"}
_FILE_FIELDS = ("id,name,mimeType,parents,driveId,trashed,webViewLink,version,headRevisionId,modifiedTime,size,"
                "permissions(type,role,emailAddress,domain,deleted)")
_PERMISSION_FIELDS = "nextPageToken,permissions(type,role,emailAddress,domain,deleted)"
_RATE_LIMITED = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"})
_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_TIMEOUT_S = 30
_MAX_DOWNLOAD_BYTES = 50_000_000
_MAX_DOCUMENT_CHARS = 5_000_000
_PAGE_SIZE = 100


def audience_key(permission: Mapping[str, Any]) -> str | None:
    """The audience key of one Drive permission, or ``None`` for one that lets nobody in (a deleted account)."""
    kind = permission.get("type")
    if permission.get("deleted"):
        return None
    if kind == "anyone":
        return "anyone"
    if kind == "domain" and isinstance(permission.get("domain"), str) and permission["domain"]:
        return f"domain:{permission['domain'].lower()}"
    if kind in ("group", "user") and isinstance(permission.get("emailAddress"), str) and permission["emailAddress"]:
        return f"{kind}:{permission['emailAddress'].lower()}"
    return None


def parse_kind(mime_type: str, name: str) -> str | None:
    """How a file is read: ``"doc"`` (exported as HTML), the loader extension of a download, or ``None``."""
    if mime_type == GOOGLE_DOC:
        return "doc"
    suffix = PurePosixPath(name).suffix.lower()
    if mime_type.startswith("text/") and suffix in (".md", ".markdown", ".txt"):
        return suffix  # Drive often types an uploaded .md as text/plain: the name says what it is
    return _EXTENSIONS.get(mime_type)


def docs_anchor(heading_id: str) -> str | None:
    """A Google Doc heading's fragment: the export gives headings ids ``h.xyz``, the editor opens ``#heading=h.xyz``."""
    return f"heading={heading_id}" if heading_id.startswith("h.") else None


def make_cursor(token: str, folders: Iterable[str], drives: Iterable[str]) -> str:
    """The saved cursor: the changes token, with the folders and drives it was taken for."""
    return json.dumps({"token": token, "folders": sorted(folders), "drives": sorted(drives)}, separators=(",", ":"))


def token_of(cursor: str | None, folders: Iterable[str], drives: Iterable[str]) -> str | None:
    """The changes token of a cursor taken for these folders and drives; ``None`` (list everything) for another."""
    try:
        saved = json.loads(cursor) if cursor else None
    except ValueError:
        return None
    if not isinstance(saved, dict) or not isinstance(saved.get("token"), str) or not saved["token"]:
        return None
    if saved.get("folders") != sorted(folders) or saved.get("drives") != sorted(drives):
        return None  # a folder or drive was added or dropped: its files were never listed
    return saved["token"]


@dataclass(frozen=True)
class DriveConnector:
    name: str
    folders: tuple[str, ...]
    drives: tuple[str, ...]
    credentials: Credentials = field(repr=False, compare=False)  # holds the key or the token: never printed
    principal: str = "an OAuth access token"  # who it signs in as, for messages
    max_wait_s: float = 120.0
    api_url: str | None = None  # None: Google's own endpoint; else a stand-in's or a proxy's

    @classmethod
    def from_spec(cls, spec: SourceSpec, environ: Mapping[str, str]) -> DriveConnector:
        spec.only("folders", "drives", "subject", "max_wait_s", "api_url")
        folders, drives = spec.texts("folders"), spec.texts("drives")
        if not folders and not drives:
            raise spec.problem("set folders (folder ids) or drives (shared drive ids), or both")
        bad = next((i for i in (*folders, *drives) if not _ID.match(i)), None)
        if bad is not None:
            raise spec.problem(f"'{bad}' is not a Drive id: use the last part of the folder's or drive's address")
        api_url = spec.optional_text("api_url")
        if api_url is not None and not re.match(r"^https?://[^/]+", api_url):
            raise spec.problem("api_url must be an http(s) address (leave it out for Google's own)")
        credentials, principal = _credentials(spec, secret(spec, environ, "service account key or access token"))
        return cls(spec.name, folders, drives, credentials, principal, max_wait(spec),
                   api_url.rstrip("/") + "/drive/v3/" if api_url else None)

    async def check(self) -> str:
        waited = Patience(self.max_wait_s, "Google Drive")
        async with self._client() as drive:
            try:
                about = await _execute(drive.about().get(fields="user"), waited, "about")
                where = [f"folder '{(await self._folder(drive, f, waited)).get('name')}'" for f in self.folders]
                for drive_id in self.drives:
                    found = await _execute(drive.drives().get(driveId=drive_id, fields="id,name"), waited, "a drive")
                    where.append(f"shared drive '{found.get('name')}'")
            except _Refused as refused:
                raise refused.failed() from None
        user = about.get("user") if isinstance(about.get("user"), dict) else {}
        return f"Google Drive: signed in as {user.get('emailAddress') or self.principal}, {', '.join(where)}"

    async def pull(self, cursor: str | None) -> AsyncIterator[Event]:
        waited = Patience(self.max_wait_s, "Google Drive")
        async with self._client() as drive:
            try:
                async for event in self._pull(drive, cursor, waited):
                    yield event
            except _Refused as refused:
                raise refused.failed() from None

    async def _pull(self, drive: Resource, cursor: str | None, waited: Patience) -> AsyncIterator[Event]:
        token = token_of(cursor, self.folders, self.drives)
        changed = await self._changes(drive, token, waited) if token is not None else None
        if changed is not None and not changed.relist:
            scope = _Scope(self, drive, waited)
            for file_id, file in changed.files.items():
                event = await self._changed(drive, file_id, file, scope, waited)
                if event is not None:
                    yield event
            yield Listed(make_cursor(changed.token, self.folders, self.drives))
            return
        # Taken before the listing, so what changes while it runs is read again next time.
        start = changed.token if changed is not None else await self._start_token(drive, waited)
        present: set[str] = set()
        async for file in self._listing(drive, waited):
            event = await self._read(drive, file, waited)
            if event is not None:
                present.add(document_id(self.name, file["id"]))
                yield event
        yield Listed(make_cursor(start, self.folders, self.drives), frozenset(present))

    # -- changes ---------------------------------------------------------------------------------

    async def _start_token(self, drive: Resource, waited: Patience) -> str:
        found = await _execute(drive.changes().getStartPageToken(supportsAllDrives=True), waited, "changes")
        token = found.get("startPageToken")
        if not isinstance(token, str) or not token:
            raise SourceFailed("Google Drive answered no startPageToken for changes: try again later")
        return token

    async def _changes(self, drive: Resource, token: str, waited: Patience) -> _Changes | None:
        """Every change since ``token``, the last one of each file; ``None`` when Drive no longer knows the token."""
        files: dict[str, dict[str, Any] | None] = {}
        relist = False
        page_token: str | None = token
        while True:
            request = drive.changes().list(
                pageToken=page_token, pageSize=_PAGE_SIZE, includeRemoved=True, supportsAllDrives=True,
                includeItemsFromAllDrives=True,
                fields=f"nextPageToken,newStartPageToken,changes(changeType,removed,fileId,driveId,"
                       f"file({_FILE_FIELDS}))")
            try:
                page = await _execute(request, waited, "changes")
            except _Refused as refused:
                if refused.status in (400, 404):  # an expired or foreign token: start over with a full listing
                    return None
                raise
            for change in page.get("changes") or []:
                if change.get("changeType") == "drive":
                    relist = relist or change.get("driveId") in self.drives
                    continue
                file_id = change.get("fileId")
                if not isinstance(file_id, str):
                    continue
                file = None if change.get("removed") else change.get("file")
                files.pop(file_id, None)  # the last change of a file is the one that counts
                files[file_id] = file if isinstance(file, dict) else None
                relist = relist or (isinstance(file, dict) and file.get("mimeType") == FOLDER)
            page_token = page.get("nextPageToken")
            if not page_token:
                new_token = page.get("newStartPageToken")
                if not isinstance(new_token, str) or not new_token:
                    raise SourceFailed("Google Drive ended its changes without a newStartPageToken: try again later")
                return _Changes(files, new_token, relist)

    async def _changed(self, drive: Resource, file_id: str, file: dict[str, Any] | None, scope: _Scope,
                       waited: Patience) -> Event | None:
        doc_id = document_id(self.name, file_id)
        if file is None or file.get("trashed"):
            return Gone(doc_id)
        if parse_kind(str(file.get("mimeType") or ""), str(file.get("name") or "")) is None:
            return None
        if not await scope.holds(file):
            return Gone(doc_id)  # moved out of the folders (or never in them: then there is nothing to remove)
        return await self._read(drive, file, waited)

    # -- the full listing ------------------------------------------------------------------------

    async def _listing(self, drive: Resource, waited: Patience) -> AsyncIterator[dict[str, Any]]:
        """Every file under the folders and in the drives, each once."""
        seen: set[str] = set()
        for drive_id in self.drives:
            try:
                async for file in self._files(drive, waited, corpora="drive", driveId=drive_id, q="trashed = false"):
                    if file.get("mimeType") != FOLDER and file["id"] not in seen:
                        seen.add(file["id"])
                        yield file
            except _Refused as refused:
                if refused.status == 404:
                    raise SourceFailed(f"Google Drive has no shared drive {drive_id} that {self.principal} is a "
                                       "member of: add it as a member, or fix drives") from None
                raise
        folders, visited = [(await self._folder(drive, f, waited))["id"] for f in self.folders], set()
        while folders:
            folder = folders.pop(0)
            if folder in visited:
                continue
            visited.add(folder)
            async for file in self._files(drive, waited, corpora="allDrives", q=f"'{folder}' in parents and "
                                          "trashed = false"):
                if file.get("mimeType") == FOLDER:
                    folders.append(file["id"])
                elif file["id"] not in seen:
                    seen.add(file["id"])
                    yield file

    async def _folder(self, drive: Resource, folder_id: str, waited: Patience) -> dict[str, Any]:
        request = drive.files().get(fileId=folder_id, fields="id,name,mimeType,trashed", supportsAllDrives=True)
        try:
            folder = await _execute(request, waited, "a folder")
        except _Refused as refused:
            if refused.status == 404:
                raise SourceFailed(f"Google Drive has no folder {folder_id} that {self.principal} can see: share "
                                   "it with the account, or fix folders") from None
            raise
        if folder.get("mimeType") != FOLDER or folder.get("trashed"):
            raise SourceFailed(f"Google Drive's {folder_id} is not a folder (or is in the trash): fix folders")
        return folder

    async def _files(self, drive: Resource, waited: Patience, **query: str) -> AsyncIterator[dict[str, Any]]:
        page_token: str | None = None
        while True:
            request = drive.files().list(**query, pageSize=_PAGE_SIZE, pageToken=page_token, supportsAllDrives=True,
                                         includeItemsFromAllDrives=True, fields=f"nextPageToken,files({_FILE_FIELDS})")
            page = await _execute(request, waited, "files")
            for file in page.get("files") or []:
                if isinstance(file, dict) and isinstance(file.get("id"), str):
                    yield file
            page_token = page.get("nextPageToken")
            if not page_token:
                return

    # -- one file --------------------------------------------------------------------------------

    async def _read(self, drive: Resource, file: dict[str, Any], waited: Patience) -> Item | Skipped | None:
        """The file as a document with its audience, ``Skipped`` when it cannot be read, ``None`` when it is not a
        document here."""
        name, file_id = str(file.get("name") or file["id"]), file["id"]
        kind = parse_kind(str(file.get("mimeType") or ""), name)
        if kind is None:
            return None
        doc_id = document_id(self.name, file_id)
        where = str(file.get("webViewLink") or doc_id)
        size = int(file["size"]) if str(file.get("size") or "").isdigit() else 0
        if size > _MAX_DOWNLOAD_BYTES:
            return Skipped(where, f"the file is {size:,} bytes, over the limit of {_MAX_DOWNLOAD_BYTES:,}: split it",
                           doc_id)
        try:
            if kind == "doc":
                data = await _execute(drive.files().export_media(fileId=file_id, mimeType="text/html"), waited,
                                      "an export")
            else:
                data = await _execute(drive.files().get_media(fileId=file_id, supportsAllDrives=True), waited,
                                      "a download")
        except _Refused as refused:
            if refused.status in (403, 404):  # not exportable, too large to export, deleted meanwhile
                return Skipped(where, f"Google Drive would not hand the file over (HTTP {refused.status}"
                                      f"{refused.why}): it is kept as indexed", doc_id)
            raise
        parsed = _parse(bytes(data), kind, name=name, source=where, doc_id=doc_id)
        if isinstance(parsed, LoadError):
            return Skipped(where, parsed.message, doc_id)
        version = str(file.get("version") or file.get("headRevisionId") or "") or None
        document = replace(parsed, document_id=doc_id, title=name, url=file.get("webViewLink"), version=version,
                           updated_at=file.get("modifiedTime"), source_path=None, visibility=None)
        return Item(document, await self._audience(drive, file, waited))

    async def _audience(self, drive: Resource, file: dict[str, Any], waited: Patience) -> frozenset[str]:
        permissions = file.get("permissions")
        if not isinstance(permissions, list):  # shared drive items, or sharing the listing does not show
            permissions, page_token = [], None
            while True:
                request = drive.permissions().list(fileId=file["id"], supportsAllDrives=True, pageSize=_PAGE_SIZE,
                                                   pageToken=page_token, fields=_PERMISSION_FIELDS)
                try:
                    page = await _execute(request, waited, "permissions")
                except _Refused as refused:
                    if refused.status in (403, 404):  # the account may not see who else may: nobody, to be safe
                        return frozenset()
                    raise
                permissions += page.get("permissions") or []
                page_token = page.get("nextPageToken")
                if not page_token:
                    break
        return frozenset(key for p in permissions if isinstance(p, dict) and (key := audience_key(p)) is not None)

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Resource]:
        """The drive v3 client, its connections closed after. Built off the event loop: the discovery document is the
        one the library ships (nothing is downloaded); requests go through an ``httplib2`` with a timeout, authorised
        (and refreshed) by google-auth."""

        def built() -> Resource:
            http = google_auth_httplib2.AuthorizedHttp(self.credentials, http=httplib2.Http(timeout=_TIMEOUT_S))
            options = {"api_endpoint": self.api_url} if self.api_url else None
            return build("drive", "v3", http=http, static_discovery=True, cache_discovery=False,
                         client_options=options)

        drive = await asyncio.to_thread(built)
        try:
            yield drive
        finally:
            drive.close()


@dataclass(frozen=True, slots=True)
class _Changes:
    files: dict[str, dict[str, Any] | None]  # file id -> its state now (None: removed, or access lost)
    token: str  # where the next sync starts
    relist: bool  # a folder or a configured drive changed: what is under it is known only by listing again


class _Scope:
    """Whether a changed file is still under a configured folder or drive, its ancestors looked up once a pull."""

    def __init__(self, connector: DriveConnector, drive: Resource, waited: Patience) -> None:
        self._roots, self._drives = set(connector.folders), set(connector.drives)
        self._drive, self._waited = drive, waited
        self._parents: dict[str, list[str]] = {}

    async def holds(self, file: Mapping[str, Any]) -> bool:
        if file.get("driveId") in self._drives:
            return True
        todo, seen = list(file.get("parents") or []), set()
        while todo:
            folder = todo.pop()
            if folder in self._roots:
                return True
            if folder not in seen:
                seen.add(folder)
                todo += await self._parents_of(folder)
        return False

    async def _parents_of(self, folder: str) -> list[str]:
        if folder not in self._parents:
            request = self._drive.files().get(fileId=folder, fields="id,parents", supportsAllDrives=True)
            try:
                found = await _execute(request, self._waited, "a folder")
            except _Refused as refused:
                if refused.status != 404:
                    raise
                found = {}  # a folder the account cannot see is outside the source
            self._parents[folder] = [p for p in found.get("parents") or [] if isinstance(p, str)]
        return self._parents[folder]


class _Refused(Exception):
    """Drive refused one request for a reason its caller may handle (400, 404, a file-level 403)."""

    def __init__(self, status: int, reasons: frozenset[str], what: str) -> None:
        super().__init__(status)
        self.status, self.reasons, self.what = status, reasons, what

    @property
    def why(self) -> str:
        return f", {', '.join(sorted(self.reasons))}" if self.reasons else ""

    def failed(self) -> SourceFailed:
        return SourceFailed(f"Google Drive answered HTTP {self.status}{self.why} for {self.what}: check folders and "
                            "drives; its indexed documents are kept")


# 403 reasons that concern one file, not the credentials: the caller decides.
_FILE_REFUSALS = frozenset({"fileNotExportable", "exportSizeLimitExceeded", "cannotExportFile", "fileNotDownloadable",
                            "cannotDownloadFile", "insufficientFilePermissions", "cannotDownloadAbusiveFile"})


async def _execute(request: HttpRequest, waited: Patience, what: str) -> Any:
    """Run one request off the event loop, 429s (and 403 rate limits) waited out; ``SourceFailed`` for refused
    credentials, a 5xx or the network; ``_Refused`` for the rest."""
    while True:
        try:
            return await asyncio.to_thread(request.execute, num_retries=0)
        except HttpError as error:
            status, reasons = int(error.resp.status), error_reasons(error.content)
            if status == 429 or (status == 403 and reasons & _RATE_LIMITED):
                await waited.wait(error.resp.get("retry-after"), status=status)
                continue
            if status == 401 or (status == 403 and not reasons & _FILE_REFUSALS):
                raise SourceFailed(_refused_line(f"HTTP {status}")) from None
            if status >= 500:
                raise SourceFailed(f"Google Drive answered HTTP {status} for {what}: try again later; its indexed "
                                   "documents are kept") from None
            raise _Refused(status, reasons, what) from None
        except google.auth.exceptions.RefreshError:
            raise SourceFailed(_refused_line("the token was refused")) from None
        except (httplib2.HttpLib2Error, google.auth.exceptions.TransportError, OSError) as error:
            raise SourceFailed(f"Google Drive could not be reached ({type(error).__name__}): check the network"
                               ) from None


def _refused_line(how: str) -> str:
    return (f"Google Drive refused the credentials ({how}): check the key or token in token_env, and that the "
            "folders and drives are shared with its account")


def error_reasons(content: bytes) -> frozenset[str]:
    """The ``reason`` values of a Google error body (``errors`` of the v3 shape, ``details`` of the newer one)."""
    try:
        body = json.loads(content.decode("utf-8"))
    except ValueError:  # not UTF-8, or not JSON
        return frozenset()
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return frozenset()
    found = [e.get("reason") for key in ("errors", "details") for e in error.get(key) or [] if isinstance(e, dict)]
    return frozenset(r for r in found if isinstance(r, str) and r)


def _parse(data: bytes, kind: str, *, name: str, source: str, doc_id: str) -> Document | LoadError:
    if kind == "doc":
        text = decode_text(data, source)
        if isinstance(text, LoadError):
            return text
        return checked(parse_html(text, source=source, document_id=doc_id, stem=name, anchor=docs_anchor),
                       _MAX_DOCUMENT_CHARS)
    file_name = name if PurePosixPath(name).suffix.lower() == kind else f"{name}{kind}"
    for parsed in parse_bytes(data, name=file_name, source=source, document_id=doc_id):
        return checked(parsed, _MAX_DOCUMENT_CHARS) if isinstance(parsed, Document) else parsed
    return LoadError(source, "the file holds no document: add text to it")


def _credentials(spec: SourceSpec, value: str) -> tuple[Credentials, str]:
    """google-auth credentials from the secret: a service account key (JSON text, or the path of its file), else an
    OAuth access token. Messages name the variable, never its contents."""
    where = f"the environment variable {spec.token_env}"
    info: object = None
    if value.startswith("{"):
        try:
            info = json.loads(value)
        except ValueError:
            raise spec.problem(f"{where} starts like JSON but is not: paste the whole service account key") from None
    elif value.lower().endswith(".json") or "/" in value or "\\" in value:
        try:
            info = json.loads(Path(value).expanduser().read_text(encoding="utf-8"))
        except OSError as error:
            raise spec.problem(f"{where} names a key file that cannot be read ({error.strerror or 'error'}): check "
                               "the path") from None
        except ValueError:  # not UTF-8, or not JSON
            raise spec.problem(f"{where} names a file that is not a JSON key: download the service account key "
                               "again") from None
    if info is None:
        return oauth2_credentials.Credentials(token=value), "an OAuth access token"
    if not isinstance(info, dict) or info.get("type") != "service_account":
        raise spec.problem(f"{where} holds JSON that is not a service account key (\"type\": \"service_account\")")
    try:
        key = service_account.Credentials.from_service_account_info(info, scopes=list(SCOPES))
    except (ValueError, KeyError, TypeError):
        raise spec.problem(f"{where} holds a service account key that cannot be used (fields missing, or a bad "
                           "private key): create a new key") from None
    subject = spec.optional_text("subject")
    return (key.with_subject(subject) if subject else key), str(info.get("client_email") or "the service account")
