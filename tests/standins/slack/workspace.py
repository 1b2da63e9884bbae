"""The stand-in's in-memory workspace: channels, users, messages and reactions, and how a delivered event
changes them (in Slack the message exists before the event about it is sent)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

from .._common import wait_for
from .common import JsonDict, T, _ts_key


class Workspace:
    """Part of ``SlackStandIn`` (its ``__init__`` sets up the state used here)."""

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
        locale: str = "en-US",
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
                "locale": locale,  # shown by users.info only with include_locale
            }
        return self._users[user]

    def add_member(self, channel: str, user: str) -> None:
        """Make ``user`` a member of ``channel`` (conversations.members)."""
        self.add_channel(channel)
        members = self._members.setdefault(channel, [])
        if user not in members:
            members.append(user)

    def remove_member(self, channel: str, user: str) -> None:
        """``user`` left ``channel``."""
        if user in self._members.get(channel, []):
            self._members[channel].remove(user)

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
        if kind == "assistant_thread_started":
            thread = event["assistant_thread"]
            channel, thread_ts = thread["channel_id"], thread["thread_ts"]
            self.add_user(thread["user_id"])
            self.add_channel(channel)
            self._history[channel].setdefault(thread_ts, {
                "type": "message", "subtype": "assistant_app_thread", "user": self.bot_user_id,
                "text": "", "ts": thread_ts, "thread_ts": thread_ts,
                "assistant_app_thread": {"title": "", "title_blocks": [], "artifacts": []}})
            self.assistant_threads.setdefault((channel, thread_ts), {"user": thread["user_id"]})
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
                if not channel.startswith("D"):
                    self.add_member(channel, stored["user"])
            history[event["ts"]] = copy.deepcopy(stored)
