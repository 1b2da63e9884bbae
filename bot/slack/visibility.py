"""What a private question may see: direct messages and the assistant pane.

The rules, in order (a question asked in a channel never comes here: it sees its channel's documents):

- By default a private question sees only documents visible everywhere. Never a channel-restricted one.
- ``DM_VISIBILITY`` grants more: ``WHO=CHANNEL,CHANNEL;WHO=CHANNEL``, where ``WHO`` is a user id (``U…``,
  ``W…``) or a user group id (``S…``). A user sees the channels of every entry that names them or a group
  they are in (``usergroups.users.list``, cached).
- The assistant pane opened from a channel passes that channel as the thread's context; its documents are
  seen only while the user is a member of it (``conversations.members``, cached for ``MEMBERSHIP_CACHE_S``).
  If Slack cannot say, the user is taken not to be a member: public documents only.

Caches take a clock (``time.monotonic`` by default), so a test moves time instead of waiting for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.dm_visibility import DmVisibility
from bot.slack.errors import SLACK_ERRORS, slack_error

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class _Cached:
    """One list of members per key, from Slack, trusted for ``ttl_s`` on ``clock``."""

    def __init__(self, fetch: Callable[[str], object], ttl_s: float, clock: Clock) -> None:
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: dict[str, tuple[float, frozenset[str]]] = {}

    async def members(self, key: str) -> frozenset[str] | None:
        """The members of ``key``; None when Slack could not say (and nothing fresh is known)."""
        now = self._clock()
        cached = self._entries.get(key)
        if cached is not None and now - cached[0] < self._ttl_s:
            return cached[1]
        try:
            members = await self._fetch(key)  # type: ignore[misc]
        except SLACK_ERRORS as error:
            log.warning("cannot list the members of %s (%s): counting no one as a member", key, slack_error(error))
            return None
        self._entries[key] = (now, members)
        return members


class PrivateVisibility:
    """The channels a private question may see (``sees`` of the answer's Question)."""

    def __init__(self, rules: DmVisibility, client: AsyncWebClient, *, ttl_s: float = 60.0,
                 clock: Clock = time.monotonic) -> None:
        self._rules = rules
        self._client = client
        self._channels = _Cached(self._channel_members, ttl_s, clock)
        self._groups = _Cached(self._group_members, ttl_s, clock)

    async def sees(self, user: str, context_channel: str | None) -> frozenset[str]:
        granted = set(self._rules.users.get(user, frozenset()))
        for group, channels in self._rules.groups.items():
            if not channels <= granted and user in (await self._groups.members(group) or ()):
                granted |= channels
        if context_channel is not None and context_channel not in granted:
            if user in (await self._channels.members(context_channel) or ()):
                granted.add(context_channel)
        return frozenset(granted)

    async def _channel_members(self, channel: str) -> frozenset[str]:
        members: set[str] = set()
        cursor: str | None = None
        while True:
            response = await self._client.conversations_members(channel=channel, limit=1000, cursor=cursor)
            members.update(response.get("members") or ())
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                return frozenset(members)

    async def _group_members(self, group: str) -> frozenset[str]:
        response = await self._client.usergroups_users_list(usergroup=group)
        return frozenset(response.get("users") or ())
