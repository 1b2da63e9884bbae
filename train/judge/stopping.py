"""A training run stopped by SIGINT (Ctrl-C) or SIGTERM (a session's end, a scheduler) finishes the step under
way, writes its checkpoint and exits 130 / 143, so the same command resumes from that step: a stop loses at most
one step, not the hour since the last periodic checkpoint (300 steps are 17 minutes on 2 cores of an AMD EPYC)."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """While entered, SIGINT and SIGTERM only set ``received`` (the first one; a later one says the stop is under
    way); the loop reads it between steps. The handlers in place before are restored on exit."""

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self._before: dict[signal.Signals, Any] = {}

    def __enter__(self) -> StopRequest:
        for signum in STOP_SIGNALS:
            self._before[signum] = signal.signal(signum, self._arrived)
        return self

    def __exit__(self, *_: object) -> None:
        for signum, handler in self._before.items():
            signal.signal(signum, handler)

    def _arrived(self, signum: int, _frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signal.Signals(signum)
            print(f"{self.received.name}: stopping after this step (its checkpoint is written first)", file=sys.stderr,
                  flush=True)
        else:
            print(f"{signal.Signals(signum).name}: already stopping after this step", file=sys.stderr, flush=True)

    @property
    def exit_code(self) -> int:
        assert self.received is not None
        return 128 + int(self.received)  # the shell's convention, as the bot's commands: 130 SIGINT, 143 SIGTERM
