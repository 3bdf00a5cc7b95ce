"""One token cannot stall the daemon (issue 18), the thin end: the streams helper's
``bench/streams.py`` measures 10,000 streams; here one token holds as many Follow streams
as its limit allows, and must be refused the next one at once (RESOURCE_EXHAUSTED naming
the limit) while another token's unary call still answers.

Today the thread pool (64 workers) equals the per-client limit (64), so the 65th stream
queues for a worker instead of being refused and every other caller waits with it:
``xfail(strict=True)`` until the streams part lands. The waits are hang guards.
"""

from __future__ import annotations

from typing import Any

import pytest
from needs import need

grpc = need("grpc", "grpc")
need("grpc_health", "grpc")
need("grpc_reflection", "grpc")

from hostile import SESSIONS

from agentsessions.server.bounds import DEFAULT_MAX_STREAMS_PER_CLIENT
from agentsessions.server.gen import session_pb2 as pb

GUARD = 3.0  # how long the other token's call may take before it counts as stalled


@pytest.mark.xfail(strict=True, reason="issue 18: streams helper (limits before a worker)")
def test_a_token_at_its_stream_limit_is_refused_and_stalls_no_one(daemon: Any) -> None:
    fuzz, a = daemon.tenants["fuzz"], daemon.tenants["a"]
    made = daemon.send(SESSIONS["CreateSession"], pb.CreateSessionRequest(), fuzz)
    assert made.code == grpc.StatusCode.OK, made
    uid = pb.Session.FromString(made.replies[0]).metadata.uid
    follow = daemon.channel.unary_stream(
        SESSIONS["Follow"].path, request_serializer=None, response_deserializer=None
    )
    request = pb.FollowRequest(session=uid, from_seq=10**6).SerializeToString()
    held = [follow(request, metadata=fuzz.metadata) for _ in range(DEFAULT_MAX_STREAMS_PER_CLIENT)]
    try:
        listed = daemon.call(
            SESSIONS["ListSessions"], pb.ListSessionsRequest().SerializeToString(), a, GUARD
        )
        assert listed.code == grpc.StatusCode.OK, f"another token's list stalled: {listed}"
        one_more = follow(request, metadata=fuzz.metadata, timeout=GUARD)
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(one_more))
    finally:
        for call in held:
            call.cancel()
    err: Any = refused.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
    assert "stream" in err.details(), err.details()  # it names the limit it hit
    assert daemon.alive()
