"""Slack payloads in, frozen values out: the only place that reads the shape of an event.

Rules of the edge, each applied here so nothing below needs to know Slack's payloads:

- A **question** is an ``app_mention`` by a person, or a ``message`` by a person in a thread (a follow-up;
  whether the bot answered that thread is decided later, from the exchange log). Everything else is not a
  question: other bots, the bot's own messages, edits, deletions, joins and other subtyped messages,
  top-level messages without a mention.
- A mention arrives twice, as ``app_mention`` and as ``message`` (same ``ts``, different event ids). The
  ``message`` copy of any message that mentions the bot is dropped here, so it is answered once, from the
  ``app_mention``.
- The text is cleaned (``text.clean_question``): the bot's mention goes, links and channels become labels.
- A **reaction** is ``reaction_added`` / ``reaction_removed`` on a message; its name loses any skin tone
  (``+1::skin-tone-2`` is ``+1``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.slack.text import clean_question
from retrieval.language import detect_language

# Message subtypes that are still a person saying something new in the conversation.
_SPOKEN_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})


@dataclass(frozen=True, slots=True)
class Mention:
    """A question for the bot: an @mention, or (``mentioned`` False) a message in a thread."""

    event_id: str
    team_id: str | None
    channel: str
    user: str
    ts: str  # the question message
    thread_ts: str | None  # the thread it was posted in; None at the top level of the channel
    text: str  # cleaned: what the person asked, as they read it
    mentioned: bool
    retry: int = 0  # 0: Slack's first delivery
    language: str = "en"  # of the text, detected once when the payload is parsed

    @property
    def reply_thread(self) -> str:
        """Where the reply goes: the question's thread, or a new thread under the question."""
        return self.thread_ts or self.ts

    @property
    def in_thread(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

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


def retry_number(headers: Mapping[str, Sequence[str] | str]) -> int:
    """Slack's delivery attempt: 0 first, then 1, 2 … (HTTP ``X-Slack-Retry-Num``; Socket Mode's
    ``retry_attempt``, which Bolt passes as the same header, "0" on first delivery)."""
    value = headers.get("x-slack-retry-num")
    first = value if isinstance(value, str) else (value[0] if value else None)
    return int(first) if first and first.strip().isdigit() else 0


def parse_mention(body: Mapping[str, Any], bot_user_id: str | None, retry: int = 0) -> Mention | None:
    """The question of an ``app_mention`` event, or None when it is not one a person asked."""
    event = body.get("event") or {}
    if event.get("type") != "app_mention" or not _said_by_a_person(event, bot_user_id):
        return None
    return _mention(body, event, bot_user_id, retry, mentioned=True)


def parse_follow_up(body: Mapping[str, Any], bot_user_id: str | None, retry: int = 0) -> Mention | None:
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
             *, mentioned: bool) -> Mention:
    text = clean_question(str(event.get("text") or ""), bot_user_id)
    return Mention(
        event_id=str(body.get("event_id") or ""), team_id=body.get("team_id") or event.get("team"),
        channel=event["channel"], user=event["user"], ts=event["ts"], thread_ts=event.get("thread_ts"),
        text=text, mentioned=mentioned, retry=retry, language=detect_language(text),
    )


def _event_time(event_ts: object) -> datetime:
    try:
        return datetime.fromtimestamp(float(str(event_ts)), UTC)
    except ValueError:
        return datetime.now(UTC)
