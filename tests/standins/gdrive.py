"""A local stand-in for the Google Drive v3 API and Google's OAuth token endpoint, for the ``gdrive`` connector's real
``google-api-python-client`` (over ``httplib2``) and ``google-auth``.

::

    async with DriveStandIn(page_size=2).running() as gd:
        key = gd.service_account_key()          # a key JSON whose token_uri is this stand-in's /token
        gd.put(DriveFile("doc1", "Refunds", GOOGLE_DOC, parents=("F1",), content="<h2 id='h.a1'>…</h2><p>…</p>"))
        gd.script("/drive/v3/files", status(429, retry_after=1), status(403, reason="rateLimitExceeded"))

What it answers, as Google's API reference describes it:

- ``POST /token``: a JWT-bearer grant (``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``), its assertion
  verified against the key's public half, its audience (Google's token endpoint) and scope checked;
  ``{"access_token", "expires_in", "token_type"}``, or 400 ``invalid_grant`` once the key is revoked (``revoke_key``).
- Every ``/drive/v3`` request needs ``Authorization: Bearer`` with a token it issued (or one of ``access_tokens``),
  else 401 in Google's error shape. Errors are ``{"error": {"code", "message", "errors": [{"domain", "reason",
  "message"}]}}``.
- ``GET /drive/v3/files``: ``q`` (clauses joined by ``and``: ``'ID' in parents``, ``trashed = true|false``,
  ``mimeType = '…'``; anything else is 400 ``invalid``), ``corpora`` (``user``, ``drive`` with ``driveId``,
  ``allDrives``), ``pageSize`` (at most ``page_size`` here), ``pageToken``/``nextPageToken``. Items of a shared drive
  are listed only with ``includeItemsFromAllDrives=true`` and ``supportsAllDrives=true``, as Drive does.
- ``GET /drive/v3/files/{id}``: metadata, or with ``alt=media`` the bytes (a Google Doc: 403 ``fileNotDownloadable``).
  A shared drive item needs ``supportsAllDrives=true`` (else 404 ``notFound``).
- ``GET /drive/v3/files/{id}/export?mimeType=text/html``: a Google Doc as Docs exports it (headings with
  ``id="h.…"``); anything else 403 ``fileNotExportable``.
- ``GET /drive/v3/files/{id}/permissions``: the file's permissions and, in a shared drive, the drive's members.
- ``GET /drive/v3/changes/startPageToken`` and ``GET /drive/v3/changes?pageToken=N``: the change log, one entry per
  change of a file (a file changed twice is there twice, as Drive may report it), each with the file as it is now,
  or ``removed: true`` once deleted; ``newStartPageToken`` on the last page.
- ``GET /drive/v3/about`` and ``GET /drive/v3/drives/{id}``.

``fields`` is applied as Drive applies it (a partial response: ``nextPageToken`` is absent unless asked for), with
Drive's defaults when it is not given. Like Drive, a file's ``permissions`` field is never filled for shared drive
items, nor for a file whose sharing the caller may not see (``sharing_visible=False``: its ``permissions.list`` is 403
``insufficientFilePermissions``). The caller is taken to see every file (the folders are shared with it). Time is a
counter the tests move (``tick``). ``script(path, *responses)`` queues answers for requests whose path starts with
``path`` (``tests.standins._common``); ``requests`` records ``(path, query, monotonic time)``.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import exceptions as auth_exceptions
from google.auth import jwt

from tests.standins._common import Scripted, Scripts, real, serve, status

__all__ = ["DOC_SCOPE", "FOLDER", "GOOGLE_DOC", "DriveFile", "DriveStandIn", "Permission", "real", "status"]

FOLDER = "application/vnd.google-apps.folder"
GOOGLE_DOC = "application/vnd.google-apps.document"
DOC_SCOPE = "https://www.googleapis.com/auth/drive.readonly"
_JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# google-auth addresses every grant to Google's token endpoint, whatever token_uri the key names.
_AUDIENCE = "https://oauth2.googleapis.com/token"
_DEFAULT_FIELDS = {"files": "kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)",
                   "file": "kind,id,name,mimeType",
                   "changes": "kind,nextPageToken,newStartPageToken,changes(kind,changeType,time,removed,fileId,file("
                              "kind,id,name,mimeType))",
                   "permissions": "kind,nextPageToken,permissions(kind,id,type,emailAddress,domain,role)"}


@dataclass(frozen=True)
class Permission:
    type: str  # user | group | domain | anyone
    role: str = "reader"
    email: str | None = None
    domain: str | None = None

    def json(self, index: int) -> dict[str, Any]:
        body = {"kind": "drive#permission", "id": f"p{index}", "type": self.type, "role": self.role,
                "emailAddress": self.email, "domain": self.domain, "allowFileDiscovery": False}
        return {k: v for k, v in body.items() if v is not None}


@dataclass(frozen=True)
class DriveFile:
    id: str
    name: str
    mime_type: str
    parents: tuple[str, ...] = ()
    content: str | bytes = ""  # a Google Doc: its body as HTML; else the file's bytes (or text, stored as UTF-8)
    drive_id: str | None = None  # the shared drive it lives in
    permissions: tuple[Permission, ...] = ()
    trashed: bool = False
    sharing_visible: bool = True
    version: int = 0  # set by ``put``
    modified: int = 0

    @property
    def data(self) -> bytes:
        return self.content.encode("utf-8") if isinstance(self.content, str) else self.content


class DriveStandIn:
    def __init__(self, *, page_size: int = 2, user_email: str = "verbatim@acme-docs.iam.gserviceaccount.com") -> None:
        self.page_size, self.user_email = page_size, user_email
        self.files: dict[str, DriveFile] = {}
        self.drives: dict[str, str] = {}  # shared drive id -> name
        self.drive_members: dict[str, tuple[Permission, ...]] = {}
        self.access_tokens: set[str] = set()  # OAuth access tokens it accepts besides those it issued
        self.requests: list[tuple[str, dict[str, str], float]] = []
        self.token_grants: list[dict[str, Any]] = []  # the verified claims of each JWT grant
        self._changes: list[tuple[str, bool]] = []  # (file id, removed), in order; a token is an index + 1
        self._scripts = Scripts()
        self._public_key: str | None = None
        self._issued: set[str] = set()
        self.now = 1_780_000_000
        self.base_url = ""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[DriveStandIn]:
        app = web.Application(middlewares=[self._gate])
        app.router.add_post("/token", self._token)
        app.router.add_get("/drive/v3/about", self._about)
        app.router.add_get("/drive/v3/files", self._list)
        app.router.add_get("/drive/v3/files/{id}", self._get)
        app.router.add_get("/drive/v3/files/{id}/export", self._export)
        app.router.add_get("/drive/v3/files/{id}/permissions", self._permissions)
        app.router.add_get("/drive/v3/changes/startPageToken", self._start_token)
        app.router.add_get("/drive/v3/changes", self._change_list)
        app.router.add_get("/drive/v3/drives/{id}", self._drive)
        async with serve(app) as url:
            self.base_url = url
            yield self

    # -- what a test does at the source -----------------------------------------------------------

    def service_account_key(self) -> dict[str, str]:
        """A new service account key (a throwaway RSA pair) as the console's JSON download, pointed at this token
        endpoint; the stand-in keeps the public half to verify its grants."""
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._public_key = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
        return {"type": "service_account", "project_id": "acme-docs", "private_key_id": "k1", "private_key": pem,
                "client_email": self.user_email, "client_id": "1170", "token_uri": f"{self.base_url}/token",
                "auth_uri": "https://accounts.google.com/o/oauth2/auth"}

    def revoke_key(self) -> None:
        """The key is deleted in the console: its grants are refused and the tokens it got stop working."""
        self._public_key = None
        self._issued.clear()

    def tick(self, seconds: int = 60) -> None:
        self.now += seconds

    def put(self, file: DriveFile) -> None:
        """Create or edit a file: a new version, modified now, one change logged."""
        self.tick()
        before = self.files.get(file.id)
        self.files[file.id] = replace(file, version=(before.version if before else 0) + 1, modified=self.now)
        self._changes.append((file.id, False))

    def update(self, file_id: str, **changes: Any) -> None:
        """Move, trash or reshare a file (``parents=``, ``trashed=``, ``permissions=``): one change logged."""
        self.put(replace(self.files[file_id], **changes))

    def delete(self, file_id: str) -> None:
        self.files.pop(file_id)
        self._changes.append((file_id, True))

    def script(self, path: str, *responses: Scripted) -> None:
        self._scripts.add(path, *responses)

    # -- the API ---------------------------------------------------------------------------------

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append((request.path, dict(request.query), time.monotonic()))
        scripted = self._scripts.next(request.path)
        if scripted is not None:
            return _error(scripted.status, scripted.reason or _REASONS.get(scripted.status, "backendError"),
                          headers=scripted.headers)
        if request.path == "/token":
            return await handler(request)
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if bearer not in self._issued | self.access_tokens:
            return _error(401, "authError", "Request had invalid authentication credentials.",
                          headers={"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'})
        try:
            return await handler(request)
        except _Refusal as refusal:
            return _error(refusal.status, refusal.reason, refusal.message)

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("grant_type") != _JWT_GRANT or not isinstance(form.get("assertion"), str):
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        if self._public_key is None:
            return web.json_response({"error": "invalid_grant", "error_description": "Invalid JWT Signature."},
                                     status=400)
        try:
            claims = jwt.decode(str(form["assertion"]), certs=self._public_key, audience=_AUDIENCE)
        except (ValueError, auth_exceptions.GoogleAuthError):
            return web.json_response({"error": "invalid_grant", "error_description": "Invalid JWT Signature."},
                                     status=400)
        if claims.get("iss") != self.user_email or DOC_SCOPE not in str(claims.get("scope", "")).split():
            return web.json_response({"error": "invalid_scope"}, status=400)
        self.token_grants.append(claims)
        token = f"ya29.stand-in-{len(self.token_grants)}"
        self._issued.add(token)
        return web.json_response({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    async def _about(self, request: web.Request) -> web.Response:
        user = {"kind": "drive#user", "displayName": "Verbatim", "emailAddress": self.user_email, "me": True,
                "permissionId": "0915"}
        return _partial({"kind": "drive#about", "user": user}, request.query.get("fields", "kind,user"))

    async def _list(self, request: web.Request) -> web.Response:
        query = request.query
        corpora = query.get("corpora", "user")
        all_drives = _true(query, "includeItemsFromAllDrives") and _true(query, "supportsAllDrives")
        if corpora in ("drive", "allDrives") and not all_drives:
            raise _Refusal(400, "invalid", f"The includeItemsFromAllDrives parameter must be set to true when "
                                           f"corpora is {corpora}.")
        if corpora == "drive" and query.get("driveId") not in self.drives:
            raise _Refusal(404, "notFound", f"Shared drive not found: {query.get('driveId')}")
        clauses = [_clause(c) for c in query.get("q", "").split(" and ") if c.strip()]
        found = [f for f in self.files.values()
                 if (corpora != "drive" or f.drive_id == query.get("driveId"))
                 and (f.drive_id is None or all_drives)
                 and all(_matches(f, clause) for clause in clauses)]
        start = int(query.get("pageToken") or 0)
        size = min(int(query.get("pageSize", 100)), self.page_size)
        page = found[start : start + size]
        body: dict[str, Any] = {"kind": "drive#fileList", "incompleteSearch": False,
                                "files": [self._json(f) for f in page]}
        if start + size < len(found):
            body["nextPageToken"] = str(start + size)
        return _partial(body, query.get("fields", _DEFAULT_FIELDS["files"]))

    def _file(self, request: web.Request) -> DriveFile:
        file = self.files.get(request.match_info["id"])
        if file is None or (file.drive_id is not None and not _true(request.query, "supportsAllDrives")):
            raise _Refusal(404, "notFound", f"File not found: {request.match_info['id']}.")
        return file

    async def _get(self, request: web.Request) -> web.Response:
        file = self._file(request)
        if request.query.get("alt") == "media":
            if file.mime_type.startswith("application/vnd.google-apps."):
                raise _Refusal(403, "fileNotDownloadable", "Only files with binary content can be downloaded. Use "
                                                           "Export with Docs Editors files.")
            return web.Response(body=file.data, content_type=file.mime_type)
        return _partial(self._json(file), request.query.get("fields", _DEFAULT_FIELDS["file"]))

    async def _export(self, request: web.Request) -> web.Response:
        file = self._file(request)
        if file.mime_type != GOOGLE_DOC:
            raise _Refusal(403, "fileNotExportable", "Export only supports Docs Editors files.")
        if request.query.get("mimeType") != "text/html":
            raise _Refusal(400, "badRequest", "The requested conversion is not supported.")
        html = (f'<html><head><meta content="text/html; charset=UTF-8" http-equiv="content-type"><style type='
                f'"text/css">.c1{{font-weight:700}}</style></head><body class="c4 doc-content">{file.content}'
                '</body></html>')
        return web.Response(body=html.encode("utf-8"), content_type="text/html", charset="utf-8")

    async def _permissions(self, request: web.Request) -> web.Response:
        file = self._file(request)
        if not file.sharing_visible:
            raise _Refusal(403, "insufficientFilePermissions", "The user does not have sufficient permissions for "
                                                               "this file.")
        every = [*(self.drive_members.get(file.drive_id or "", ())), *file.permissions]
        start = int(request.query.get("pageToken") or 0)
        size = min(int(request.query.get("pageSize", 100)), self.page_size)
        body: dict[str, Any] = {"kind": "drive#permissionList",
                                "permissions": [p.json(i) for i, p in enumerate(every)][start : start + size]}
        if start + size < len(every):
            body["nextPageToken"] = str(start + size)
        return _partial(body, request.query.get("fields", _DEFAULT_FIELDS["permissions"]))

    async def _start_token(self, request: web.Request) -> web.Response:
        return web.json_response({"kind": "drive#startPageToken", "startPageToken": str(len(self._changes) + 1)})

    async def _change_list(self, request: web.Request) -> web.Response:
        query = request.query
        token = query.get("pageToken", "")
        if not token.isdigit() or not 1 <= int(token) <= len(self._changes) + 1:
            raise _Refusal(400, "invalid", "Invalid Value")
        all_drives = _true(query, "includeItemsFromAllDrives") and _true(query, "supportsAllDrives")
        start = int(token) - 1
        size = min(int(query.get("pageSize", 100)), self.page_size)
        entries = []
        for file_id, removed in self._changes[start : start + size]:
            file = self.files.get(file_id)
            if file is not None and file.drive_id is not None and not all_drives:
                continue
            entry: dict[str, Any] = {"kind": "drive#change", "changeType": "file", "fileId": file_id,
                                     "time": _stamp(self.now), "removed": removed or file is None}
            if file is not None and not removed:
                entry["file"] = self._json(file)
                if file.drive_id:
                    entry["driveId"] = file.drive_id
            entries.append(entry)
        body: dict[str, Any] = {"kind": "drive#changeList", "changes": entries}
        if start + size < len(self._changes):
            body["nextPageToken"] = str(start + size + 1)
        else:
            body["newStartPageToken"] = str(len(self._changes) + 1)
        return _partial(body, query.get("fields", _DEFAULT_FIELDS["changes"]))

    async def _drive(self, request: web.Request) -> web.Response:
        drive_id = request.match_info["id"]
        if drive_id not in self.drives:
            raise _Refusal(404, "notFound", f"Shared drive not found: {drive_id}")
        body = {"kind": "drive#drive", "id": drive_id, "name": self.drives[drive_id]}
        return _partial(body, request.query.get("fields", "kind,id,name"))

    def _json(self, file: DriveFile) -> dict[str, Any]:
        if file.mime_type == GOOGLE_DOC:
            link = f"https://docs.google.com/document/d/{file.id}/edit?usp=drivesdk"
        elif file.mime_type == FOLDER:
            link = f"https://drive.google.com/drive/folders/{file.id}"
        else:
            link = f"https://drive.google.com/file/d/{file.id}/view?usp=drivesdk"
        body: dict[str, Any] = {
            "kind": "drive#file", "id": file.id, "name": file.name, "mimeType": file.mime_type,
            "parents": list(file.parents), "trashed": file.trashed, "webViewLink": link,
            "version": str(file.version), "modifiedTime": _stamp(file.modified), "driveId": file.drive_id,
        }
        if not file.mime_type.startswith("application/vnd.google-apps."):
            body["size"] = str(len(file.data))
            body["headRevisionId"] = f"rev{file.version}"
        if file.drive_id is None and file.sharing_visible:  # Drive never fills it for shared drive items
            body["permissions"] = [p.json(i) for i, p in enumerate(file.permissions)]
        return {k: v for k, v in body.items() if v is not None}


class _Refusal(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


_REASONS = {400: "badRequest", 401: "authError", 403: "forbidden", 404: "notFound", 429: "rateLimitExceeded",
            500: "backendError", 503: "backendError"}


def _error(code: int, reason: str, message: str | None = None, *, headers: dict[str, str] | None = None
           ) -> web.Response:
    text = message or f"scripted {code} {reason}"
    domain = "usageLimits" if "RateLimit" in reason or "rateLimit" in reason else "global"
    body = {"error": {"code": code, "message": text, "errors": [{"domain": domain, "reason": reason,
                                                                 "message": text}]}}
    return web.json_response(body, status=code, headers=headers)


def _true(query: Any, name: str) -> bool:
    return str(query.get(name, "false")).lower() == "true"


def _stamp(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _clause(text: str) -> tuple[str, str, str]:
    """One clause of ``q``: (field, operator, value); 400 for what this stand-in (and the connector) never uses."""
    text = text.strip()
    if text.endswith(" in parents") and text.startswith("'"):
        return "parents", "in", text[1 : text.index("'", 1)]
    for name in ("trashed", "mimeType"):
        for operator in ("!=", "="):
            prefix = f"{name} {operator} "
            if text.startswith(prefix):
                return name, operator, text[len(prefix):].strip("'")
    raise _Refusal(400, "invalid", f"Invalid Value (q: {text})")


def _matches(file: DriveFile, clause: tuple[str, str, str]) -> bool:
    name, operator, value = clause
    if name == "parents":
        return value in file.parents
    actual = str(file.trashed).lower() if name == "trashed" else file.mime_type
    return (actual == value) == (operator == "=")


def _partial(body: dict[str, Any], fields: str) -> web.Response:
    """The response limited to ``fields``, as Drive's partial responses are."""
    return web.json_response(_select(body, _mask(fields)))


def _mask(text: str) -> dict[str, Any]:
    """``"a,b(c,d(e))"`` as ``{"a": {}, "b": {"c": {}, "d": {"e": {}}}}`` (``{}``: the whole value)."""
    stack: list[dict[str, Any]] = [{}]
    name = ""
    for char in text.replace(" ", "") + ",":
        if char in ",()":
            if name:
                stack[-1][name] = {}
            if char == "(":
                stack.append(stack[-1][name])
            elif char == ")":
                stack.pop()
            name = ""
        else:
            name += char
    return stack[0]


def _select(value: Any, mask: dict[str, Any]) -> Any:
    if not mask or "*" in mask:
        return value
    if isinstance(value, list):
        return [_select(v, mask) for v in value]
    if isinstance(value, dict):
        return {k: _select(v, mask[k]) for k, v in value.items() if k in mask}
    return value
