"""Event payloads with this workspace's ids and clock (the pure shapes are in ``tests/standins/slack_events.py``)."""

from __future__ import annotations

import copy
import time
from typing import Literal

from .. import slack_events
from .common import JsonDict, _channel_type


class EventPayloads:
    """Part of ``SlackStandIn`` (its ``__init__`` sets up the state used here)."""

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

    def dm_channel(self, user: str | None = None) -> str:
        """The id of the DM between ``user`` and the bot (``D`` + the user id's tail: one per user)."""
        return "D" + (user or self.asker)[1:]

    def direct_message(self, text: str, *, user: str | None = None, thread_ts: str | None = None,
                       viewing: str | None | Literal[False] = False) -> JsonDict:
        """A person's ``message`` in their DM with the bot (``message.im``: ``channel_type`` "im"); under Agent View
        it carries ``app_context``: what they were viewing (a channel id, or None for nothing; False: no context)."""
        message = self.user_message(self.dm_channel(user), text, user=user, thread_ts=thread_ts)
        if viewing is not False:
            message["app_context"] = slack_events.app_context(team=self.team_id, channel=viewing)
        return message

    def app_context_changed(self, *, user: str | None = None, viewing: str | None = None,
                            user_in_event: bool = True) -> JsonDict:
        """Agent View: the user now views ``viewing`` (a channel id; None: no channel). With ``user_in_event``
        False it is the envelope of Slack's reference sample: the user only in ``authorizations``."""
        who = user or self.asker
        event = slack_events.app_context_changed(team=self.team_id, channel=viewing,
                                                 user=who if user_in_event else None)
        if user_in_event:
            return event
        envelope = self.envelope(event)
        envelope["authorizations"] = [{"enterprise_id": None, "team_id": self.team_id, "user_id": who,
                                       "is_bot": False, "is_enterprise_install": False}]
        return envelope

    def assistant_thread_started(self, *, user: str | None = None, context_channel: str | None = None) -> JsonDict:
        """The user opened the assistant pane (from ``context_channel``, if given): a new DM thread."""
        return slack_events.assistant_thread_event(
            "assistant_thread_started", user=user or self.asker, channel=self.dm_channel(user),
            thread_ts=self.new_ts(), event_ts=self.new_ts(), team=self.team_id, context_channel=context_channel)

    def assistant_thread_context_changed(self, thread_ts: str, *, user: str | None = None,
                                         context_channel: str | None = None) -> JsonDict:
        """The user moved to another channel with the pane open."""
        return slack_events.assistant_thread_event(
            "assistant_thread_context_changed", user=user or self.asker, channel=self.dm_channel(user),
            thread_ts=thread_ts, event_ts=self.new_ts(), team=self.team_id, context_channel=context_channel)

    def block_action(self, channel: str, message_ts: str, action_id: str, value: str, *,
                     user: str | None = None) -> JsonDict:
        """A click on the element ``action_id`` of the stored message ``ts``, sending ``value`` (a
        ``feedback_buttons`` click when the message holds one under that id, else a ``button``)."""
        stored = self._render(channel, self._history[channel][message_ts])
        action = _clicked(stored, action_id, value)
        return slack_events.block_actions(user=user or self.asker, team=self.team_id, api_app_id=self.app_id,
                                          channel=channel, message=stored, action=action, action_ts=self.new_ts())

    def ephemeral_action(self, channel: str, message_ts: str, action_id: str, value: str, *,
                         user: str | None = None) -> JsonDict:
        """A click on the element ``action_id`` of the ephemeral message ``message_ts`` (posted with
        chat.postEphemeral), by the user it was shown to unless ``user`` says otherwise."""
        shown = next(e for e in self._ephemerals if e["channel"] == channel and e["ts"] == message_ts)
        action = _clicked(shown, action_id, value)
        return slack_events.ephemeral_block_actions(
            user=user or shown["user"], team=self.team_id, api_app_id=self.app_id, channel=channel,
            message_ts=message_ts, thread_ts=shown.get("thread_ts"), action=action, action_ts=self.new_ts())

    def envelope(self, event: JsonDict, *, event_id: str | None = None) -> JsonDict:
        """The ``event_callback`` envelope for ``event`` in this workspace (a fresh ``event_id`` unless given)."""
        return slack_events.event_callback(event, team_id=self.team_id, api_app_id=self.app_id,
                                           bot_user_id=self.bot_user_id, event_time=int(time.time()),
                                           event_id=event_id)

    def _as_envelope(self, payload: JsonDict) -> JsonDict:
        return payload if payload.get("type") == "event_callback" else self.envelope(payload)


def _clicked(message: JsonDict, action_id: str, value: str) -> JsonDict:
    """The ``action`` of a click on ``message``'s element ``action_id``: its type and block as Slack sends them
    (a ``button`` with its text, unless the element is another kind, e.g. ``feedback_buttons``)."""
    kind, block_id = "button", ""
    for block in message.get("blocks", []):
        for element in block.get("elements", []):
            if isinstance(element, dict) and element.get("action_id") == action_id:
                kind, block_id = element.get("type", "button"), block.get("block_id", "")
    action: JsonDict = {"type": kind, "action_id": action_id, "block_id": block_id, "value": value}
    if kind == "button":
        action["text"] = {"type": "plain_text", "text": value, "emoji": True}
    return action
