"""Who this running bot is, so a claim it holds can be told apart from a claim left by a dead one.

An instance is named ``host/pid/start`` — the host name, the process id and the process's start time (clock
ticks since boot, from ``/proc/<pid>/stat``), so a pid the kernel reuses later is not mistaken for the old
process. A claim whose owner ran on this host and is no longer running is provably left behind: it may be taken
over at once (a restart on the same machine, or a replica beside a killed one). An owner on another host is
never judged from here; its lease has to run out.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from retrieval.processes import pid_exists, process_start_time


def _start_time(pid: int) -> str | None:
    """The process's start time as an instance names it, or None when /proc has none for it."""
    start_time = process_start_time(pid)
    return None if start_time is None else str(start_time)


@dataclass(frozen=True, slots=True)
class Instance:
    host: str
    pid: int
    start: str

    @classmethod
    def this(cls) -> Instance:
        pid = os.getpid()
        return cls(socket.gethostname(), pid, _start_time(pid) or "?")

    def __str__(self) -> str:
        return f"{self.host}/{self.pid}/{self.start}"

    def owner_gone(self, owner: str) -> bool:
        """True when ``owner`` names a process of this host that is no longer running."""
        host, _, rest = owner.partition("/")
        pid_text, _, start = rest.partition("/")
        if host != self.host or not pid_text.isdigit():
            return False
        pid = int(pid_text)
        if pid == self.pid:
            return start != self.start
        now = _start_time(pid)
        if now is None:
            return not pid_exists(pid)
        return start not in ("?", now)
