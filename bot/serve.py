"""``verbatim serve`` / ``python -m bot``: the Slack bot and its HTTP server, from start-up to clean shutdown.

    start     check the Slack settings (one line and exit 2 if they cannot work), check the bot token with
              auth.test, open Weaviate and the exchange log (replaying its journal), build the answer service
    serve     HTTP on $PORT: the HTTP API (``bot.api``: /api/ask, /metrics, /healthz, /readyz) and, in HTTP mode,
              Slack's /slack/events (``bot.slack.http``) on the same application; Socket Mode instead of
              /slack/events when SLACK_APP_TOKEN is set; the journal replayed every 10 s; questions a crashed
              instance left behind answered at start-up and every half lease (``bot.slack.recovery``)
    stop      on SIGTERM or SIGINT: stop taking events (close the socket / the listening port), let the
              answers in flight finish and log, then close the clients; exit 0. A signal during start-up
              cancels it: what was started (the home's Weaviate Embedded) is stopped, exit 143 / 130

``running_bot`` is the part between start and stop, given ready-made deps, so tests run the real server.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Literal, NoReturn

import aiohttp
import click
from aiohttp import web
from pydantic import SecretStr
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.api.app import web_application
from bot.api.deps import ApiDeps, ServerState
from bot.channels import ChannelsFile, ChannelsFileError
from bot.cli_support import StopSignals, Stopped, fail, load_settings
from bot.log_format import configure_logging
from bot.runtime.answer import build_answer_deps
from bot.runtime.retrieval import open_retrieval
from bot.runtime.storage import open_storage, replay_journal
from bot.source_schedule import sync_sources_forever
from bot.settings import Settings
from bot.slack.app import create_app
from bot.slack.concurrency import cancel_and_wait
from bot.slack.deps import (
    SLACK_ERRORS,
    SlackDeps,
    SlackOptions,
    build_web_client,
    slack_error,
)
from bot.slack.http import mount_events
from bot.slack.recovery import Recovery
from retrieval.errors import RetrievalError
from retrieval.weaviate_server import WeaviateHandle
from storage.errors import StorageError

log = logging.getLogger(__name__)

Mode = Literal["http", "socket"]
# How long a shutdown waits for answers in flight, in all. A platform gives a stopped process 30 s before SIGKILL,
# and a SIGKILLed bot leaves its home's Weaviate Embedded running: this, plus the server's stop (at most
# retrieval.embedded_home._STOP_TIMEOUT_S), stays under it (docs/benchmarks.md, "Shutdown").
DRAIN_TIMEOUT_S = 15.0
# Questions are embedded on one core: the event loop and Weaviate need the others in a burst (with the engine before
# ONNX Runtime, a burst of 100 mentions: p95 -13 % in 10 channels, -7 % in one; docs/benchmarks.md, "Query
# embedding on one core"). On ONNX Runtime a question is one run on one thread: nothing to wait for.
QUERY_EMBED_THREADS = 1
HEAL_EVERY_S = 5.0  # how often the store is checked and, if its embedded server died, restarted
REPLAY_EVERY_S = 10.0  # a journal with nothing waiting costs one stat; a database back is caught up within 10 s


class SlackConfigError(Exception):
    """The Slack settings cannot work; the message says which variable to set."""


class StartError(Exception):
    """The server could not start (the port is taken, …); the message says why."""


_START_ERRORS = (RetrievalError, StorageError, StartError)


def slack_mode(settings: Settings) -> Mode:
    """"socket" when SLACK_APP_TOKEN is set, else "http"; SlackConfigError when neither can run."""
    if settings.slack_bot_token is None or not settings.slack_bot_token.get_secret_value().strip():
        raise SlackConfigError("SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-…) from the Slack "
                               "app's OAuth & Permissions page")
    app_token = settings.slack_app_token.get_secret_value().strip() if settings.slack_app_token else ""
    if app_token:
        if not app_token.startswith("xapp-"):
            raise SlackConfigError("SLACK_APP_TOKEN must be an app-level token (xapp-…) with the "
                                   "connections:write scope, made under Basic Information > App-Level Tokens")
        return "socket"
    if settings.slack_signing_secret is None or not settings.slack_signing_secret.get_secret_value().strip():
        raise SlackConfigError("set SLACK_SIGNING_SECRET (HTTP mode: Slack posts events to /slack/events) or "
                               "SLACK_APP_TOKEN (Socket Mode, an xapp-… token)")
    return "http"


@dataclass(frozen=True, slots=True)
class RunningBot:
    mode: Mode
    url: str  # the HTTP server's base URL, e.g. http://127.0.0.1:3000


@asynccontextmanager
async def running_bot(settings: Settings, deps: SlackDeps, *, host: str = "0.0.0.0", port: int | None = None,
                      replay_every_s: float = REPLAY_EVERY_S,
                      drain_timeout_s: float = DRAIN_TIMEOUT_S) -> AsyncIterator[RunningBot]:
    """Serve until the block ends, then shut down cleanly (see the module docstring)."""
    mode = slack_mode(settings)
    bolt = create_app(settings, deps)
    state = ServerState(mode)
    application = web_application(api_deps(deps), state, api_token=_secret(settings.api_token),
                                  metrics_token=_secret(settings.metrics_token))
    if mode == "http":
        mount_events(application, bolt)
    runner = web.AppRunner(application, access_log=None, shutdown_timeout=drain_timeout_s)
    await runner.setup()
    socket: AsyncSocketModeHandler | None = None
    replay = asyncio.create_task(_replay_forever(deps, replay_every_s), name="journal-replay")
    recovery = Recovery(deps)
    sweeping: asyncio.Task[None] | None = None
    try:
        site = web.TCPSite(runner, host, settings.port if port is None else port)
        try:
            await site.start()
        except OSError as error:
            raise StartError(f"cannot listen on {host}:{site.name.rsplit(':', 1)[-1]}: {error.strerror or error}") from error
        if mode == "socket":
            assert settings.slack_app_token is not None
            socket = AsyncSocketModeHandler(bolt, settings.slack_app_token.get_secret_value())
            await socket.connect_async()
        sweeping = asyncio.create_task(recovery.run(), name="recovery")
        yield RunningBot(mode, _base_url(runner, host))
    finally:
        state.draining = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain_timeout_s  # one budget for the whole drain, not one per step
        if sweeping is not None:
            await cancel_and_wait(sweeping)
        if socket is not None:
            await socket.close_async()  # no new events; Slack sends them to another connection
        await runner.cleanup()  # no new requests; waits for /api/ask requests in progress
        await recovery.drain()
        left = await deps.in_flight.drain(max(0.0, deadline - loop.time()))
        if left:
            log.error("shutting down with %d answers still running after %.0f s", left, drain_timeout_s)
        await cancel_and_wait(replay)
        await replay_journal(deps.log.journal, deps.log.sessions)


def api_deps(deps: SlackDeps) -> ApiDeps:
    """The HTTP API's parts: the very ones the Slack edge answers with (one recorder, slots, metrics, count)."""
    return ApiDeps(answer=deps.answer, recorder=deps.recorder, limits=deps.limits, sessions=deps.log.sessions,
                   journal=deps.log.journal, metrics=deps.metrics, in_flight=deps.in_flight,
                   log_questions=deps.options.log_questions)


def _secret(value: SecretStr | None) -> str | None:
    """A token's value; None when it is unset or blank (its endpoint is then off)."""
    return (value.get_secret_value().strip() or None) if value is not None else None


async def heal_forever(weaviate: WeaviateHandle, every_s: float = HEAL_EVERY_S) -> None:
    """The store heals by itself: a dead embedded server is restarted, a returning WEAVIATE_URL is noticed.

    Meanwhile every search fails within WEAVIATE_QUERY_TIMEOUT_S and the asker gets the error reply; /readyz
    says the store is down. One line is logged when the store goes and one when it is back, not one per check.
    """
    down: str | None = None
    while True:
        await asyncio.sleep(every_s)
        try:
            restarted = await weaviate.heal()
        except RetrievalError as error:
            if str(error) != down:
                log.error("the document store is unavailable: %s", error)
            down = str(error)
            continue
        if restarted or down is not None:
            log.warning("the document store is serving again (%s)", weaviate.description)
        down = None


async def _replay_forever(deps: SlackDeps, every_s: float) -> None:
    """Exchanges journaled while the database was down are written as soon as it is back."""
    while True:
        await asyncio.sleep(every_s)
        await replay_journal(deps.log.journal, deps.log.sessions)


def freeze_startup_objects() -> None:
    """Hide what start-up built from the garbage collector, so a full collection never stalls the event loop.

    After start-up about 200,000 objects (modules, clients, models) live as long as the process; a full
    collection walks them all and took over 100 ms on the event loop in bench/slack.py. Frozen, they are
    skipped, and the longest stall seen under a burst of mentions fell to about 40 ms.
    """
    gc.collect()
    gc.freeze()


def _base_url(runner: web.AppRunner, host: str) -> str:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
            return f"http://{shown}:{address[1]}"
    return ""


async def serve(settings: Settings, *, host: str, port: int | None) -> None:
    """Build everything from settings, serve until SIGTERM/SIGINT, shut down cleanly.

    A signal before the bot serves cancels the start-up (a start can take longer on a loaded machine than a
    platform waits before SIGKILL, which would leave the home's Weaviate Embedded running): the exit stack stops
    what was started, and ``Stopped`` says which signal.
    """
    stop = asyncio.Event()
    task = asyncio.current_task()
    assert task is not None
    serving = asyncio.Event()

    def on_signal(signum: signal.Signals) -> None:
        if serving.is_set():
            stop.set()
        else:
            log.info("%s while starting: stopping the start", signum.name)
            task.cancel()

    with StopSignals(on_signal) as signals:
        try:
            await _serve(settings, host=host, port=port, serving=serving, stop=stop)
        except asyncio.CancelledError:
            if signals.received is None:
                raise
            raise Stopped(signals.received) from None
    log.info("stopped")


async def _serve(settings: Settings, *, host: str, port: int | None, serving: asyncio.Event,
                 stop: asyncio.Event) -> None:
    async with AsyncExitStack() as stack:
        session = aiohttp.ClientSession()
        stack.push_async_callback(session.close)  # closed last: after the answers in flight have posted
        client = build_web_client(settings, session)
        await _check_token(client)
        retrieval = await stack.enter_async_context(open_retrieval(settings, query_threads=QUERY_EMBED_THREADS))
        storage = await stack.enter_async_context(open_storage(settings))
        deps = SlackDeps(answer=build_answer_deps(settings, retrieval, storage.sessions), log=storage.log,
                         client=client, options=SlackOptions.from_settings(settings))
        healing = asyncio.create_task(heal_forever(retrieval.weaviate), name="store-heal")
        stack.push_async_callback(cancel_and_wait, healing)  # before the store closes
        freeze_startup_objects()
        async with running_bot(settings, deps, host=host, port=port) as bot:
            # The declared sources, each on its interval; cancelled before the store closes.
            syncing = asyncio.create_task(sync_sources_forever(settings, retrieval, deps.metrics), name="sources")
            stack.push_async_callback(cancel_and_wait, syncing)
            serving.set()  # from here a signal is a graceful stop, no longer a cancelled start
            log.info("Verbatim is serving on %s (%s mode; Weaviate: %s)", bot.url,
                     "Socket Mode" if bot.mode == "socket" else "HTTP Events API", retrieval.weaviate.description)
            await stop.wait()
            log.info("stopping; answers in flight: %d", len(deps.in_flight))


async def _check_token(client: AsyncWebClient) -> None:
    """Fail at start-up, not at the first question, when Slack refuses the bot token."""
    try:
        await client.auth_test()
    except SLACK_ERRORS as error:
        raise SlackConfigError(f"Slack refused SLACK_BOT_TOKEN at auth.test ({slack_error(error)}): check the token "
                               "and SLACK_API_URL") from error




@click.command("serve")
@click.option("--host", default="0.0.0.0", show_default=True, help="Address the HTTP server listens on.")
@click.option("--port", type=click.IntRange(0, 65535), help="Port of the HTTP server (default: PORT, 3000).")
def serve_command(host: str, port: int | None) -> None:
    """Run the Slack bot: Events API on /slack/events, or Socket Mode when SLACK_APP_TOKEN is set."""
    settings = load_settings()
    try:
        slack_mode(settings)
        ChannelsFile(settings.channels_path()).load()  # a bad channels file: its line, before anything starts
    except (SlackConfigError, ChannelsFileError) as error:
        fail(str(error), 2)
    if not isinstance(logging.getLevelName(settings.log_level.upper()), int):
        fail(f"LOG_LEVEL={settings.log_level!r} is not a log level: use DEBUG, INFO, WARNING or ERROR", 2)
    configure_logging(settings.log_level, settings.log_format)

    def failed(message: str, code: int) -> NoReturn:
        if settings.log_format == "json":  # a log pipeline reads every line: the last one too
            log.error("error: %s", message)
            sys.exit(code)
        fail(message, code)

    try:
        asyncio.run(serve(settings, host=host, port=port))
    except SlackConfigError as error:
        failed(str(error), 2)
    except _START_ERRORS as error:
        failed(str(error), 1)
    except Stopped as stopped:
        failed(f"{stopped} while starting: what was started is stopped", stopped.exit_code)
    except KeyboardInterrupt:  # Ctrl-C before the loop took the signals
        failed("stopped by SIGINT while starting", 130)
