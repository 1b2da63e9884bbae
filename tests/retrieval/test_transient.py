"""A write made through a lost node or a Raft election is made again; a rejection that cannot pass is not.
(The real case, a cluster losing its leader mid-write, is driven in tests/slack/test_cluster.py.)"""

from __future__ import annotations

import pytest
from weaviate.exceptions import WeaviateBaseError

from retrieval.transient import is_transient, retrying


@pytest.mark.parametrize(("message", "transient"), [
    ("failed to execute query: rpc error: code = Canceled desc = grpc: the client connection is closing", True),
    ("rpc error: code = Unavailable desc = connection error: dial tcp 127.0.0.1:8301: connect: connection refused",
     True),
    ("put object: leader not found", True),
    ("Query call with protocol GRPC batch failed with message <AioRpcError of RPC that terminated with:\n"
     "\tstatus = StatusCode.DEADLINE_EXCEEDED\n\tdetails = \"Deadline Exceeded\"", True),
    ("apply: node is not the leader", True),
    ("context deadline exceeded", True),
    ("new vector has a length of 384, but the index expects 768", False),
    ("id '42' is not a valid uuid", False),
    ("msg:cannot achieve consistency level QUORUM: read error", False),
    ("", False),
])
def test_which_failures_pass_on_their_own(message: str, transient: bool) -> None:
    assert is_transient(message) is transient


class Flaky:
    """A write that fails with ``errors`` in turn, then succeeds."""

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise WeaviateBaseError(self.errors.pop(0))
        return "written"


async def test_a_write_lost_to_an_election_is_made_again() -> None:
    write = Flaky("leader not found", "rpc error: code = Canceled desc = grpc: the client connection is closing")
    assert await retrying(write, "write", delays=(0.0, 0.0, 0.0)) == "written"
    assert write.calls == 3


async def test_a_rejection_that_cannot_pass_is_reported_at_once() -> None:
    write = Flaky("new vector has a length of 384, but the index expects 768")
    with pytest.raises(WeaviateBaseError, match="length of 384"):
        await retrying(write, "write", delays=(0.0, 0.0))
    assert write.calls == 1


async def test_a_cluster_that_stays_without_a_leader_is_reported_after_the_last_attempt() -> None:
    write = Flaky(*["leader not found"] * 5)
    with pytest.raises(WeaviateBaseError, match="leader not found"):
        await retrying(write, "write", delays=(0.0, 0.0))
    assert write.calls == 3
