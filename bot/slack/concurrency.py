"""How answers run side by side: in order within a channel, concurrently across channels.

``ChannelOrder``: a burst of questions in one channel is answered one at a time, earliest message first, so
the replies read in the order the questions were asked. A question takes its place (``reserve``) the moment
its event arrives, before any await, and waits for its turn only when it is ready to answer; a question that
turns out to be a duplicate gives its place back without answering. Channels do not wait for each other.

The answers in flight, which a clean shutdown waits for, are counted by ``bot.in_flight.InFlight`` (shared with
the HTTP API).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


def ts_key(ts: str) -> tuple[int, int]:
    """Slack timestamps ("1700000000.000123") in time order."""
    seconds, _, fraction = ts.partition(".")
    try:
        return int(seconds), int(fraction.ljust(6, "0")[:6] or 0)
    except ValueError:
        return 0, 0


@dataclass(eq=False)
class Ticket:
    """One question's place in its channel's line."""

    channel: str
    key: tuple[tuple[int, int], int]
    order: ChannelOrder
    ready: bool = False
    go: asyncio.Event = field(default_factory=asyncio.Event)

    async def turn(self) -> None:
        """Wait until every earlier question of the channel is answered (or withdrawn)."""
        self.ready = True
        self.order._advance(self.channel)
        await self.go.wait()

    def replied(self) -> None:
        """The reply is posted: the next question may go now (recording this exchange need not hold it back)."""
        self.order._leave(self)


@dataclass
class _Lane:
    tickets: list[Ticket] = field(default_factory=list)  # sorted by key
    running: Ticket | None = None


class ChannelOrder:
    def __init__(self) -> None:
        self._lanes: dict[str, _Lane] = {}
        self._arrivals = itertools.count()

    @contextmanager
    def reserve(self, channel: str, ts: str) -> Iterator[Ticket]:
        """Take a place for the message ``ts`` (synchronously); the place is given back on leaving."""
        lane = self._lanes.setdefault(channel, _Lane())
        ticket = Ticket(channel, (ts_key(ts), next(self._arrivals)), self)
        bisect.insort(lane.tickets, ticket, key=lambda t: t.key)
        try:
            yield ticket
        finally:
            self._leave(ticket)

    def _leave(self, ticket: Ticket) -> None:
        """Give the place back (once: a ticket may leave when replied and again when its block ends)."""
        lane = self._lanes.get(ticket.channel)
        if lane is None or ticket not in lane.tickets:
            return
        lane.tickets.remove(ticket)
        if lane.running is ticket:
            lane.running = None
        if lane.tickets:
            self._advance(ticket.channel)
        else:
            del self._lanes[ticket.channel]

    def waiting(self, channel: str) -> int:
        """How many questions of the channel hold a place (running included)."""
        lane = self._lanes.get(channel)
        return len(lane.tickets) if lane else 0

    def _advance(self, channel: str) -> None:
        lane = self._lanes.get(channel)
        if lane is None or lane.running is not None or not lane.tickets:
            return
        first = lane.tickets[0]
        if first.ready:  # the earliest question is ready: its turn. If it is not, everyone waits for it.
            lane.running = first
            first.go.set()


async def cancel_and_wait(task: asyncio.Task[object]) -> None:
    """Stop a background task (a lease renewal, a sweep, a loop) and wait until it has stopped."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
