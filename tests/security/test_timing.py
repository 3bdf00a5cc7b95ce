"""Timing tells nothing (issue 18): against the real daemon, b's GetSession and Verify of
a's uid take as long as of a uid nobody has. Both end at the same check (the project from
the index, before any session is read), so their median times must agree within 10%.

Interleaved tries after a warm-up, medians (robust to the odd slow call on a shared
machine), and up to three measurements before the test fails: a real difference shows in
every one, a burst of load in one at most. tests/unit/test_scoped_timing.py holds the
same promise in process, where the noise of the wire is absent.
"""

from __future__ import annotations

import secrets
import statistics
import time
from typing import Any

from needs import need

grpc = need("grpc", "grpc")

from hostile import SESSIONS

from agentsessions.wire.gen import session_pb2 as pb

TRIES = 200
WARMUP = 40
TOLERANCE = 0.10
ATTEMPTS = 3


def _medians(daemon: Any, method: str, real: bytes, unknown: bytes) -> tuple[float, float]:
    b = daemon.tenants["b"]
    stub = daemon.channel.unary_unary(
        SESSIONS[method].path, request_serializer=None, response_deserializer=None
    )

    def once(payload: bytes) -> float:
        start = time.perf_counter()
        try:
            stub(payload, metadata=b.metadata, timeout=10)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.NOT_FOUND, err
        else:
            raise AssertionError(f"b's {method} of a's session answered OK")
        return time.perf_counter() - start

    for _ in range(WARMUP):
        once(real)
        once(unknown)
    hidden, none = [], []
    for _ in range(TRIES):  # interleaved: a burst of load falls on both alike
        hidden.append(once(real))
        none.append(once(unknown))
    return statistics.median(hidden), statistics.median(none)


def _agree(daemon: Any, method: str, real: bytes, unknown: bytes) -> None:
    seen = []
    for _ in range(ATTEMPTS):
        hidden, none = _medians(daemon, method, real, unknown)
        seen.append((round(hidden * 1e3, 3), round(none * 1e3, 3)))
        if abs(hidden / none - 1) <= TOLERANCE:
            return
    raise AssertionError(f"{method}: another project's uid vs an unknown one, ms: {seen}")


def test_another_projects_uid_and_an_unknown_one_take_the_same_time(
    daemon: Any, victim: Any
) -> None:
    unknown = "sess-" + secrets.token_hex(12)
    _agree(
        daemon,
        "GetSession",
        pb.GetSessionRequest(uid=victim.uid).SerializeToString(),
        pb.GetSessionRequest(uid=unknown).SerializeToString(),
    )
    _agree(
        daemon,
        "Verify",
        pb.VerifyRequest(session=victim.uid).SerializeToString(),
        pb.VerifyRequest(session=unknown).SerializeToString(),
    )
