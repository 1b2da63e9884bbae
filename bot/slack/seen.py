"""Bounded in-process memory: which events and messages this process has taken, which threads it answered.

The exchange log's unique event id is what makes an event answered at most once across restarts and
replicas; this memory is the cheap first check (no database round trip for a retry we are still working on)
and the guard that still holds while the database is down. It forgets the oldest keys past ``capacity``.
"""

from __future__ import annotations

from collections import OrderedDict


class Seen:
    def __init__(self, capacity: int = 10_000) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def add(self, *keys: str) -> None:
        for key in keys:
            self._keys[key] = None
            self._keys.move_to_end(key)
        while len(self._keys) > self._capacity:
            self._keys.popitem(last=False)

    def first_time(self, *keys: str) -> bool:
        """True, and remember every key, when none of ``keys`` was seen; False (remembering nothing new) if one was."""
        present = [k for k in keys if k]
        if any(k in self._keys for k in present):
            return False
        self.add(*present)
        return True

    def forget(self, *keys: str) -> None:
        """Let these keys be taken again (the event's claim went to another instance, which may yet die)."""
        for key in keys:
            self._keys.pop(key, None)
