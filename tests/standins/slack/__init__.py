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

The stand-in is one class, ``SlackStandIn``, put together from one part per API family, each in its own
module (the layout of bolt-python's ``tests/mock_web_api_server``): ``web_api`` (the Web API and its faults),
``events_http`` (signed Events API deliveries), ``socket_mode``, ``payloads`` (event payloads with this
workspace's ids) and ``workspace`` (the in-memory workspace and how delivered events change it).

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
  ``limit``/``cursor``), conversations.history, conversations.info, conversations.members (``limit``/``cursor``;
  a channel's members are those added with ``add_member`` and everyone who posted in it), users.info (``locale``
  only with ``include_locale``), usergroups.users.list, apps.connections.open (needs the ``xapp-`` token;
  answers a ``ws://…/socket?ticket=…`` URL), and the assistant pane's assistant.threads.setStatus,
  .setTitle and .setSuggestedPrompts (``channel_id`` + ``thread_ts`` of an assistant thread, else
  ``channel_not_found`` / ``thread_not_found``; what each set is kept in ``slack.assistant_threads``).
- chat.postEphemeral keeps the message out of every history (``slack.ephemerals``) and refuses a user who is not
  a member of the channel (``user_not_in_channel``); ``slack.ephemeral_action`` is a click on one, as Slack
  sends it: the container's ``message_ts`` with ``is_ephemeral``, and no ``message``.
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
optional ``X-Slack-Retry-Num``/``X-Slack-Retry-Reason``), and returns ``(status, body)``. Interactivity:
``deliver_interaction(url, slack.block_action(...))`` POSTs a signed form body ``payload=<JSON>``; over Socket
Mode the same payload goes in an ``interactive`` envelope (``send_envelope("interactive", payload)``).

The assistant pane: ``assistant_thread_started(user=, context_channel=)`` opens a thread in the user's DM
(``dm_channel(user)``, ``D`` + the user id's tail); delivering it stores the thread's root message, as Slack
does (subtype ``assistant_app_thread``, by the bot). ``direct_message(text, thread_ts=)`` is the user's
``message.im`` in the DM or in that thread.

Agent View (``agent_view``): ``app_context_changed(user=, viewing=)`` says the user now views a channel (or
none: ``context`` ``{}``), as an event with ``user`` or, with ``user_in_event=False``, as the envelope of Slack's
reference sample (the user only in ``authorizations``); ``direct_message(text, viewing=)`` stamps the message with
that ``app_context``. Neither changes the workspace.

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
from collections.abc import Callable
from contextlib import AsyncExitStack

from aiohttp import web

from .._common import serve
from .common import ApiCall, ApiRequest, Delivery, JsonDict, _Fault
from .events_http import EventsOverHttp
from .payloads import EventPayloads
from .socket_mode import SocketMode
from .web_api import WebApi
from .workspace import Workspace

__all__ = ["ApiCall", "ApiRequest", "Delivery", "SlackStandIn"]


class SlackStandIn(Workspace, EventPayloads, EventsOverHttp, SocketMode, WebApi):
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
        self._members: dict[str, list[str]] = {}
        self.assistant_threads: dict[tuple[str, str], JsonDict] = {}
        """Assistant threads by (DM channel, thread_ts): ``user``, and the ``status``, ``title`` and
        ``prompts`` (the setSuggestedPrompts parameters) last set in each."""
        self._ephemerals: list[JsonDict] = []
        self._faults: dict[str, list[_Fault]] = {}
        self._stalls: dict[str, list[asyncio.Event]] = {}
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
            "conversations.members": ("bot", self._conversations_members),
            "assistant.threads.setStatus": ("bot", self._assistant_set("status")),
            "assistant.threads.setTitle": ("bot", self._assistant_set("title")),
            "assistant.threads.setSuggestedPrompts": ("bot", self._assistant_set("prompts")),
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
