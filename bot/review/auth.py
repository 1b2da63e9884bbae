"""Who may use the review desk page, and how a form post proves it came from the page. Pure helpers.

The rules:

- The page binds 127.0.0.1 by default: only people on this machine reach it. Any other bind address
  (0.0.0.0, a LAN address, a host name) exposes the exchange log, so it needs REVIEW_TOKEN; without one the
  server refuses to start (`check_bind`).
- With a token, every request but /healthz and /login needs it: an `Authorization: Bearer` header (scripts),
  or the login cookie the /login form sets (people). Tokens are compared with `hmac.compare_digest`. The
  cookie holds an HMAC of the token under a key made at start-up, never the token; it is HttpOnly, and a
  restart logs everyone out. The token never appears in a page, a redirect or a log line.
- Form posts (resolving a flag) must come from this site: the Origin (or Referer) header, when the browser
  sends one, must name this host, and the form must carry a CSRF token: an HMAC of the browser's random
  session cookie under the start-up key. Another site can neither read the token nor set the cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from urllib.parse import urlsplit

LOGIN_COOKIE = "verbatim_review_login"
SESSION_COOKIE = "verbatim_review_session"
REVIEWER_COOKIE = "verbatim_reviewer"
OPEN_PATHS = frozenset({"/healthz", "/login"})

SECURITY_HEADERS = {
    # No script runs on these pages, so none may: an escaping slip would still execute nothing.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class BindRefused(Exception):
    """The server would listen beyond this machine without a token."""


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the page on this machine (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind address without a token (one line saying what to do)."""
    if not is_loopback(host) and not token:
        raise BindRefused(
            f"refusing to serve the review desk on {host}: it is not a loopback address, so REVIEW_TOKEN must be "
            "set (or bind 127.0.0.1)"
        )


def new_key() -> bytes:
    """The per-process key for login cookies and CSRF tokens."""
    return secrets.token_bytes(32)


def new_session_id() -> str:
    """A random id for a browser's session cookie (what its CSRF token is derived from)."""
    return secrets.token_urlsafe(24)


def _mac(key: bytes, purpose: str, value: str) -> str:
    return hmac.new(key, f"{purpose}\x1f{value}".encode(), hashlib.sha256).hexdigest()


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison of a presented token with the configured one."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer …` header, or None."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def login_cookie(key: bytes, token: str) -> str:
    """The login cookie's value: proves the token was given, without containing it."""
    return _mac(key, "login", token)


def login_cookie_valid(key: bytes, token: str, value: str | None) -> bool:
    """Whether a presented login cookie was made by this process for this token."""
    return value is not None and hmac.compare_digest(value.encode(), login_cookie(key, token).encode())


def csrf_token(key: bytes, session_id: str) -> str:
    """The token a form carries for this browser session."""
    return _mac(key, "csrf", session_id)


def csrf_valid(key: bytes, session_id: str | None, given: str | None) -> bool:
    """Whether a posted form's token belongs to the posting browser's session."""
    if not session_id or not given:
        return False
    return hmac.compare_digest(given.encode(), csrf_token(key, session_id).encode())


def same_origin(host: str, origin: str | None, referer: str | None) -> bool:
    """Whether the browser says the post came from this host; a client that sends neither header passes.

    Browsers send Origin on every cross-site POST, so a mismatch is a forged form; curl and scripts send
    neither and are held to the CSRF token (or their bearer token) instead.
    """
    if origin == "null":  # an opaque origin (sandboxed frame, data: URL): never this site
        return False
    source = origin or referer
    if not source:
        return True
    return urlsplit(source).netloc.lower() == host.lower()


def local_path(target: str | None, default: str = "/") -> str:
    """A redirect target that stays on this site (a path, not "//host" or "https://…")."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target
