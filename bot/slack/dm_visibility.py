"""``DM_VISIBILITY``, parsed: which channels' documents a private question may also see (``visibility`` applies it).

Kept apart from the Slack client code so that settings can check the value at start-up without importing the
Slack edge (half a second of every command's start-up).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_USER = re.compile(r"[UW][A-Z0-9]{2,}")
_GROUP = re.compile(r"S[A-Z0-9]{2,}")
_CHANNEL = re.compile(r"[CG][A-Z0-9]{2,}")


@dataclass(frozen=True, slots=True)
class DmVisibility:
    """``DM_VISIBILITY`` parsed: channels granted per user id, and per user group id."""

    users: Mapping[str, frozenset[str]]
    groups: Mapping[str, frozenset[str]]

    def __bool__(self) -> bool:
        return bool(self.users or self.groups)


def parse_dm_visibility(value: str) -> DmVisibility:
    """``"U0ANNA=C0LEADS,C0HR;S0LEADS=C0LEADS"`` -> DmVisibility; ``ValueError`` naming the first bad entry.

    >>> parse_dm_visibility("U0ANNA=C0LEADS, C0HR ; S0LEADS=C0LEADS").users["U0ANNA"] == {"C0LEADS", "C0HR"}
    True
    """
    users: dict[str, frozenset[str]] = {}
    groups: dict[str, frozenset[str]] = {}
    for entry in (e.strip() for e in value.split(";")):
        if not entry:
            continue
        who, equals, listed = (part.strip() for part in entry.partition("="))
        channels = frozenset(c.strip() for c in listed.split(",") if c.strip())
        if not equals or not channels or not all(_CHANNEL.fullmatch(c) for c in channels):
            raise ValueError(f"DM_VISIBILITY entry {entry!r} is not WHO=CHANNEL,CHANNEL (channel ids C… or G…)")
        if _USER.fullmatch(who):
            users[who] = users.get(who, frozenset()) | channels
        elif _GROUP.fullmatch(who):
            groups[who] = groups.get(who, frozenset()) | channels
        else:
            raise ValueError(f"DM_VISIBILITY entry {entry!r}: {who!r} is neither a user id (U…, W…) nor a "
                             "user group id (S…)")
    return DmVisibility(users, groups)
