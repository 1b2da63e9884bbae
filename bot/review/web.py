"""`verbatim review serve`: the review desk as a small server-rendered web page (aiohttp, no front-end build).

Routes:

    GET  /                          the review queue; filters as a GET form (flagged, no_support, errors, all,
                                    channel, since, limit)
    GET  /exchanges/{id}            one exchange: quotes highlighted in their chunks, stale markers, rejected
                                    quotes, flags with resolve buttons
    POST /exchanges/{id}/resolve    resolve one flag (flag_id) or every open flag; CSRF-checked; 303 back
    GET  /trends                    the lead metrics and per-day charts (inline SVG); since, channel
    GET  /gaps                      coverage gaps: no-support questions grouped into topics; since, channel
    GET  /healthz                   {"status": "ok"} when the exchange log answers (503 otherwise); no auth
    GET|POST /login, POST /logout   only meaningful with a token (see `auth`)

`create_review_app(session_factory, chunk_lookup, token=..., embedder=...)` builds the app from what the
composition root made (the embedder embeds questions for /gaps); nothing is created at import. `serve` is that composition root for the command: it refuses a
non-loopback bind without a token, checks the log's schema, opens the index (or goes on without it), and
runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, unquote

from aiohttp import web
from sqlalchemy.exc import DBAPIError

from bot.review import desk
from bot.review.auth import (
    LOGIN_COOKIE,
    OPEN_PATHS,
    REVIEWER_COOKIE,
    SECURITY_HEADERS,
    SESSION_COOKIE,
    BindRefused,
    bearer_token,
    check_bind,
    csrf_token,
    csrf_valid,
    local_path,
    login_cookie,
    login_cookie_valid,
    new_key,
    new_session_id,
    same_origin,
    token_matches,
)
from bot.review.errors import (
    InvalidExchangeId,
    InvalidFlagId,
    InvalidSince,
    NothingToResolve,
)
from bot.review.formatting import (
    parse_exchange_id,
    parse_flag_id,
    parse_since,
    resolution_label,
)
from bot.review.gaps_page import gaps_page
from bot.review.html_safe import Markup
from bot.review.learning import Learning
from bot.review.lookup import ChunkLookup, IndexUnavailable
from bot.review.pages import (
    QueueFilters,
    exchange_page,
    login_page,
    message_page,
    queue_page,
    trends_page,
)
from bot.review.queries import review_queue
from bot.runtime.retrieval import open_gaps_embedder
from bot.runtime.review import open_learning
from bot.runtime.storage import open_log
from bot.settings import Settings
from storage.db import ping, unavailable
from storage.errors import DatabaseUnavailable, UnknownExchange
from storage.records import RESOLUTIONS
from storage.stats import channel_stats, daily_stats, window_stats

__all__ = ["BindRefused", "create_review_app", "serve"]

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

DEFAULT_TRENDS_SINCE = "30d"
MAX_QUEUE_LIMIT = 1000
MAX_NOTE_CHARS = 2000
MAX_NAME_CHARS = 100
HEALTH_CHECK_S = 2.0  # /healthz answers quickly even when the database hangs
COOKIE_OPTIONS = {"httponly": True, "samesite": "Lax", "path": "/"}
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


@dataclass(frozen=True, slots=True)
class DeskState:
    """What every handler needs: the log, the index, the token (None: loopback only), this process's key, and
    the embedder for /gaps (None: that page says it is off)."""

    sessions: desk.Sessions
    lookup: ChunkLookup
    token: str | None
    key: bytes
    embedder: desk.QuestionEmbedder | None = None
    learning: Learning | None = None  # where a confirmed-bad verdict gets its content hash and query vector


STATE = web.AppKey("review_desk", DeskState)
BEARER = web.RequestKey("review_bearer", bool)  # authenticated by an Authorization header (no CSRF token needed)
SESSION = web.RequestKey("review_session", str)  # this browser's session id (what CSRF tokens derive from)


def create_review_app(
    session_factory: desk.Sessions, chunk_lookup: ChunkLookup, *, token: str | None,
    embedder: desk.QuestionEmbedder | None = None, learning: Learning | None = None,
) -> web.Application:
    """The review desk's aiohttp app; with `token`, every page but /healthz and /login requires it."""
    app = web.Application(middlewares=[_security_headers, _database_errors, _authenticate, _browser_session])
    app[STATE] = DeskState(sessions=session_factory, lookup=chunk_lookup, token=token or None, key=new_key(),
                           embedder=embedder, learning=learning)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/", queue)
    app.router.add_get("/exchanges/{exchange_id}", exchange)
    app.router.add_post("/exchanges/{exchange_id}/resolve", resolve)
    app.router.add_get("/trends", trends)
    app.router.add_get("/gaps", gaps)
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
    return app


# -- middlewares -----------------------------------------------------------------------------------


@web.middleware
async def _security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """CSP without scripts, no framing, no caching: on every response, errors included."""
    try:
        response = await handler(request)
    except web.HTTPException as error:
        error.headers.update(SECURITY_HEADERS)
        raise
    response.headers.update(SECURITY_HEADERS)
    return response


@web.middleware
async def _database_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A database that stops answering mid-request is one line on the page and in the log, not a traceback."""
    try:
        return await handler(request)
    except DBAPIError as error:
        engine = request.app[STATE].sessions.kw["bind"]
        message = str(unavailable(engine.url, error))
    except DatabaseUnavailable as error:
        message = str(error)
    logger.warning("review desk: %s", message)
    return _html(message_page("Exchange log unavailable", "The exchange log did not answer: try again shortly."),
                 status=503)


@web.middleware
async def _authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """With a token: a Bearer header or the login cookie, else the login page (GET) or 401."""
    state = request.app[STATE]
    request[BEARER] = False
    if state.token is None or request.path in OPEN_PATHS:
        return await handler(request)
    presented = bearer_token(request.headers.get("Authorization"))
    if presented is not None:
        if not token_matches(presented, state.token):
            return _unauthorised()
        request[BEARER] = True
        return await handler(request)
    if login_cookie_valid(state.key, state.token, request.cookies.get(LOGIN_COOKIE)):
        return await handler(request)
    if request.method == "GET":
        raise web.HTTPSeeOther(f"/login?next={quote(request.path_qs, safe='')}")
    return _unauthorised()


@web.middleware
async def _browser_session(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A random session cookie per browser: what its forms' CSRF tokens are derived from."""
    session_id = request.cookies.get(SESSION_COOKIE, "")
    fresh = not _SESSION_ID.match(session_id)
    if fresh:
        session_id = new_session_id()
    request[SESSION] = session_id
    try:
        response = await handler(request)
    except web.HTTPException as error:
        if fresh:
            error.set_cookie(SESSION_COOKIE, session_id, **COOKIE_OPTIONS)  # type: ignore[arg-type]
        raise
    if fresh and isinstance(response, web.Response):
        response.set_cookie(SESSION_COOKIE, session_id, **COOKIE_OPTIONS)  # type: ignore[arg-type]
    return response


# -- pages -----------------------------------------------------------------------------------------


async def healthz(request: web.Request) -> web.Response:
    """Liveness for a load balancer or a supervisor: whether the exchange log answers (within HEALTH_CHECK_S)."""
    if not await ping(request.app[STATE].sessions, HEALTH_CHECK_S):
        return web.json_response({"status": "unavailable"}, status=503)
    return web.json_response({"status": "ok"})


async def queue(request: web.Request) -> web.Response:
    state = request.app[STATE]
    filters, error = _queue_filters(request)
    since = None
    if filters.since and error is None:
        try:
            since = parse_since(filters.since, datetime.now(UTC))
        except InvalidSince as bad:
            error = str(bad)
    async with state.sessions() as session:
        items = await review_queue(
            session, flagged=filters.flagged, no_support=filters.no_support, errors=filters.errors,
            everything=filters.everything, channel_id=filters.channel or None, since=since, limit=filters.limit,
        ) if error is None else []
    return _html(queue_page(items, filters, error=error, logout_csrf=_logout_csrf(request)),
                 status=400 if error else 200)


async def exchange(request: web.Request, *, error: str | None = None, status: int = 200) -> web.Response:
    state = request.app[STATE]
    try:
        exchange_id = parse_exchange_id(request.match_info["exchange_id"])
        record, flags = await desk.read_exchange(state.sessions, exchange_id)
    except (InvalidExchangeId, UnknownExchange) as missing:
        return _html(message_page("No such exchange", str(missing)), status=404)
    review = await desk.review_exchange(record, flags, state.lookup,
                                        handling=await desk.read_handling(state.sessions, exchange_id))
    return _html(exchange_page(
        review, csrf=csrf_token(state.key, request[SESSION]),
        reviewer=unquote(request.cookies.get(REVIEWER_COOKIE, "")),
        notice=_resolved_notice(request), error=error, logout_csrf=_logout_csrf(request),
    ), status=status)


async def resolve(request: web.Request) -> web.Response:
    """Resolve flags from a form; 303 back to the exchange, which then says what was resolved."""
    state = request.app[STATE]
    _require_same_site(request)
    form = await request.post()
    if not request[BEARER] and not csrf_valid(state.key, request[SESSION], _field(form, "csrf")):
        return _forbidden("This form has expired or came from another site: reload the page and resolve again.")
    try:
        exchange_id = parse_exchange_id(request.match_info["exchange_id"])
        flag_id = parse_flag_id(_field(form, "flag_id")) if _field(form, "flag_id") else None
    except (InvalidExchangeId, InvalidFlagId) as bad:
        return _html(message_page("Bad request", str(bad)), status=400)
    resolution = _field(form, "resolution")
    if resolution not in RESOLUTIONS:
        return _html(message_page("Bad request", f"resolution must be one of {', '.join(RESOLUTIONS)}"), status=400)
    note = (_field(form, "note") or "").strip()[:MAX_NOTE_CHARS] or None
    by = " ".join((_field(form, "by") or "").split())[:MAX_NAME_CHARS] or "review desk"
    try:
        resolved = await desk.resolve_flags(
            state.sessions, exchange_id, flag_id=flag_id, resolution=resolution,  # type: ignore[arg-type]
            note=note, by=by, at=datetime.now(UTC), learning=state.learning,
        )
    except UnknownExchange as missing:
        return _html(message_page("No such exchange", str(missing)), status=404)
    except NothingToResolve as nothing:
        return await exchange(request, error=str(nothing), status=409)
    done = web.HTTPSeeOther(f"/exchanges/{exchange_id}?resolved={len(resolved)}&as={resolution}#flags")
    # Percent-encoded: a cookie carries ASCII only, and leads' names often are not ("Аня").
    done.set_cookie(REVIEWER_COOKIE, quote(by, safe=""), max_age=365 * 24 * 3600,
                    **COOKIE_OPTIONS)  # type: ignore[arg-type]
    raise done


async def trends(request: web.Request) -> web.Response:
    state = request.app[STATE]
    since_text = request.query.get("since", "").strip() or DEFAULT_TRENDS_SINCE
    channel = request.query.get("channel", "").strip() or None
    now = datetime.now(UTC)
    error = None
    try:
        start = parse_since(since_text, now)
    except InvalidSince as bad:
        error, start = str(bad), now - timedelta(days=30)
    async with state.sessions() as session:
        overall = await window_stats(session, since=start, channel_id=channel)
        days = await daily_stats(session, since=start, channel_id=channel)
        channels = await channel_stats(session, since=start)
    return _html(trends_page(
        overall, days, channels, since_text=since_text, start=start.date(), end=now.date(), channel=channel,
        error=error, logout_csrf=_logout_csrf(request),
    ), status=400 if error else 200)


async def gaps(request: web.Request) -> web.Response:
    state = request.app[STATE]
    since_text = request.query.get("since", "").strip() or DEFAULT_TRENDS_SINCE
    channel = request.query.get("channel", "").strip() or None
    now = datetime.now(UTC)
    try:
        start = parse_since(since_text, now)
    except InvalidSince as bad:
        return _html(gaps_page(None, since_text=since_text, channel=channel, error=str(bad),
                               logout_csrf=_logout_csrf(request)), status=400)
    if state.embedder is None:
        return _html(gaps_page(None, since_text=since_text, channel=channel, logout_csrf=_logout_csrf(request),
                               error="Coverage gaps are off: this desk was started without a question embedder."),
                     status=503)
    report = await desk.coverage_gaps(state.sessions, state.embedder, since=start, channel_id=channel, now=now)
    return _html(gaps_page(report, since_text=since_text, channel=channel, logout_csrf=_logout_csrf(request)))


async def login_form(request: web.Request) -> web.Response:
    if request.app[STATE].token is None:
        raise web.HTTPSeeOther("/")
    return _html(login_page(next_path=local_path(request.query.get("next"))))


async def login(request: web.Request) -> web.Response:
    """Check the posted token; on success set the login cookie (an HMAC, not the token) and go on."""
    state = request.app[STATE]
    if state.token is None:
        raise web.HTTPSeeOther("/")
    _require_same_site(request)
    form = await request.post()
    next_path = local_path(request.query.get("next"))
    if not token_matches(_field(form, "token"), state.token):
        logger.warning("review desk: a sign-in with a wrong token from %s", request.remote)
        return _html(login_page(next_path=next_path, error="That is not this desk's token."), status=401)
    done = web.HTTPSeeOther(next_path)
    done.set_cookie(LOGIN_COOKIE, login_cookie(state.key, state.token), **COOKIE_OPTIONS)  # type: ignore[arg-type]
    raise done


async def logout(request: web.Request) -> web.Response:
    state = request.app[STATE]
    _require_same_site(request)
    form = await request.post()
    if not csrf_valid(state.key, request[SESSION], _field(form, "csrf")):
        return _forbidden("This form has expired or came from another site: reload the page and try again.")
    done = web.HTTPSeeOther("/login")
    done.del_cookie(LOGIN_COOKIE, path="/")
    raise done


# -- helpers ---------------------------------------------------------------------------------------


def _html(markup: Markup, *, status: int = 200) -> web.Response:
    return web.Response(text=str(markup), status=status, content_type="text/html", charset="utf-8")


def _unauthorised() -> web.Response:
    return web.Response(status=401, text="this review desk needs its token: sign in at /login, or send "
                        "Authorization: Bearer <REVIEW_TOKEN>\n", headers={"WWW-Authenticate": "Bearer"})


def _forbidden(message: str) -> web.Response:
    return _html(message_page("Forbidden", message), status=403)


def _require_same_site(request: web.Request) -> None:
    if not same_origin(request.host, request.headers.get("Origin"), request.headers.get("Referer")):
        raise web.HTTPForbidden(text="this form was posted from another site\n")


def _field(form: Mapping[str, object], name: str) -> str | None:
    """A text field of a posted form (None when absent, or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else None


def _logout_csrf(request: web.Request) -> str | None:
    state = request.app[STATE]
    return csrf_token(state.key, request[SESSION]) if state.token is not None else None


def _queue_filters(request: web.Request) -> tuple[QueueFilters, str | None]:
    query = request.query
    error = None
    limit_text = query.get("limit", "").strip() or "100"
    try:
        limit = int(limit_text)
        if not 1 <= limit <= MAX_QUEUE_LIMIT:
            raise ValueError(limit_text)
    except ValueError:
        error, limit = f"limit must be a whole number from 1 to {MAX_QUEUE_LIMIT}, got {limit_text!r}", 100
    return QueueFilters(
        flagged=bool(query.get("flagged")), no_support=bool(query.get("no_support")), errors=bool(query.get("errors")),
        everything=bool(query.get("all")), channel=query.get("channel", "").strip(),
        since=query.get("since", "").strip(),
        limit=limit,
    ), error


def _resolved_notice(request: web.Request) -> str | None:
    count, verdict = request.query.get("resolved", ""), request.query.get("as", "")
    if not count.isdigit() or verdict not in RESOLUTIONS:
        return None
    return f"Resolved {count} flag{'s' if count != '1' else ''} as {resolution_label(verdict)}."


# -- the server ------------------------------------------------------------------------------------


async def serve(settings: Settings, *, host: str, port: int, token: str | None) -> None:
    """Run the review desk until SIGINT/SIGTERM; prints the address it listens on (one line, no token)."""
    check_bind(host, token)
    level = logging.getLevelNamesMapping().get(settings.log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # the schema check's chatter is not news
    async with open_log(settings) as sessions, open_learning(settings) as learning, \
            open_gaps_embedder(settings, learning.embedder) as embedder:
        lookup = learning.lookup
        if isinstance(lookup, IndexUnavailable):
            logger.warning("chunk text unavailable (%s): pages show the quotes as logged", lookup.reason)
        runner = web.AppRunner(create_review_app(sessions, lookup, token=token, embedder=embedder,
                                                 learning=learning))
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
            bound_port = _bound_port(runner, port)
            shown = f"[{host}]" if ":" in host else host
            print(f"review desk on http://{shown}:{bound_port}/ (Ctrl-C to stop)", flush=True)
            await _until_stopped()
        finally:
            await runner.cleanup()


def _bound_port(runner: web.AppRunner, asked: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return asked


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
