"""Which Weaviate failures pass on their own, and writing through them.

On a cluster, losing a node (or its Raft leader) makes the others fail some calls for the seconds it takes them to
notice: a forwarded schema query meets a closing connection, there is briefly no leader. Those calls succeed when
made again, and our writes are idempotent (every object's UUID is derived from its content), so a write retries
them a few times with a growing pause before it reports an error. Anything else (a rejected object, a wrong
vector size) is reported at once: making it again cannot help.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from weaviate.exceptions import WeaviateBaseError

from retrieval.errors import first_line

log = logging.getLogger(__name__)

T = TypeVar("T")

# Pauses before each new attempt: about 7 s in all, longer than a Raft election in a healthy cluster.
RETRY_DELAYS_S: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)

_TRANSIENT = re.compile(
    r"code = (?:Unavailable|Canceled|DeadlineExceeded|Aborted)"  # gRPC, as the Go server words it
    r"|StatusCode\.(?:UNAVAILABLE|CANCELLED|DEADLINE_EXCEEDED|ABORTED)"  # gRPC, as the Python client words it
    r"|connection is closing|leader not found|not the leader|leadership lost|store not open"
    r"|context deadline exceeded|connection refused",
    re.IGNORECASE,
)


def is_transient(message: str) -> bool:
    """Whether a Weaviate error message names a failure that passes on its own (a node or leader lost)."""
    return bool(_TRANSIENT.search(message))


async def retrying(call: Callable[[], Awaitable[T]], what: str,
                   delays: Sequence[float] = RETRY_DELAYS_S) -> T:
    """``call()``, made again after each pause in ``delays`` while it fails transiently; its last error otherwise."""
    for attempt, delay in enumerate((*delays, None), start=1):
        try:
            return await call()
        except WeaviateBaseError as error:
            if delay is None or not is_transient(str(error)):
                raise
            log.warning("Weaviate failed to %s (attempt %d, retrying in %.1f s): %s",
                        what, attempt, delay, first_line(error))
            await asyncio.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")
