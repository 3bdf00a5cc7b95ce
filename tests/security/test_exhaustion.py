"""One token cannot stall the daemon (issue 18), the thin end: the streams helper's
``bench/streams.py`` measures 10,000 streams; here one token holds as many Follow streams
as its limit allows, and must be refused the next one at once (RESOURCE_EXHAUSTED naming
the limit) while another token's unary call still answers.

The limit is counted on grpc's serving thread, before a stream takes a worker, and
streams run on a pool of their own (server/admission.py): the stream past the limit is
refused at once and unary calls never wait behind streams. The waits are hang guards.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from needs import need

grpc = need("grpc", "grpc")
need("grpc_health", "grpc")
need("grpc_reflection", "grpc")

from hostile import SESSIONS

from agentsessions.wire.bounds import DEFAULT_MAX_STREAMS_PER_TOKEN
from agentsessions.wire.gen import session_pb2 as pb

GUARD = 3.0  # how long the other token's call may take before it counts as stalled


def test_a_token_at_its_stream_limit_is_refused_and_stalls_no_one(daemon: Any) -> None:
    # a token of its own: its cancelled streams give their slots back within a follow
    # slice each, and a test after this one on the same daemon must not meet them
    hog, a = daemon.tenants["hog"], daemon.tenants["a"]
    made = daemon.send(SESSIONS["CreateSession"], pb.CreateSessionRequest(), hog)
    assert made.code == grpc.StatusCode.OK, made
    uid = pb.Session.FromString(made.replies[0]).metadata.uid
    follow = daemon.channel.unary_stream(
        SESSIONS["Follow"].path, request_serializer=None, response_deserializer=None
    )
    request = pb.FollowRequest(session=uid, from_seq=10**6).SerializeToString()
    held = [follow(request, metadata=hog.metadata) for _ in range(DEFAULT_MAX_STREAMS_PER_TOKEN)]
    try:
        listed = daemon.call(
            SESSIONS["ListSessions"], pb.ListSessionsRequest().SerializeToString(), a, GUARD
        )
        assert listed.code == grpc.StatusCode.OK, f"another token's list stalled: {listed}"
        one_more = follow(request, metadata=hog.metadata, timeout=GUARD)
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(one_more))
    finally:
        for call in held:
            call.cancel()
        _wait_for_the_slots(follow, request, hog)
    err: Any = refused.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
    assert "stream" in err.details(), err.details()  # it names the limit it hit
    assert daemon.alive()


def _wait_for_the_slots(follow: Any, request: bytes, tenant: Any) -> None:
    """Until the token may open a stream again: a cancelled Follow gives its slot back when
    its worker notices (within one follow slice, half a second)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        probe = follow(request, metadata=tenant.metadata, timeout=0.3)
        try:
            next(iter(probe))
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                return  # admitted (it timed out waiting for a record): the slots are back
        time.sleep(0.1)
    raise AssertionError("the token's stream slots did not come back after the streams ended")
