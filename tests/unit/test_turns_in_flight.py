"""A token's turns in flight are counted until the turn ends on the engine (issue 18), not
until its call ends: a caller that starts a turn and goes away (a cancelled Exec stream)
leaves the turn running, and it still counts against ``--max-turns-per-token``. Otherwise
start-and-cancel would put any number of turns on the engine past the bound.

A real server on loopback, the real token interceptor and scope; the turns are slow
scripted ones (``delay=``), so they are still running when the next call comes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.server import auth
from agentsessions.server.app import build_server
from agentsessions.server.scoped import Scope
from agentsessions.sessions.tokens import Principal, TokenStore
from agentsessions.wire.bounds import Limits
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc

LIMIT = 2
SLOW = "scripted:seed=1,delay=2"  # each answer takes 2 s: a turn is still running
WAIT = 30.0


@dataclass
class Rig:
    stub: Any
    meta: tuple[tuple[str, str], ...]
    scope: Scope
    principal: Principal


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    home = tmp_path / "home"
    with agentsessions.open(home, runtime="local") as engine:
        limits = Limits(max_turns_per_token=LIMIT, max_rps_per_token=1_000_000)
        _, interceptors, scope = auth.server_security(
            home, listen="127.0.0.1:0", engine=engine, limits=limits
        )
        server = build_server(engine, "127.0.0.1:0", interceptors=interceptors, scope=scope)
        tokens = TokenStore(home)
        token, info = tokens.create(projects=["a"])
        principal = Principal.of(info)
        channel = grpc.insecure_channel(server.address)
        try:
            stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
            yield Rig(stub, (("authorization", f"Bearer {token}"),), scope, principal)
        finally:
            channel.close()
            server.stop(0)


def _exec(rig: Rig) -> Any:
    text = common_pb2.Part(text=common_pb2.TextPart(text="take your time"))
    request = session_pb2.ExecRequest(
        harness="chat", model=SLOW, inputs=[common_pb2.Message(role="user", parts=[text])]
    )
    return rig.stub.Exec(request, metadata=rig.meta, timeout=WAIT)


def _start_and_go_away(rig: Rig) -> None:
    """Start a turn, see its first frame (the turn is running), cancel the stream."""
    call = _exec(rig)
    next(iter(call))
    call.cancel()


def _until(condition: Any) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_cancelled_exec_still_counts_until_its_turn_ends(rig: Rig) -> None:
    for _ in range(LIMIT):
        _start_and_go_away(rig)
    assert rig.scope.turns_in_flight(rig.principal) == LIMIT  # the streams are gone
    with pytest.raises(grpc.RpcError) as refused:
        next(iter(_exec(rig)))
    err: Any = refused.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "too many turns in flight for this token (2 of 2)" in err.details()
    assert "--max-turns-per-token" in err.details()
    # the running turns end on their own (their END durable), and give their slots back
    _until(lambda: rig.scope.turns_in_flight(rig.principal) == 0)
    updates = list(_exec(rig))
    assert updates[-1].session.exec_state == session_pb2.EXEC_COMPLETED


def test_a_call_that_starts_no_turn_holds_no_slot(rig: Rig) -> None:
    text = common_pb2.Part(text=common_pb2.TextPart(text="x"))
    bad = session_pb2.ExecRequest(  # refused before any turn: an unknown harness
        harness="no-such-harness", inputs=[common_pb2.Message(role="user", parts=[text])]
    )
    for _ in range(LIMIT + 1):
        with pytest.raises(grpc.RpcError):
            list(rig.stub.Exec(bad, metadata=rig.meta, timeout=WAIT))
    assert rig.scope.turns_in_flight(rig.principal) == 0
