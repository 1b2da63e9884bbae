"""How long a source's rate limit may make one pull wait: each 429's ``Retry-After`` honoured, up to the source's
``max_wait_s`` in all, then ``SourceFailed`` (one line, naming the service). Shared by the HTTP connectors.

    max_wait_s(spec) -> float        the setting, checked (SourcesError naming the source when wrong)
    Patience(budget_s, service)      .wait(retry_after) sleeps, or raises SourceFailed past the budget
"""

from __future__ import annotations

import asyncio
import math

from retrieval.connectors import SourceFailed
from retrieval.sources import SourceSpec

DEFAULT_MAX_WAIT_S = 120.0


def max_wait_s(spec: SourceSpec) -> float:
    wait = spec.settings.get("max_wait_s", DEFAULT_MAX_WAIT_S)
    if isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0:
        raise spec.problem("max_wait_s must be a number of seconds, 0 or more")
    return float(wait)


class Patience:
    """The time 429s may still make one pull wait, spent as each Retry-After asks."""

    def __init__(self, budget_s: float, service: str) -> None:
        self.left = budget_s
        self.service = service

    async def wait(self, retry_after: str | None) -> None:
        try:
            seconds = max(0.0, float(retry_after)) if retry_after is not None else 1.0
        except ValueError:  # an HTTP date, or garbage: wait a little and ask again
            seconds = 1.0
        if not math.isfinite(seconds) or seconds > self.left:
            raise SourceFailed(f"{self.service} is rate limiting (HTTP 429, Retry-After {retry_after or 'unset'}) past "
                               "max_wait_s: sync again later, or raise max_wait_s")
        self.left -= seconds
        await asyncio.sleep(seconds)
