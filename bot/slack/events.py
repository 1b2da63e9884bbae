"""Slack payloads in, frozen values out: the only place that reads the shape of an event.

Rules of the edge, each applied here so nothing below needs to know Slack's payloads:

- A **question** is an ``app_mention`` by a person, or a ``message`` by a person in a thread (a follow-up;
  whether the bot answered that thread is decided later, from the exchange log). Everything else is not a
  question: other bots, the bot's own messages, edits, deletions, joins and other subtyped messages,
  top-level messages without a mention — except in a help channel (``parse_channel_message``: a person's
  top-level message mentioning nobody is ``unprompted``; the channel's settings decide whether it is answered).
- A mention arrives twice, as ``app_mention`` and as ``message`` (same ``ts``, different event ids). The
  ``message`` copy of any message that mentions the bot is dropped here, so it is answered once, from the
  ``app_mention``.
- The text is cleaned (``text.clean_question``): the bot's mention goes, links and channels become labels; it
  becomes the answer path's ``Question``, which detects its language once (the edge never detects it).
- A **reaction** is ``reaction_added`` / ``reaction_removed`` on a message; its name loses any skin tone
  (``+1::skin-tone-2`` is ``+1``).
- A **direct message** (``message`` with ``channel_type`` "im") by a person is a question, at the top level or
  in a thread (the assistant pane's threads are DM threads too): every DM is addressed to the bot, so it is
  ``mentioned`` and ``private`` (visibility in private is decided later, ``bot.slack.visibility``).
- An **assistant thread** event (``assistant_thread_started`` / ``assistant_thread_context_changed``) names the
  user, the DM channel and thread, and the channel the pane was opened from, when it was (its context).
- **Agent View** (the ``agent_view`` feature): ``app_context_changed`` says what a user is looking at now,
  ``context.entities`` ordered by relevance, or ``{}`` for nothing; its channel is the first entity of type
  ``slack#/types/channel_id`` naming a channel (C…, G…). The user is the event's ``user``, else the non-bot user of
  its ``authorizations`` (the shape of Slack's reference sample). Slack also stamps that context on ``message.im``
  as ``app_context``: a DM that carries one knows its context itself (``SlackQuestion.context``).
- A **feedback click** is a ``block_actions`` payload whose action is the answer's feedback buttons
  (``FEEDBACK_ACTION``, native ``feedback_buttons`` or the plain button pair), on a message in a channel.
- A **hand-off click** is the same payload on the "Ask a person" button (``HANDOFF_ACTION``): under an answer, or
  in the ephemeral offer a 👎 brings, whose button names the answer it is about in its value
  (``handoff_value``), since the offer is not the answer's message.
- A **share click** is the same payload on **Share in thread** (``SHARE_ACTION``), a button only an ephemeral
  message carries (a private-first channel's answer): Slack sends no ``message`` with it, only the container's
  ``message_ts`` and ``channel_id``, which is all a click is parsed from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from bot.answer.types import Question
from bot.slack.text import clean_question

# A user (the bot included), a user group, or @here / @channel / @everyone: a message addressed to someone.
_MENTIONS = re.compile(r"<@[UWB][A-Z0-9]+|<!subteam\^|<!(here|channel|everyone)")
_TS = re.compile(r"^\d{1,12}\.\d{1,8}$")  # a Slack message timestamp
# Message subtypes that are still a person saying something new in the conversation.
_SPOKEN_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})


@dataclass(frozen=True, slots=True)
class SlackQuestion:
    """A question asked in Slack: an @mention, a DM (``private``, the assistant pane's threads too), or
    (``mentioned`` False) a follow-up in a thread the bot may have answered."""

    event_id: str
    team_id: str | None
    user: str
    ts: str  # the question message
    thread_ts: str | None  # the thread it was posted in; None at the top level of the channel
    asked: Question  # cleaned text (as the person reads it), the channel, the language detected once
    mentioned: bool
    retry: int = 0  # 0: Slack's first delivery
    private: bool = False  # asked in a direct message (or the assistant pane, a DM thread)
    unprompted: bool = False  # a top-level message in a channel, not addressed to the bot (help channels)
    # Agent View: the channel the asker was viewing, from the DM's own ``app_context``; ``context_sent`` False:
    # the message carried none (the assistant pane, or an app not subscribed to app_context_changed).
    context: str | None = None
    context_sent: bool = False

    @property
    def channel(self) -> str:
        assert self.asked.channel is not None
        return self.asked.channel

    @property
    def text(self) -> str:
        return self.asked.text

    @property
    def language(self) -> str:
        return self.asked.language

    @property
    def reply_thread(self) -> str:
        """Where the reply goes: the question's thread, or a new thread under the question."""
        return self.thread_ts or self.ts

    @property
    def in_thread(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

    @property
    def in_assistant_thread(self) -> bool:
        """A DM thread: where Slack's assistant pane shows a status line and a title (when the app has them)."""
        return self.private and self.in_thread

    @property
    def message_key(self) -> str:
        """The message itself (whichever event carried it)."""
        return f"{self.channel}:{self.ts}"


@dataclass(frozen=True, slots=True)
class Reaction:
    """Someone added (or took back) an emoji reaction on a message."""

    event_id: str
    team_id: str | None
    added: bool
    user: str
    name: str  # without colons or skin tone
    channel: str
    message_ts: str
    item_user: str | None  # the author of the message reacted to, when Slack says
    at: datetime
    retry: int = 0


@dataclass(frozen=True, slots=True)
class AssistantThread:
    """The assistant pane: a thread started (or its context changed) in the DM between a user and the bot."""

    event_id: str
    team_id: str | None
    started: bool  # assistant_thread_started; False: assistant_thread_context_changed
    user: str
    channel: str  # the DM
    thread_ts: str
    context_channel: str | None  # the channel the user was looking at when they opened the pane, if any


@dataclass(frozen=True, slots=True)
class AppContext:
    """Agent View: what a user is looking at changed (``app_context_changed``)."""

    event_id: str
    team_id: str | None
    user: str
    channel: str | None  # the most relevant channel in view (C…, G…); None: no channel (a DM, a canvas, nothing)


CHANNEL_ENTITY = "slack#/types/channel_id"
_CONTEXT_CHANNEL = re.compile(r"^[CG][A-Z0-9]{2,}$")


FEEDBACK_ACTION = "verbatim_feedback"  # action_id of the feedback buttons (of the plain pair: + "_positive" …)
POSITIVE, NEGATIVE = "positive", "negative"  # their values


@dataclass(frozen=True, slots=True)
class FeedbackClick:
    """The asker (or anyone who sees the answer) clicked 👍 or 👎 under one of the bot's answers."""

    team_id: str | None
    user: str
    channel: str
    message_ts: str  # the answer
    positive: bool
    at: datetime


HANDOFF_ACTION, HANDOFF_VALUE = "verbatim_handoff", "ask_person"  # the "Ask a person" button
# In a DM, the second button (its own action id: ids are unique in a message): the asker agreed to send the text.
HANDOFF_WITH_QUESTION = "ask_person_with_question"


def handoff_value(reply_ts: str | None = None) -> str:
    """The button's value: plain under an answer; naming the answer's ts where the button is elsewhere (the offer
    after a 👎). A forged ts can only name another of the bot's replies in the same channel, which anyone there
    can hand off anyway."""
    return HANDOFF_VALUE if reply_ts is None else f"{HANDOFF_VALUE}:{reply_ts}"


@dataclass(frozen=True, slots=True)
class HandoffClick:
    """Someone clicked "Ask a person" under one of the bot's replies in a channel."""

    team_id: str | None
    user: str
    channel: str
    message_ts: str  # the bot's reply the button is on
    at: datetime
    with_question: bool = False  # in a DM: the asker agreed that the question's text goes with the hand-off


SHARE_ACTION, SHARE_VALUE = "verbatim_share", "share"  # "Share in thread", under a private-first answer


@dataclass(frozen=True, slots=True)
class ShareClick:
    """The asker clicked "Share in thread" under the answer only they were shown."""

    team_id: str | None
    user: str
    channel: str
    message_ts: str  # the ephemeral answer the button is on
    at: datetime


def retry_number(headers: Mapping[str, Sequence[str] | str]) -> int:
    """Slack's delivery attempt: 0 first, then 1, 2 … (HTTP ``X-Slack-Retry-Num``; Socket Mode's
    ``retry_attempt``, which Bolt passes as the same header, "0" on first delivery)."""
    value = headers.get("x-slack-retry-num")
    first = value if isinstance(value, str) else (value[0] if value else None)
    return int(first) if first and first.strip().isdigit() else 0


def parse_mention(body: Mapping[str, Any], bot_user_id: str | None, retry: int = 0) -> SlackQuestion | None:
    """The question of an ``app_mention`` event, or None when it is not one a person asked."""
    event = body.get("event") or {}
    if event.get("type") != "app_mention" or not _said_by_a_person(event, bot_user_id):
        return None
    return _mention(body, event, bot_user_id, retry, mentioned=True)


def parse_follow_up(body: Mapping[str, Any], bot_user_id: str | None, retry: int = 0) -> SlackQuestion | None:
    """A person's message in a thread, not mentioning the bot (its ``app_mention`` copy is the one answered)."""
    event = body.get("event") or {}
    if event.get("type") != "message" or not _said_by_a_person(event, bot_user_id):
        return None
    thread_ts, ts = event.get("thread_ts"), event.get("ts")
    if not thread_ts or thread_ts == ts:
        return None
    if bot_user_id and f"<@{bot_user_id}" in str(event.get("text") or ""):
        return None
    mention = _mention(body, event, bot_user_id, retry, mentioned=False)
    return mention if mention.text else None


def parse_direct_message(body: Mapping[str, Any], bot_user_id: str | None, retry: int = 0) -> SlackQuestion | None:
    """A person's message in a DM with the bot (top level or in a thread): a question, mention or not."""
    event = body.get("event") or {}
    if (event.get("type") != "message" or event.get("channel_type") != "im"
            or not _said_by_a_person(event, bot_user_id)):
        return None
    mention = _mention(body, event, bot_user_id, retry, mentioned=True, private=True)
    if "app_context" in event:  # Agent View: the context rides on the message
        mention = replace(mention, context=context_channel(event.get("app_context")), context_sent=True)
    return mention if mention.text else None


def parse_channel_message(body: Mapping[str, Any], bot_user_id: str | None, retry: int = 0) -> SlackQuestion | None:
    """A person's top-level message in a channel that mentions nobody (not the bot: its ``app_mention`` copy is
    the one answered; not a person: it is addressed to them). Whether it is a question for the bot is decided
    by the channel's settings (``bot.slack.help_channels``)."""
    event = body.get("event") or {}
    if (event.get("type") != "message" or event.get("channel_type") not in ("channel", "group")
            or not _said_by_a_person(event, bot_user_id)):
        return None
    if event.get("thread_ts") not in (None, event.get("ts")) or _MENTIONS.search(str(event.get("text") or "")):
        return None
    mention = _mention(body, event, bot_user_id, retry, mentioned=False, unprompted=True)
    return mention if mention.text else None


def parse_message(body: Mapping[str, Any], bot_user_id: str | None, retry: int = 0) -> SlackQuestion | None:
    """The question a ``message`` event holds: a DM, a follow-up in a channel's thread, or a top-level message
    in a channel (for help channels); None otherwise."""
    if (body.get("event") or {}).get("channel_type") == "im":
        return parse_direct_message(body, bot_user_id, retry)
    return parse_follow_up(body, bot_user_id, retry) or parse_channel_message(body, bot_user_id, retry)


def parse_assistant_thread(body: Mapping[str, Any]) -> AssistantThread | None:
    event = body.get("event") or {}
    kind = event.get("type")
    thread = event.get("assistant_thread") or {}
    if kind not in ("assistant_thread_started", "assistant_thread_context_changed") or not isinstance(thread, dict):
        return None
    user, channel, thread_ts = thread.get("user_id"), thread.get("channel_id"), thread.get("thread_ts")
    if not (isinstance(user, str) and isinstance(channel, str) and isinstance(thread_ts, str)):
        return None
    context = (thread.get("context") or {}).get("channel_id")
    return AssistantThread(
        event_id=str(body.get("event_id") or ""), team_id=body.get("team_id"),
        started=kind == "assistant_thread_started", user=user, channel=channel, thread_ts=thread_ts,
        context_channel=context if isinstance(context, str) and context else None,
    )


def parse_app_context(body: Mapping[str, Any]) -> AppContext | None:
    """The user and channel of an ``app_context_changed`` event; None when it names no user."""
    event = body.get("event") or {}
    if event.get("type") != "app_context_changed":
        return None
    user = event.get("user")
    if not isinstance(user, str) or not user:
        people = [a.get("user_id") for a in body.get("authorizations") or ()
                  if isinstance(a, dict) and a.get("is_bot") is False and isinstance(a.get("user_id"), str)]
        user = people[0] if people else None
    if user is None:
        return None
    return AppContext(event_id=str(body.get("event_id") or ""), team_id=body.get("team_id"), user=user,
                      channel=context_channel(event.get("context")))


def context_channel(context: object) -> str | None:
    """The first (most relevant) channel among an Agent View context's entities; None when there is none.

    >>> context_channel({"entities": [{"type": "slack#/types/canvas_id", "value": "F1"},
    ...                               {"type": "slack#/types/channel_id", "value": "C0HELP"}]})
    'C0HELP'
    >>> context_channel({}) is None
    True
    """
    entities = context.get("entities") if isinstance(context, dict) else None
    for entity in entities if isinstance(entities, list) else ():
        if isinstance(entity, dict) and entity.get("type") == CHANNEL_ENTITY:
            value = entity.get("value")
            if isinstance(value, str) and _CONTEXT_CHANNEL.match(value):
                return value
    return None


def parse_feedback(body: Mapping[str, Any]) -> FeedbackClick | None:
    """The click of a ``block_actions`` payload on the feedback buttons, or None."""
    clicked = _click(body, FEEDBACK_ACTION, lambda value: value in (POSITIVE, NEGATIVE))
    if clicked is None:
        return None
    action, team, user, channel, message_ts = clicked
    return FeedbackClick(team_id=team, user=user, channel=channel, message_ts=message_ts,
                         positive=action["value"] == POSITIVE, at=_event_time(action.get("action_ts")))


def parse_handoff(body: Mapping[str, Any]) -> HandoffClick | None:
    """The click of a ``block_actions`` payload on the "Ask a person" button, or None."""
    clicked = _click(body, HANDOFF_ACTION, lambda value: value in (HANDOFF_VALUE, HANDOFF_WITH_QUESTION)
                     or (value.startswith(f"{HANDOFF_VALUE}:") and _TS.match(value[len(HANDOFF_VALUE) + 1:]) is not None))
    if clicked is None:
        return None
    action, team, user, channel, message_ts = clicked
    _, _, named = str(action["value"]).partition(":")
    return HandoffClick(team_id=team, user=user, channel=channel, message_ts=named or message_ts,
                        at=_event_time(action.get("action_ts")),
                        with_question=action["value"] == HANDOFF_WITH_QUESTION)


def parse_share(body: Mapping[str, Any]) -> ShareClick | None:
    """The click of a ``block_actions`` payload on "Share in thread", or None."""
    clicked = _click(body, SHARE_ACTION, lambda value: value == SHARE_VALUE)
    if clicked is None:
        return None
    action, team, user, channel, message_ts = clicked
    return ShareClick(team_id=team, user=user, channel=channel, message_ts=message_ts,
                      at=_event_time(action.get("action_ts")))


def _click(body: Mapping[str, Any], action_id: str,
           accept: Callable[[str], bool]) -> tuple[Mapping[str, Any], str | None, str, str, str] | None:
    """(the action, team, user, channel, message ts) of a click on ``action_id`` (or one it starts) with a value
    ``accept`` takes, on a message in a channel; None for anything else."""
    if body.get("type") != "block_actions":
        return None
    action = next((a for a in body.get("actions") or () if isinstance(a, dict)
                   and str(a.get("action_id") or "").startswith(action_id)), None)
    user = (body.get("user") or {}).get("id")
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
    message_ts = (body.get("container") or {}).get("message_ts") or (body.get("message") or {}).get("ts")
    if action is None or not isinstance(action.get("value"), str) or not accept(action["value"]):
        return None
    if not (isinstance(user, str) and isinstance(channel, str) and isinstance(message_ts, str)):
        return None
    team = (body.get("team") or {}).get("id")
    return action, team if isinstance(team, str) else None, user, channel, message_ts


def parse_reaction(body: Mapping[str, Any], retry: int = 0) -> Reaction | None:
    event = body.get("event") or {}
    item = event.get("item") or {}
    kind = event.get("type")
    if kind not in ("reaction_added", "reaction_removed") or item.get("type") != "message":
        return None
    user, name, channel, ts = event.get("user"), event.get("reaction"), item.get("channel"), item.get("ts")
    if not (isinstance(user, str) and isinstance(name, str) and isinstance(channel, str) and isinstance(ts, str)):
        return None
    return Reaction(
        event_id=str(body.get("event_id") or ""), team_id=body.get("team_id"), added=kind == "reaction_added",
        user=user, name=name.strip(":").split("::")[0], channel=channel, message_ts=ts,
        item_user=event.get("item_user"), at=_event_time(event.get("event_ts")), retry=retry,
    )


def _said_by_a_person(event: Mapping[str, Any], bot_user_id: str | None) -> bool:
    user = event.get("user")
    return (
        isinstance(user, str) and user != bot_user_id
        and not event.get("bot_id") and not event.get("hidden") and "edited" not in event
        and event.get("subtype") in _SPOKEN_SUBTYPES
        and isinstance(event.get("channel"), str) and isinstance(event.get("ts"), str)
    )


def _mention(body: Mapping[str, Any], event: Mapping[str, Any], bot_user_id: str | None, retry: int,
             *, mentioned: bool, private: bool = False, unprompted: bool = False) -> SlackQuestion:
    text = clean_question(str(event.get("text") or ""), bot_user_id)
    return SlackQuestion(
        event_id=str(body.get("event_id") or ""), team_id=body.get("team_id") or event.get("team"),
        user=event["user"], ts=event["ts"], thread_ts=event.get("thread_ts"),
        asked=Question(text, channel=event["channel"]), mentioned=mentioned, retry=retry, private=private,
        unprompted=unprompted,
    )


def _event_time(event_ts: object) -> datetime:
    try:
        return datetime.fromtimestamp(float(str(event_ts)), UTC)
    except (ValueError, OverflowError):
        return datetime.now(UTC)
