"""A local stand-in for Slack's servers: the Web API, signed Events API deliveries and Socket Mode.

The bot is tested with the real slack-bolt and slack_sdk; only Slack's servers are replaced. So this module
speaks Slack's wire formats, as slack_sdk 3.47 reads them (``slack_sdk/web/async_internal_utils.py``,
``slack_sdk/socket_mode/aiohttp``), and keeps a small in-memory workspace that tests assert on::

    async with SlackStandIn() as slack:
        client = AsyncWebClient(base_url=slack.api_url, token=slack.bot_token)
        app = AsyncApp(client=client, signing_secret=slack.signing_secret)
        ...
        status, body = await slack.deliver_event(f"{bot_url}/slack/events", slack.app_mention("C0SUPPORT", "Refunds?"))
        reply = await slack.wait_for(lambda: slack.thread("C0SUPPORT", question_ts)[1])

Web API (``slack.api_url`` is ``http://127.0.0.1:PORT/api/``, the ``base_url`` of ``AsyncWebClient``):

- ``/api/<method>``, GET or POST; parameters from the query string (slack_sdk sends ``params=`` there even
  on POST), a form body or a JSON body; JSON-encoded ``blocks``/``attachments``/``metadata`` in forms are
  decoded as Slack does. The token comes from ``Authorization: Bearer`` or a ``token`` parameter (not
  from a JSON body: Slack ignores it there).
- Errors as Slack answers them, HTTP 200 with ``{"ok": false, "error": ...}``: no token ``not_authed``;
  a wrong token ``invalid_auth``; an app-level token on a bot method (or the reverse)
  ``not_allowed_token_type``; an unknown method ``unknown_method``.
- Methods: auth.test, chat.postMessage, chat.update, chat.postEphemeral, chat.getPermalink,
  reactions.add/remove (``already_reacted``/``no_reaction``), conversations.replies (oldest first, with
  ``limit``/``cursor``), conversations.history, conversations.info, users.info, usergroups.users.list,
  apps.connections.open (needs the ``xapp-`` token; answers a ``ws://…/socket?ticket=…`` URL).
- chat.postMessage and chat.update check what Slack checks and a bot can get wrong: ``no_text``,
  ``msg_too_long`` (over 40,000 characters), ``invalid_blocks`` (over 50 blocks, a section over 3,000
  characters, a header over 150, more than 10 fields or context elements, a block without ``type``).
  Like Slack, they add a ``block_id`` to blocks that have none.
- ``slack.rate_limit(method, times, retry_after)`` answers the next calls HTTP 429 with ``Retry-After``
  and ``{"ok": false, "error": "ratelimited"}``; ``slack.fail(method, error)`` makes them fail otherwise.
- Every request is recorded: ``slack.calls`` is ``[(method, params), ...]`` in order, rate-limited and
  refused ones included; ``slack.requests`` has the verb, content type, token, status and error too.

Events API over HTTP: ``await slack.deliver_event(url, event_or_envelope, ...)`` POSTs the
``event_callback`` envelope signed like Slack (``X-Slack-Signature``, ``X-Slack-Request-Timestamp``,
optional ``X-Slack-Retry-Num``/``X-Slack-Retry-Reason``), and returns ``(status, body)``.

Socket Mode: apps.connections.open hands out a URL of the ``/socket`` websocket. On connect it sends
``hello``; ``send_envelope`` sends an envelope to the newest connection, the client's acks land in
``slack.acks``; ``redeliver``/``redeliver_unless_acked`` send the same payload again with
``retry_attempt`` + 1 and a new ``envelope_id``, as Slack does; ``request_reconnect`` sends Slack's
``disconnect`` message. Pings are answered with pongs carrying the same data (aiohttp's autoping):
slack_sdk's client pings right after connecting and every ``ping_interval`` seconds, and treats a
connection without pongs for 4 intervals as stale and reconnects.

The workspace behaves like Slack's: delivering an event (either way) first applies it, because in Slack
the message exists before the event about it is sent. A delivered ``app_mention``/``message`` stores the
message (once per ``ts``), ``message_changed`` edits it, ``reaction_added``/``removed`` change its
reactions; channels and users seen in events are created. So the bot can react to a question it was told
about, and ``conversations.replies`` shows the whole thread.

What the SDKs do against it (slack-bolt 1.30, slack_sdk 3.47), pinned by ``tests/standins_tests``:

- ``AsyncWebClient`` retries only connection errors by default; a 429 raises ``SlackApiError`` with
  ``error == "ratelimited"`` unless ``AsyncRateLimitErrorRetryHandler`` is in ``retry_handlers`` (it sleeps
  ``Retry-After`` + up to 1 s of jitter).
- ``chat_postMessage`` with blocks and no ``text`` raises a ``UserWarning`` in slack_sdk itself (an
  error under this project's ``filterwarnings = error``).
- ``AsyncSocketModeHandler`` fetches its URL with ``apps.connections.open`` through the app's client, so
  the client's ``base_url`` decides where Socket Mode connects.
- Bolt's Socket Mode adapter acks only a 200 from the app: an event no listener matches gets a 404 and
  no ack, and Slack redelivers it. Register a listener for every subscribed event.
- Socket Mode envelopes carry ``retry_attempt: 0, retry_reason: ""`` on first delivery, and Bolt turns
  them into ``x-slack-retry-num: ["0"]`` / ``x-slack-retry-reason: [""]``: compare with "0", do not
  just test for the header. Over HTTP the headers are absent on first delivery.
- Bolt drops events whose ``user`` is the bot user or whose ``bot_id`` is the bot's (from auth.test),
  so the echo of the bot's own reply (``own_message_echo``) never reaches a listener.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeVar

import aiohttp
from aiohttp import WSCloseCode, WSMsgType, web

from . import slack_events
from ._common import serve, wait_for

JsonDict = dict[str, Any]
T = TypeVar("T")

BOT_SCOPES = (
    "app_mentions:read,channels:history,channels:read,chat:write,groups:history,groups:read,"
    "reactions:read,reactions:write,usergroups:read,users:read"
)
_JSON_FORM_FIELDS = ("blocks", "attachments", "metadata")
_MAX_TEXT = 40_000
_MAX_BLOCKS = 50
_KNOWN_BLOCK_TYPES = frozenset({
    "actions", "context", "divider", "file", "header", "image", "input", "markdown", "rich_text",
    "section", "video", "table", "context_actions",
})


class ApiCall(NamedTuple):
    """One Web API request as the stand-in saw it: the method and its parameters (token removed)."""

    method: str
    params: JsonDict


@dataclass(frozen=True)
class ApiRequest:
    """One Web API request with its transport details and the answer it got."""

    method: str
    params: JsonDict
    http_verb: str
    content_type: str
    token: str | None
    status: int
    error: str | None


class Delivery(NamedTuple):
    """The bot's answer to one Events API delivery over HTTP."""

    status: int
    body: str


@dataclass
class _Fault:
    remaining: int
    status: int
    error: str
    retry_after: int | None


class _SlackError(Exception):
    """Raised inside a method handler: becomes ``{"ok": false, "error": ..., **extra}``."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


def _ts_key(ts: str) -> tuple[int, int]:
    seconds, _, fraction = ts.partition(".")
    return int(seconds), int(fraction or 0)


def _is_ts(value: object) -> bool:
    if not isinstance(value, str):
        return False
    seconds, dot, fraction = value.partition(".")
    return bool(dot) and seconds.isdigit() and fraction.isdigit()


def _channel_type(channel: str) -> str:
    return {"G": "group", "D": "im"}.get(channel[:1], "channel")


def _as_int(value: object, default: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise _SlackError("invalid_arguments")


class SlackStandIn:
    """Slack's Web API, Events API delivery and Socket Mode, on 127.0.0.1, for one test.

    Use it as ``async with SlackStandIn() as slack:``. The defaults give one workspace with one app whose
    bot user is ``UBOT`` (bot id ``BBOT``); ``bot_token``, ``app_token`` and ``signing_secret`` are the
    credentials to configure the bot with. Everything is in memory and dies with the context.
    """

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-1-standin-bot-token",
        app_token: str = "xapp-1-A0STANDIN-1-standin-app-token",
        signing_secret: str = "standin-signing-secret",
        team_id: str = "T0STANDIN",
        team_name: str = "Stand-in Workspace",
        app_id: str = "A0STANDIN",
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        bot_name: str = "verbatim",
        asker: str = "U0ASKER",
    ) -> None:
        self.bot_token = bot_token
        self.app_token = app_token
        self.signing_secret = signing_secret
        self.team_id = team_id
        self.team_name = team_name
        self.app_id = app_id
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.asker = asker
        """The user id event builders use when a test names no user."""

        self.calls: list[ApiCall] = []
        self.requests: list[ApiRequest] = []
        self.deliveries: list[tuple[JsonDict, Delivery]] = []
        self.envelopes: dict[str, JsonDict] = {}
        """Socket Mode frames sent, by ``envelope_id``, in order."""
        self.acks: list[JsonDict] = []
        """Socket Mode acknowledgements received (``{"envelope_id": …, "payload"?: …}``), in order."""
        self.socket_messages: list[str] = []
        """Text frames from Socket Mode clients that were not acknowledgements."""
        self.socket_connections = 0
        """How many Socket Mode connections have been opened so far (reconnects count)."""

        self._base_url: str | None = None
        self._stack: AsyncExitStack | None = None
        self._last_ts = 0
        self._channels: dict[str, JsonDict] = {}
        self._history: dict[str, dict[str, JsonDict]] = {}
        self._users: dict[str, JsonDict] = {}
        self._usergroups: dict[str, list[str]] = {}
        self._ephemerals: list[JsonDict] = []
        self._faults: dict[str, list[_Fault]] = {}
        self._tickets: set[str] = set()
        self._sockets: list[web.WebSocketResponse] = []
        self._methods: dict[str, tuple[str, Callable[[JsonDict], JsonDict]]] = {
            "auth.test": ("bot", self._auth_test),
            "chat.postMessage": ("bot", self._chat_post_message),
            "chat.update": ("bot", self._chat_update),
            "chat.postEphemeral": ("bot", self._chat_post_ephemeral),
            "chat.getPermalink": ("bot", self._chat_get_permalink),
            "reactions.add": ("bot", self._reactions_add),
            "reactions.remove": ("bot", self._reactions_remove),
            "conversations.replies": ("bot", self._conversations_replies),
            "conversations.history": ("bot", self._conversations_history),
            "conversations.info": ("bot", self._conversations_info),
            "users.info": ("bot", self._users_info),
            "usergroups.users.list": ("bot", self._usergroups_users_list),
            "apps.connections.open": ("app", self._apps_connections_open),
        }
        self.add_user(bot_user_id, name=bot_name, is_bot=True)

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> SlackStandIn:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/socket", self._socket)
        async with AsyncExitStack() as stack:
            self._base_url = await stack.enter_async_context(serve(app))
            stack.push_async_callback(self._close_sockets)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        if self._base_url is None:
            raise RuntimeError("the Slack stand-in is not running: use `async with SlackStandIn() as slack`")
        return self._base_url

    @property
    def api_url(self) -> str:
        """The Web API base URL, ``http://127.0.0.1:PORT/api/``: pass it as ``AsyncWebClient(base_url=...)``."""
        return f"{self.base_url}/api/"

    # ------------------------------------------------------------------ the workspace

    def add_channel(self, channel: str, *, name: str | None = None, is_private: bool | None = None) -> JsonDict:
        """Create (or return) a channel; ids starting with ``G`` are private unless told otherwise."""
        if channel not in self._channels:
            private = channel.startswith("G") if is_private is None else is_private
            channel_name = name or channel.lower()
            self._channels[channel] = {
                "id": channel,
                "name": channel_name,
                "name_normalized": channel_name,
                "is_channel": True,
                "is_group": False,
                "is_im": channel.startswith("D"),
                "is_mpim": False,
                "is_private": private,
                "is_archived": False,
                "is_general": False,
                "is_shared": False,
                "is_ext_shared": False,
                "is_org_shared": False,
                "is_member": True,
                "created": int(time.time()),
                "creator": self.asker,
                "context_team_id": self.team_id,
                "topic": {"value": "", "creator": "", "last_set": 0},
                "purpose": {"value": "", "creator": "", "last_set": 0},
            }
            self._history.setdefault(channel, {})
        return self._channels[channel]

    def add_user(
        self,
        user: str,
        *,
        name: str | None = None,
        real_name: str | None = None,
        is_bot: bool = False,
        email: str | None = None,
    ) -> JsonDict:
        """Create (or return) a user as users.info shows it."""
        if user not in self._users:
            handle = name or user.lower()
            display = real_name or handle
            profile: JsonDict = {"real_name": display, "display_name": handle, "real_name_normalized": display,
                                 "display_name_normalized": handle, "team": self.team_id}
            if email is not None:
                profile["email"] = email
            if is_bot:
                profile["bot_id"] = self.bot_id
            self._users[user] = {
                "id": user,
                "team_id": self.team_id,
                "name": handle,
                "deleted": False,
                "real_name": display,
                "tz": "Europe/London",
                "tz_label": "Greenwich Mean Time",
                "tz_offset": 0,
                "profile": profile,
                "is_admin": False,
                "is_owner": False,
                "is_bot": is_bot,
                "is_app_user": False,
                "updated": int(time.time()),
            }
        return self._users[user]

    def add_usergroup(self, usergroup: str, users: list[str]) -> None:
        """Define a user group (``S…``) and its members, for usergroups.users.list."""
        self._usergroups[usergroup] = list(users)

    def add_message(self, channel: str, message: JsonDict) -> JsonDict:
        """Put a message in a channel's history as if it had been posted (``ts`` and ``type`` are filled in)."""
        self.add_channel(channel)
        stored = copy.deepcopy(message)
        stored.setdefault("type", "message")
        stored.setdefault("ts", self.new_ts())
        if "user" in stored:
            self.add_user(stored["user"])
        self._history[channel][stored["ts"]] = stored
        return copy.deepcopy(stored)

    def messages(self, channel: str) -> list[JsonDict]:
        """Every message in the channel, thread replies included, oldest first (copies)."""
        history = self._history.get(channel, {})
        return [self._render(channel, history[ts]) for ts in sorted(history, key=_ts_key)]

    def thread(self, channel: str, thread_ts: str) -> list[JsonDict]:
        """The thread's parent and its replies, oldest first, as conversations.replies returns them."""
        history = self._history.get(channel, {})
        members = [m for m in history.values() if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts]
        return [self._render(channel, m) for m in sorted(members, key=lambda m: _ts_key(m["ts"]))]

    def message(self, channel: str, ts: str) -> JsonDict:
        """One message; ``KeyError`` if there is none (so ``wait_for`` keeps waiting)."""
        return self._render(channel, self._history.get(channel, {})[ts])

    def bot_messages(self, channel: str) -> list[JsonDict]:
        """The messages the bot posted in the channel, oldest first."""
        return [m for m in self.messages(channel) if m.get("bot_id") == self.bot_id]

    def reactions(self, channel: str, ts: str) -> dict[str, list[str]]:
        """The message's reactions: emoji name -> users who reacted, in order; empty if none or no message."""
        stored = self._history.get(channel, {}).get(ts)
        if stored is None:
            return {}
        return {r["name"]: list(r["users"]) for r in stored.get("reactions", [])}

    def ephemerals(self, channel: str | None = None) -> list[JsonDict]:
        """Ephemeral messages posted with chat.postEphemeral (they are in no channel history)."""
        return [copy.deepcopy(e) for e in self._ephemerals if channel is None or e["channel"] == channel]

    def calls_to(self, method: str) -> list[JsonDict]:
        """The parameters of every call to ``method``, in order."""
        return [call.params for call in self.calls if call.method == method]

    def new_ts(self) -> str:
        """A fresh message timestamp (``"1700000000.000123"``), later than every one handed out before."""
        now = time.time_ns() // 1000
        self._last_ts = max(now, self._last_ts + 1)
        return f"{self._last_ts // 1_000_000}.{self._last_ts % 1_000_000:06d}"

    async def wait_for(
        self, predicate: Callable[[], T | None], *, timeout: float = 10.0, what: str | None = None
    ) -> T:
        """Wait until ``predicate()`` is truthy and return it; ``AssertionError`` after ``timeout`` seconds.

        A bound so a broken test ends with a message, not a timed assertion. ``LookupError`` from the
        predicate means "not yet" (see ``tests.standins._common.wait_for``).
        """
        return await wait_for(predicate, timeout=timeout, what=what)

    # ------------------------------------------------------------------ faults

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` with HTTP 429, ``Retry-After`` and ``ratelimited``."""
        self._faults.setdefault(method, []).append(_Fault(times, 429, "ratelimited", retry_after))

    def fail(self, method: str, error: str, *, times: int = 1, status: int = 200) -> None:
        """Answer the next ``times`` calls of ``method`` with ``{"ok": false, "error": error}`` (HTTP ``status``)."""
        self._faults.setdefault(method, []).append(_Fault(times, status, error, None))

    # ------------------------------------------------------------------ event payloads

    def app_mention(
        self, channel: str, text: str, *, user: str | None = None, thread_ts: str | None = None,
        ts: str | None = None,
    ) -> JsonDict:
        """An ``app_mention`` event; ``<@BOT>`` is put in front of ``text`` unless it already mentions the bot."""
        mention = f"<@{self.bot_user_id}>"
        if mention not in text:
            text = f"{mention} {text}"
        return slack_events.app_mention(channel=channel, user=user or self.asker, text=text, ts=ts or self.new_ts(),
                                        team=self.team_id, thread_ts=thread_ts)

    def user_message(
        self, channel: str, text: str, *, user: str | None = None, thread_ts: str | None = None,
        ts: str | None = None,
    ) -> JsonDict:
        """A person's ``message`` event; in a thread, ``parent_user_id`` comes from the stored parent."""
        parent = self._history.get(channel, {}).get(thread_ts or "")
        return slack_events.user_message(
            channel=channel, user=user or self.asker, text=text, ts=ts or self.new_ts(), team=self.team_id,
            thread_ts=thread_ts, parent_user_id=parent.get("user") if parent else None,
            channel_type=_channel_type(channel),
        )

    def as_message_event(self, mention: JsonDict) -> JsonDict:
        """The ``message`` event Slack sends alongside ``mention`` (same message, same ``ts``)."""
        return slack_events.as_message_event(mention, channel_type=_channel_type(mention["channel"]))

    def own_message_echo(self, channel: str, ts: str) -> JsonDict:
        """The ``message`` event Slack sends the app about a message the bot itself posted."""
        stored = self._history[channel][ts]
        return slack_events.app_bot_message(copy.deepcopy(stored), channel=channel,
                                            channel_type=_channel_type(channel))

    def bot_message(
        self, channel: str, text: str, *, bot_id: str = "B0OTHER", thread_ts: str | None = None
    ) -> JsonDict:
        """A ``bot_message``-subtype event from another integration."""
        return slack_events.bot_message(channel=channel, bot_id=bot_id, text=text, ts=self.new_ts(),
                                        thread_ts=thread_ts, channel_type=_channel_type(channel))

    def message_changed(self, channel: str, ts: str, new_text: str) -> JsonDict:
        """A ``message_changed`` event editing the stored message ``ts`` to ``new_text``."""
        previous = copy.deepcopy(self._history[channel][ts])
        edit_ts = self.new_ts()
        edited = copy.deepcopy(previous)
        edited.update({"text": new_text, "edited": {"user": previous.get("user", ""), "ts": edit_ts}})
        if "blocks" in previous and previous.get("user") != self.bot_user_id:
            edited["blocks"] = slack_events.rich_text_blocks(new_text)
        return slack_events.message_changed(channel=channel, message=edited, previous_message=previous, ts=edit_ts,
                                            channel_type=_channel_type(channel))

    def channel_join(self, channel: str, user: str, *, inviter: str | None = None) -> JsonDict:
        """A ``channel_join`` message event."""
        return slack_events.channel_join(channel=channel, user=user, ts=self.new_ts(), inviter=inviter,
                                         channel_type=_channel_type(channel))

    def reaction_added(self, channel: str, ts: str, reaction: str, *, user: str | None = None) -> JsonDict:
        """A ``reaction_added`` event on message ``ts``; ``item_user`` is the stored message's author."""
        return self._reaction("reaction_added", channel, ts, reaction, user)

    def reaction_removed(self, channel: str, ts: str, reaction: str, *, user: str | None = None) -> JsonDict:
        """A ``reaction_removed`` event on message ``ts``."""
        return self._reaction("reaction_removed", channel, ts, reaction, user)

    def _reaction(
        self, kind: Literal["reaction_added", "reaction_removed"], channel: str, ts: str, reaction: str,
        user: str | None,
    ) -> JsonDict:
        stored = self._history.get(channel, {}).get(ts)
        return slack_events.reaction_event(kind, user=user or self.asker, reaction=reaction, channel=channel, ts=ts,
                                           item_user=stored.get("user") if stored else None,
                                           event_ts=self.new_ts())

    def envelope(self, event: JsonDict, *, event_id: str | None = None) -> JsonDict:
        """The ``event_callback`` envelope for ``event`` in this workspace (a fresh ``event_id`` unless given)."""
        return slack_events.event_callback(event, team_id=self.team_id, api_app_id=self.app_id,
                                           bot_user_id=self.bot_user_id, event_time=int(time.time()),
                                           event_id=event_id)

    def _as_envelope(self, payload: JsonDict) -> JsonDict:
        return payload if payload.get("type") == "event_callback" else self.envelope(payload)

    # ------------------------------------------------------------------ Events API over HTTP

    async def deliver_event(
        self,
        url: str,
        payload: JsonDict,
        *,
        signing_secret: str | None = None,
        retry_num: int | None = None,
        retry_reason: str | None = None,
        timestamp: int | None = None,
        bad_signature: bool = False,
        timeout: float = 10.0,
    ) -> Delivery:
        """POST an event to the bot's Request URL as Slack does; returns ``(status, body)``.

        ``payload`` is an event (wrapped in a fresh envelope) or a whole ``event_callback`` envelope; pass
        the same envelope again with ``retry_num=1, retry_reason="http_timeout"`` to model Slack's retry
        (same ``event_id``). ``timestamp`` (Unix seconds) makes a stale request; ``bad_signature`` signs with
        a wrong secret. The event is applied to the workspace first.
        """
        envelope = self._as_envelope(payload)
        self._apply_event(envelope["event"])
        status, body = await self._post_signed(url, envelope, signing_secret=signing_secret, retry_num=retry_num,
                                               retry_reason=retry_reason, timestamp=timestamp,
                                               bad_signature=bad_signature, timeout=timeout)
        delivery = Delivery(status, body)
        self.deliveries.append((envelope, delivery))
        return delivery

    async def verify_url(
        self, url: str, *, challenge: str | None = None, signing_secret: str | None = None
    ) -> Delivery:
        """Send the ``url_verification`` challenge; a correct endpoint answers 200 with the challenge."""
        payload = slack_events.url_verification(challenge or uuid.uuid4().hex)
        status, body = await self._post_signed(url, payload, signing_secret=signing_secret, retry_num=None,
                                               retry_reason=None, timestamp=None, bad_signature=False, timeout=10.0)
        return Delivery(status, body)

    async def _post_signed(
        self,
        url: str,
        payload: JsonDict,
        *,
        signing_secret: str | None,
        retry_num: int | None,
        retry_reason: str | None,
        timestamp: int | None,
        bad_signature: bool,
        timeout: float,
    ) -> tuple[int, str]:
        body = json.dumps(payload)
        request_ts = str(int(time.time()) if timestamp is None else timestamp)
        secret = signing_secret if signing_secret is not None else self.signing_secret
        if bad_signature:
            secret = f"not-{secret}"
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "X-Slack-Request-Timestamp": request_ts,
            "X-Slack-Signature": slack_events.signature(secret, request_ts, body),
        }
        if retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = retry_reason or "http_timeout"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            async with session.post(url, data=body.encode(), headers=headers) as response:
                return response.status, await response.text()

    # ------------------------------------------------------------------ Socket Mode

    async def wait_socket_connected(self, *, timeout: float = 10.0) -> None:
        """Wait until a Socket Mode client is connected and has been sent ``hello``."""
        await wait_for(lambda: self._open_sockets(), timeout=timeout, what="a Socket Mode connection")

    async def send_envelope(
        self,
        payload_type: str = "events_api",
        payload: JsonDict | None = None,
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
        accepts_response_payload: bool = False,
        envelope_id: str | None = None,
    ) -> str:
        """Send one Socket Mode envelope to the newest connection; returns its ``envelope_id``.

        For ``events_api``, ``payload`` is an event (wrapped in a fresh envelope) or an ``event_callback``
        envelope, and the event is applied to the workspace first. Other types (``interactive``,
        ``slash_commands``) are sent as given, without retry fields, as Slack does.
        """
        if payload is None:
            raise ValueError("send_envelope needs a payload")
        frame: JsonDict = {"envelope_id": envelope_id or str(uuid.uuid4()), "type": payload_type}
        if payload_type == "events_api":
            envelope = self._as_envelope(payload)
            self._apply_event(envelope["event"])
            frame.update({"payload": envelope, "accepts_response_payload": accepts_response_payload,
                          "retry_attempt": retry_attempt, "retry_reason": retry_reason})
        else:
            frame.update({"payload": payload, "accepts_response_payload": accepts_response_payload})
        await self._send_frame(frame)
        self.envelopes[frame["envelope_id"]] = frame
        return str(frame["envelope_id"])

    def ack_for(self, envelope_id: str) -> JsonDict | None:
        """The client's acknowledgement of ``envelope_id``, or ``None``."""
        return next((ack for ack in self.acks if ack.get("envelope_id") == envelope_id), None)

    async def wait_for_ack(self, envelope_id: str, *, timeout: float = 10.0) -> JsonDict:
        """Wait for the acknowledgement of ``envelope_id`` and return it."""
        return await wait_for(lambda: self.ack_for(envelope_id), timeout=timeout, what=f"the ack of {envelope_id}")

    async def redeliver(self, envelope_id: str, *, retry_reason: str = "timeout") -> str:
        """Send the payload of ``envelope_id`` again as Slack's retry: ``retry_attempt`` + 1, a new envelope id."""
        original = self.envelopes[envelope_id]
        return await self.send_envelope(
            original["type"], original["payload"], retry_attempt=int(original.get("retry_attempt", 0)) + 1,
            retry_reason=retry_reason, accepts_response_payload=bool(original.get("accepts_response_payload")),
        )

    async def redeliver_unless_acked(
        self, envelope_id: str, *, ack_timeout: float = 3.0, retry_reason: str = "timeout"
    ) -> str | None:
        """Wait ``ack_timeout`` seconds for the ack, as Slack does; redeliver if none came.

        Returns the new envelope id, or ``None`` when the envelope was acknowledged in time.
        """
        deadline = time.monotonic() + ack_timeout
        while time.monotonic() < deadline:
            if self.ack_for(envelope_id) is not None:
                return None
            await asyncio.sleep(0.01)
        if self.ack_for(envelope_id) is not None:
            return None
        return await self.redeliver(envelope_id, retry_reason=retry_reason)

    async def request_reconnect(self, reason: str = "refresh_requested") -> None:
        """Send Slack's ``disconnect`` message: the client is expected to open a new connection."""
        await self._send_frame({"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-standin"}})

    @property
    def open_sockets(self) -> int:
        """How many Socket Mode connections are open now."""
        return len(self._open_sockets())

    def _open_sockets(self) -> list[web.WebSocketResponse]:
        return [ws for ws in self._sockets if not ws.closed]

    async def _send_frame(self, frame: JsonDict) -> None:
        sockets = self._open_sockets()
        if not sockets:
            raise AssertionError("no Socket Mode client is connected to the Slack stand-in "
                                 "(await slack.wait_socket_connected() first)")
        await sockets[-1].send_str(json.dumps(frame))

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("ticket") not in self._tickets:
            raise web.HTTPUnauthorized(text="invalid or missing ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.socket_connections += 1
        await ws.send_str(json.dumps({
            "type": "hello",
            "num_connections": len(self._open_sockets()) + 1,
            "debug_info": {"host": "applink-standin", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": self.app_id},
        }))
        self._sockets.append(ws)
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_socket_text(message.data)
        finally:
            self._sockets.remove(ws)
        return ws

    def _on_socket_text(self, data: str) -> None:
        try:
            parsed = json.loads(data)
        except json.JSONDecodeError:
            self.socket_messages.append(data)
            return
        if isinstance(parsed, dict) and "envelope_id" in parsed:
            self.acks.append(parsed)
        else:
            self.socket_messages.append(data)

    async def _close_sockets(self) -> None:
        for ws in list(self._sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"stand-in shutting down")

    # ------------------------------------------------------------------ applying delivered events

    def _apply_event(self, event: JsonDict) -> None:
        kind, subtype = event.get("type"), event.get("subtype")
        if kind in ("reaction_added", "reaction_removed"):
            item = event.get("item", {})
            self.add_user(event["user"])
            stored = self._history.get(item.get("channel", ""), {}).get(item.get("ts", ""))
            if stored is not None:
                if kind == "reaction_added":
                    self._add_reaction(stored, event["reaction"], event["user"])
                else:
                    self._remove_reaction(stored, event["reaction"], event["user"])
            return
        if kind not in ("app_mention", "message") or "channel" not in event:
            return
        channel = event["channel"]
        self.add_channel(channel)
        history = self._history[channel]
        if subtype == "message_changed":
            edited = event["message"]
            if edited["ts"] in history:
                history[edited["ts"]].update({k: v for k, v in edited.items() if k in ("text", "blocks", "edited")})
            return
        if subtype == "message_deleted":
            history.pop(event.get("deleted_ts", ""), None)
            return
        if "ts" in event and event["ts"] not in history:
            stored = {k: v for k, v in event.items() if k not in ("channel", "event_ts", "channel_type")}
            stored["type"] = "message"
            if "user" in stored:
                self.add_user(stored["user"])
            history[event["ts"]] = copy.deepcopy(stored)

    # ------------------------------------------------------------------ the HTTP side of the Web API

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params, token, content_type = await self._read_params(request)

        def answer(status: int, body: JsonDict, headers: Mapping[str, str] | None = None) -> web.Response:
            error = None if body.get("ok") else str(body.get("error"))
            self.calls.append(ApiCall(method, copy.deepcopy(params)))
            self.requests.append(ApiRequest(method, copy.deepcopy(params), request.method, content_type, token,
                                            status, error))
            all_headers = {"x-oauth-scopes": BOT_SCOPES, **(headers or {})}
            return web.json_response(body, status=status, headers=all_headers)

        if method not in self._methods:
            return answer(200, {"ok": False, "error": "unknown_method", "req_method": method})
        fault = self._take_fault(method)
        if fault is not None:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            return answer(fault.status, {"ok": False, "error": fault.error}, headers)
        token_kind, handler = self._methods[method]
        auth_error = self._auth_error(token, token_kind)
        if auth_error is not None:
            return answer(200, {"ok": False, "error": auth_error})
        try:
            body = handler(params)
        except _SlackError as error:
            return answer(200, {"ok": False, "error": error.error, **error.extra})
        return answer(200, {"ok": True, **body})

    async def _read_params(self, request: web.Request) -> tuple[JsonDict, str | None, str]:
        params: JsonDict = dict(request.query)
        content_type = request.content_type if request.can_read_body else ""
        json_body = False
        if request.can_read_body:
            if content_type == "application/json":
                body = await request.json()
                if isinstance(body, dict):
                    params.update(body)
                json_body = True
            elif content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
                form = await request.post()
                params.update({k: v for k, v in form.items() if isinstance(v, str)})
        for field in _JSON_FORM_FIELDS:
            if isinstance(params.get(field), str):
                try:
                    params[field] = json.loads(params[field])
                except json.JSONDecodeError:
                    params[field] = {"__invalid_json__": params[field]}
        param_token = params.pop("token", None)
        token: str | None = None
        authorization = request.headers.get("Authorization", "")
        if authorization.startswith("Bearer "):
            token = authorization[len("Bearer "):].strip() or None
        elif isinstance(param_token, str) and not json_body:
            token = param_token
        return params, token, content_type

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method, [])
        while queue and queue[0].remaining <= 0:
            queue.pop(0)
        if not queue:
            return None
        queue[0].remaining -= 1
        return queue[0]

    def _auth_error(self, token: str | None, kind: str) -> str | None:
        if not token:
            return "not_authed"
        expected = self.app_token if kind == "app" else self.bot_token
        if token == expected:
            return None
        if token in (self.app_token, self.bot_token):
            return "not_allowed_token_type"
        return "invalid_auth"

    # ------------------------------------------------------------------ methods

    def _auth_test(self, params: JsonDict) -> JsonDict:
        return {"url": "https://standin.slack.com/", "team": self.team_name, "user": self.bot_name,
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    def _chat_post_message(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params, create=True)
        content = self._message_content(params)
        ts = self.new_ts()
        message: JsonDict = {
            "user": self.bot_user_id,
            "type": "message",
            "ts": ts,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            **content,
            "team": self.team_id,
            "bot_profile": {"id": self.bot_id, "app_id": self.app_id, "name": self.bot_name, "deleted": False,
                            "team_id": self.team_id, "icons": {}, "updated": int(time.time())},
        }
        thread_ts = params.get("thread_ts")
        if thread_ts:
            if not _is_ts(thread_ts):
                raise _SlackError("invalid_thread_ts")
            message["thread_ts"] = thread_ts
            parent = self._history[channel].get(thread_ts)
            if parent is not None and "user" in parent:
                message["parent_user_id"] = parent["user"]
        if isinstance(params.get("metadata"), dict):
            message["metadata"] = params["metadata"]
        self._history[channel][ts] = message
        return {"channel": channel, "ts": ts, "message": copy.deepcopy(message)}

    def _chat_update(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        ts = params.get("ts")
        stored = self._history[channel].get(ts) if isinstance(ts, str) else None
        if stored is None:
            raise _SlackError("message_not_found")
        if stored.get("user") != self.bot_user_id:
            raise _SlackError("cant_update_message")
        content = self._message_content(params)
        for key in ("text", "blocks", "attachments"):
            stored.pop(key, None)
        stored.update(content)
        stored["edited"] = {"user": self.bot_user_id, "ts": self.new_ts()}
        rendered = self._render(channel, stored)
        return {"channel": channel, "ts": ts, "text": stored.get("text", ""), "message": rendered}

    def _chat_post_ephemeral(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params, create=True)
        user = params.get("user")
        if not user:
            raise _SlackError("user_not_found")
        content = self._message_content(params)
        ts = self.new_ts()
        self._ephemerals.append({"channel": channel, "user": user, "ts": ts, "thread_ts": params.get("thread_ts"),
                                 **content})
        return {"message_ts": ts}

    def _chat_get_permalink(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        ts = params.get("message_ts")
        if not isinstance(ts, str) or ts not in self._history[channel]:
            raise _SlackError("message_not_found")
        return {"channel": channel, "permalink": f"https://standin.slack.com/archives/{channel}/p{ts.replace('.', '')}"}

    def _reactions_add(self, params: JsonDict) -> JsonDict:
        stored, name = self._reaction_target(params)
        if not self._add_reaction(stored, name, self.bot_user_id):
            raise _SlackError("already_reacted")
        return {}

    def _reactions_remove(self, params: JsonDict) -> JsonDict:
        stored, name = self._reaction_target(params)
        if not self._remove_reaction(stored, name, self.bot_user_id):
            raise _SlackError("no_reaction")
        return {}

    def _conversations_replies(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        ts = params.get("ts")
        stored = self._history[channel].get(ts) if isinstance(ts, str) else None
        if stored is None:
            raise _SlackError("thread_not_found")
        is_reply = stored.get("thread_ts") not in (None, ts)
        messages = [self._render(channel, stored)] if is_reply else self.thread(channel, str(ts))
        return self._page(messages, params)

    def _conversations_history(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        top_level = [m for m in self.messages(channel) if m.get("thread_ts") in (None, m["ts"])]
        return self._page(list(reversed(top_level)), params)

    def _conversations_info(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        return {"channel": copy.deepcopy(self._channels[channel])}

    def _users_info(self, params: JsonDict) -> JsonDict:
        user = params.get("user")
        if not isinstance(user, str) or user not in self._users:
            raise _SlackError("user_not_found")
        return {"user": copy.deepcopy(self._users[user])}

    def _usergroups_users_list(self, params: JsonDict) -> JsonDict:
        usergroup = params.get("usergroup")
        if not isinstance(usergroup, str) or usergroup not in self._usergroups:
            raise _SlackError("no_such_subteam")
        return {"users": list(self._usergroups[usergroup])}

    def _apps_connections_open(self, params: JsonDict) -> JsonDict:
        ticket = str(uuid.uuid4())
        self._tickets.add(ticket)
        ws_base = self.base_url.replace("http://", "ws://", 1)
        return {"url": f"{ws_base}/socket?ticket={ticket}&app_id={self.app_id}"}

    # ------------------------------------------------------------------ method helpers

    def _channel_param(self, params: JsonDict, *, create: bool = False) -> str:
        channel = params.get("channel")
        if not isinstance(channel, str) or not channel:
            raise _SlackError("channel_not_found")
        if channel not in self._channels:
            if not create:
                raise _SlackError("channel_not_found")
            self.add_channel(channel)
        return channel

    def _message_content(self, params: JsonDict) -> JsonDict:
        content: JsonDict = {}
        text = params.get("text")
        markdown_text = params.get("markdown_text")
        if isinstance(text, str) and text:
            content["text"] = text
        elif isinstance(markdown_text, str) and markdown_text:
            content["text"] = markdown_text
        if "blocks" in params and params["blocks"] not in (None, ""):
            content["blocks"] = self._checked_blocks(params["blocks"])
        if isinstance(params.get("attachments"), list) and params["attachments"]:
            content["attachments"] = params["attachments"]
        if not content:
            raise _SlackError("no_text")
        if len(content.get("text", "")) > _MAX_TEXT:
            raise _SlackError("msg_too_long")
        content.setdefault("text", "")
        return content

    def _checked_blocks(self, blocks: object) -> list[JsonDict]:
        problems: list[str] = []
        if not isinstance(blocks, list):
            problems.append("must provide an array [json-pointer:/blocks]")
            blocks = []
        elif len(blocks) > _MAX_BLOCKS:
            problems.append(f"no more than {_MAX_BLOCKS} items allowed [json-pointer:/blocks]")
        checked: list[JsonDict] = []
        for i, block in enumerate(blocks):
            where = f"/blocks/{i}"
            if not isinstance(block, dict) or block.get("type") not in _KNOWN_BLOCK_TYPES:
                problems.append(f"missing required field: type [json-pointer:{where}]")
                continue
            problems.extend(_block_problems(block, where))
            block = copy.deepcopy(block)
            block.setdefault("block_id", slack_events.random_id("", 5))
            checked.append(block)
        if problems:
            raise _SlackError("invalid_blocks", errors=problems,
                              response_metadata={"messages": [f"[ERROR] {p}" for p in problems]})
        return checked

    def _reaction_target(self, params: JsonDict) -> tuple[JsonDict, str]:
        channel = self._channel_param(params)
        name = params.get("name")
        if not isinstance(name, str) or not name.strip(":"):
            raise _SlackError("invalid_name")
        ts = params.get("timestamp")
        if not ts:
            raise _SlackError("no_item_specified")
        stored = self._history[channel].get(str(ts))
        if stored is None:
            raise _SlackError("message_not_found")
        return stored, name.strip(":")

    @staticmethod
    def _add_reaction(stored: JsonDict, name: str, user: str) -> bool:
        reactions: list[JsonDict] = stored.setdefault("reactions", [])
        entry = next((r for r in reactions if r["name"] == name), None)
        if entry is None:
            reactions.append({"name": name, "users": [user], "count": 1})
            return True
        if user in entry["users"]:
            return False
        entry["users"].append(user)
        entry["count"] = len(entry["users"])
        return True

    @staticmethod
    def _remove_reaction(stored: JsonDict, name: str, user: str) -> bool:
        reactions: list[JsonDict] = stored.get("reactions", [])
        entry = next((r for r in reactions if r["name"] == name), None)
        if entry is None or user not in entry["users"]:
            return False
        entry["users"].remove(user)
        entry["count"] = len(entry["users"])
        if not entry["users"]:
            reactions.remove(entry)
        if not reactions:
            stored.pop("reactions", None)
        return True

    def _page(self, messages: list[JsonDict], params: JsonDict) -> JsonDict:
        limit = _as_int(params.get("limit"), 1000) or 1000
        cursor = params.get("cursor") or ""
        start = 0
        if cursor:
            if not isinstance(cursor, str) or not cursor.startswith("offset:"):
                raise _SlackError("invalid_cursor")
            start = _as_int(cursor[len("offset:"):], 0)
        page = messages[start:start + limit]
        more = start + limit < len(messages)
        return {"messages": page, "has_more": more,
                "response_metadata": {"next_cursor": f"offset:{start + limit}" if more else ""}}

    def _render(self, channel: str, message: JsonDict) -> JsonDict:
        """A stored message as the API shows it: thread parents carry reply counts, as in Slack."""
        rendered = copy.deepcopy(message)
        ts = message["ts"]
        replies = [m for m in self._history.get(channel, {}).values()
                   if m.get("thread_ts") == ts and m["ts"] != ts]
        if replies:
            replies.sort(key=lambda m: _ts_key(m["ts"]))
            users = list(dict.fromkeys(m.get("user", m.get("bot_id", "")) for m in replies))
            rendered.update({"thread_ts": ts, "reply_count": len(replies), "reply_users_count": len(users),
                             "latest_reply": replies[-1]["ts"], "reply_users": users, "is_locked": False,
                             "subscribed": False})
        return rendered


def _block_problems(block: JsonDict, where: str) -> list[str]:
    """Block Kit limits Slack enforces on the blocks a bot is most likely to overfill."""
    problems: list[str] = []
    kind = block["type"]
    block_id = block.get("block_id")
    if isinstance(block_id, str) and len(block_id) > 255:
        problems.append(f"must be less than 256 characters [json-pointer:{where}/block_id]")
    text = block.get("text")
    if kind == "section":
        if isinstance(text, dict) and len(str(text.get("text", ""))) > 3000:
            problems.append(f"must be less than 3001 characters [json-pointer:{where}/text/text]")
        fields = block.get("fields") or []
        if len(fields) > 10:
            problems.append(f"no more than 10 items allowed [json-pointer:{where}/fields]")
        for j, field in enumerate(fields):
            if isinstance(field, dict) and len(str(field.get("text", ""))) > 2000:
                problems.append(f"must be less than 2001 characters [json-pointer:{where}/fields/{j}/text]")
        if text is None and not fields:
            problems.append(f"must provide either text or fields [json-pointer:{where}]")
    elif kind == "header":
        if not isinstance(text, dict) or text.get("type") != "plain_text":
            problems.append(f"must be a plain_text object [json-pointer:{where}/text]")
        elif len(str(text.get("text", ""))) > 150:
            problems.append(f"must be less than 151 characters [json-pointer:{where}/text/text]")
    elif kind == "context":
        elements = block.get("elements") or []
        if not elements:
            problems.append(f"must provide at least 1 item [json-pointer:{where}/elements]")
        if len(elements) > 10:
            problems.append(f"no more than 10 items allowed [json-pointer:{where}/elements]")
    if isinstance(text, dict) and text.get("type") not in ("plain_text", "mrkdwn"):
        problems.append(f"must be one of plain_text, mrkdwn [json-pointer:{where}/text/type]")
    return problems

