"""Slack Events API payloads, shaped like the ones Slack sends, and the request signature.

Pure functions: no I/O, no clock of their own (timestamps are arguments). ``SlackStandIn`` wraps them with
its workspace's ids and clock, so most tests call ``slack.app_mention(...)`` rather than these directly.

Shapes follow Slack's reference pages (docs.slack.dev/reference/events/app_mention, .../message,
.../message/message_changed, .../message/channel_join, .../message/bot_message, .../reaction_added) and
the envelopes Slack actually delivers (``event_callback`` with ``authorizations``, ``event_context``).

Two facts about real deliveries that tests of the bot rely on:

- An @mention in a channel the bot is in arrives twice, as ``app_mention`` and as ``message``, with the
  same ``ts`` but different ``event_id``s. ``as_message_event`` turns the one into the other.
- The bot's own posts come back as ``message`` events carrying ``bot_id`` (and ``user`` = the bot user),
  without a subtype; the legacy ``bot_message`` subtype is for integrations that are not the app.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
import uuid
from typing import Any, Literal

JsonDict = dict[str, Any]

_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_ID_ALPHABET = string.ascii_uppercase + string.digits


def random_id(prefix: str, length: int = 10) -> str:
    """A Slack-style id (``Ev0AB12CD34``, ``C0…``): a prefix and upper-case letters and digits."""
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(length))


def rich_text_blocks(text: str) -> list[JsonDict]:
    """The ``rich_text`` block Slack's clients attach to a typed message, mentions as ``user`` elements."""
    elements: list[JsonDict] = []
    position = 0
    for match in _MENTION.finditer(text):
        if match.start() > position:
            elements.append({"type": "text", "text": text[position:match.start()]})
        elements.append({"type": "user", "user_id": match.group(1)})
        position = match.end()
    if position < len(text):
        elements.append({"type": "text", "text": text[position:]})
    return [{
        "type": "rich_text",
        "block_id": random_id("", 5),
        "elements": [{"type": "rich_text_section", "elements": elements}],
    }]


def user_message(
    *,
    channel: str,
    user: str,
    text: str,
    ts: str,
    team: str,
    thread_ts: str | None = None,
    parent_user_id: str | None = None,
    channel_type: str = "channel",
) -> JsonDict:
    """A ``message`` event for a person's message (``message.channels`` / ``message.groups``)."""
    event: JsonDict = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": ts,
        "client_msg_id": str(uuid.uuid4()),
        "team": team,
        "blocks": rich_text_blocks(text),
        "channel": channel,
        "event_ts": ts,
        "channel_type": channel_type,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
        if parent_user_id is not None:
            event["parent_user_id"] = parent_user_id
    return event


def app_mention(
    *,
    channel: str,
    user: str,
    text: str,
    ts: str,
    team: str,
    thread_ts: str | None = None,
) -> JsonDict:
    """An ``app_mention`` event: a person's message that mentions the app's bot user."""
    event: JsonDict = {
        "type": "app_mention",
        "user": user,
        "text": text,
        "ts": ts,
        "client_msg_id": str(uuid.uuid4()),
        "team": team,
        "blocks": rich_text_blocks(text),
        "channel": channel,
        "event_ts": ts,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def as_message_event(mention: JsonDict, *, channel_type: str = "channel") -> JsonDict:
    """The ``message`` event Slack sends alongside an ``app_mention`` for the same message."""
    event = dict(mention)
    event["type"] = "message"
    event["channel_type"] = channel_type
    return event


def app_bot_message(message: JsonDict, *, channel: str, channel_type: str = "channel") -> JsonDict:
    """The ``message`` event for a message the app itself posted (its echo), from the stored message."""
    event = {k: v for k, v in message.items() if k not in ("reactions", "reply_count", "reply_users",
                                                           "reply_users_count", "latest_reply")}
    event.update({"type": "message", "channel": channel, "event_ts": message["ts"], "channel_type": channel_type})
    return event


def bot_message(
    *,
    channel: str,
    bot_id: str,
    text: str,
    ts: str,
    username: str = "legacy-integration",
    thread_ts: str | None = None,
    channel_type: str = "channel",
) -> JsonDict:
    """A ``message`` event with subtype ``bot_message``: posted by an integration, not by a person."""
    event: JsonDict = {
        "type": "message",
        "subtype": "bot_message",
        "text": text,
        "ts": ts,
        "username": username,
        "bot_id": bot_id,
        "channel": channel,
        "event_ts": ts,
        "channel_type": channel_type,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def message_changed(
    *,
    channel: str,
    message: JsonDict,
    previous_message: JsonDict,
    ts: str,
    channel_type: str = "channel",
) -> JsonDict:
    """A ``message_changed`` event: ``message`` is the edited message (with ``edited``), ``ts`` the edit's."""
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "message": message,
        "previous_message": previous_message,
        "channel": channel,
        "ts": ts,
        "event_ts": ts,
        "channel_type": channel_type,
    }


def channel_join(
    *,
    channel: str,
    user: str,
    ts: str,
    inviter: str | None = None,
    channel_type: str = "channel",
) -> JsonDict:
    """A ``channel_join`` message event: someone joined (or was added to) the channel."""
    event: JsonDict = {
        "type": "message",
        "subtype": "channel_join",
        "ts": ts,
        "user": user,
        "text": f"<@{user}> has joined the channel",
        "channel": channel,
        "event_ts": ts,
        "channel_type": channel_type,
    }
    if inviter is not None:
        event["inviter"] = inviter
    return event


def reaction_event(
    kind: Literal["reaction_added", "reaction_removed"],
    *,
    user: str,
    reaction: str,
    channel: str,
    ts: str,
    item_user: str | None,
    event_ts: str,
) -> JsonDict:
    """A ``reaction_added`` / ``reaction_removed`` event on a message.

    ``item_user`` is the author of the reacted-to message; Slack leaves it out when the message has no
    user author (webhooks), so ``None`` omits it.
    """
    event: JsonDict = {
        "type": kind,
        "user": user,
        "reaction": reaction,
        "item": {"type": "message", "channel": channel, "ts": ts},
        "event_ts": event_ts,
    }
    if item_user is not None:
        event["item_user"] = item_user
    return event


def event_callback(
    event: JsonDict,
    *,
    team_id: str,
    api_app_id: str,
    bot_user_id: str,
    event_time: int,
    event_id: str | None = None,
    verification_token: str = "standin-verification-token",
) -> JsonDict:
    """The ``event_callback`` envelope around ``event``, as delivered over HTTP or inside a Socket Mode frame."""
    channel = event.get("channel") or event.get("item", {}).get("channel") or ""
    return {
        "token": verification_token,
        "team_id": team_id,
        "context_team_id": team_id,
        "context_enterprise_id": None,
        "api_app_id": api_app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or random_id("Ev"),
        "event_time": event_time,
        "authorizations": [{
            "enterprise_id": None,
            "team_id": team_id,
            "user_id": bot_user_id,
            "is_bot": True,
            "is_enterprise_install": False,
        }],
        "is_ext_shared_channel": False,
        "event_context": f"4-{event.get('type', 'event')}-{team_id}-{channel}",
    }


def url_verification(challenge: str, *, verification_token: str = "standin-verification-token") -> JsonDict:
    """The ``url_verification`` request Slack sends when a Request URL is saved in the app settings."""
    return {"token": verification_token, "challenge": challenge, "type": "url_verification"}


def signature(signing_secret: str, timestamp: str, body: str) -> str:
    """``X-Slack-Signature``: ``v0=`` and the hex HMAC-SHA256 of ``v0:{timestamp}:{body}``."""
    digest = hmac.new(signing_secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return f"v0={digest}"


def assistant_thread_event(
    kind: Literal["assistant_thread_started", "assistant_thread_context_changed"],
    *,
    user: str,
    channel: str,
    thread_ts: str,
    event_ts: str,
    team: str,
    context_channel: str | None = None,
) -> JsonDict:
    """``assistant_thread_started`` / ``assistant_thread_context_changed`` (docs.slack.dev/reference/events/…):
    the DM thread of the assistant pane; ``context`` names the channel the user was viewing, when there was one."""
    context: JsonDict = {"team_id": team, "enterprise_id": None}
    if context_channel is not None:
        context["channel_id"] = context_channel
    return {
        "type": kind,
        "assistant_thread": {"user_id": user, "context": context, "channel_id": channel, "thread_ts": thread_ts},
        "event_ts": event_ts,
    }


def app_context(*, team: str, channel: str | None) -> JsonDict:
    """Agent View's context (docs.slack.dev/reference/events/app_context_changed): the entities the user is viewing,
    most relevant first, or ``{}`` when there are none. A channel comes after the canvas open beside it."""
    if channel is None:
        return {}
    return {"entities": [{"type": "slack#/types/canvas_id", "value": "F0CANVAS", "team_id": team},
                         {"type": "slack#/types/channel_id", "value": channel, "team_id": team}]}


def app_context_changed(*, team: str, channel: str | None, user: str | None) -> JsonDict:
    """``app_context_changed``, sent only to apps with the ``agent_view`` feature; Slack's reference sample names the
    user in the envelope's ``authorizations`` only (``user`` None here), other payloads seen carry ``user``."""
    event: JsonDict = {"type": "app_context_changed", "context": app_context(team=team, channel=channel)}
    if user is not None:
        event["user"] = user
    return event


def block_actions(
    *,
    user: str,
    team: str,
    api_app_id: str,
    channel: str,
    message: JsonDict,
    action: JsonDict,
    action_ts: str,
) -> JsonDict:
    """The ``block_actions`` interactivity payload for a click on ``action`` in a message (HTTP: the form field
    ``payload``; Socket Mode: an ``interactive`` envelope's payload)."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": api_app_id,
        "token": "standin-verification-token",
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False,
                      **({"thread_ts": message["thread_ts"]} if "thread_ts" in message else {})},
        "trigger_id": f"{action_ts.replace('.', '')}.{random_id('', 8).lower()}",
        "team": {"id": team, "domain": "standin"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": channel.lower()},
        "message": message,
        "state": {"values": {}},
        "response_url": f"https://hooks.slack.com/actions/{team}/{random_id('', 12)}",
        "actions": [{**action, "action_ts": action_ts}],
    }


def ephemeral_block_actions(
    *,
    user: str,
    team: str,
    api_app_id: str,
    channel: str,
    message_ts: str,
    thread_ts: str | None,
    action: JsonDict,
    action_ts: str,
) -> JsonDict:
    """The ``block_actions`` payload for a click in an ephemeral message (``chat.postEphemeral``): Slack keeps no
    copy of such a message, so the payload carries no ``message``, only the container with ``is_ephemeral``."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": api_app_id,
        "token": "standin-verification-token",
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": True,
                      **({"thread_ts": thread_ts} if thread_ts else {})},
        "trigger_id": f"{action_ts.replace('.', '')}.{random_id('', 8).lower()}",
        "team": {"id": team, "domain": "standin"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": channel.lower()},
        "state": {"values": {}},
        "response_url": f"https://hooks.slack.com/actions/{team}/{random_id('', 12)}",
        "actions": [{**action, "action_ts": action_ts}],
    }
