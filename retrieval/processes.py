"""Processes of this host, told apart for good: a pid with its start time (pids are reused), read from /proc.

Who is still alive decides who may take over what a dead process left behind: the home's Weaviate and its
users (``retrieval.embedded_home``), a bot instance's claims (``bot.instance``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def process_start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot: field 22 of ``/proc/<pid>/stat``); None once it is gone.

    Pids are reused, so a pid alone names nobody for long; a pid with its start time names one process for
    good. A zombie (exited, not yet reaped by its parent) counts as gone: it serves nothing. None too where
    /proc cannot tell (none mounted, or the entry is not ours to read).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name (field 2) may hold spaces and parentheses
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def pid_exists(pid: int) -> bool:
    """Whether some process (a zombie too) has ``pid``; asks the kernel (signal 0), so it needs no /proc."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's
        return True
    return True


@dataclass(frozen=True, slots=True)
class ProcessId:
    """One process for good: its pid and its start time."""

    pid: int
    start_time: int

    @classmethod
    def current(cls) -> ProcessId:
        pid = os.getpid()
        start_time = process_start_time(pid)
        assert start_time is not None  # this very process
        return cls(pid, start_time)

    def alive(self) -> bool:
        return process_start_time(self.pid) == self.start_time
