"""ExecRequest.deadline_unix and CancelRequest.execution_id/reason over a real server.

A turn still running at its deadline is canceled through the engine's cancel path
(LIFECYCLE_CANCEL naming reason TIMEOUT, END CANCELED), and the caller's stream ends
DEADLINE_EXCEEDED after the records and the last frame; a deadline already past writes
nothing. A Cancel naming another execution than the open one is FAILED_PRECONDITION with
nothing written; the reason a Cancel gives is recorded in its LIFECYCLE_CANCEL detail.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.controller.spi import HarnessDescriptor, Sink, Start
from agentsessions.errors import DeadlineExceededError
from agentsessions.server.app import build_server
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1.construct import text_message
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc
from agentsessions.wire.status import from_rpc_error

BOUND = 60.0  # a bound on waiting for the server to do something, never a timing


class Slow:
    """Says "first", then waits for ``go`` before saying "late" (its next effect)."""

    reached = threading.Event()
    go = threading.Event()

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(id="slow", version="1")

    def run(self, start: Start, sink: Sink) -> None:
        sink.output(dict(text_message("assistant", "first")))
        Slow.reached.set()
        assert Slow.go.wait(BOUND), "the test never let the harness go on"
        sink.output(dict(text_message("assistant", "late")))


HARNESSES.register("slow", Slow)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    Slow.reached.clear()
    Slow.go.clear()
    with agentsessions.open(tmp_path / "home", runtime="local") as eng:
        try:
            yield eng
        finally:
            Slow.go.set()  # a failed test must not leave a turn for close to wait on


@pytest.fixture
def address(engine: Sessions) -> Iterator[str]:
    server = build_server(engine, "127.0.0.1:0")
    yield server.address
    server.stop(grace=None)


@pytest.fixture
def stub(address: str) -> Iterator[session_pb2_grpc.SessionsStub]:
    with grpc.insecure_channel(address) as channel:
        yield session_pb2_grpc.SessionsStub(channel)


def _message(text: str) -> common_pb2.Message:
    return common_pb2.Message(
        role="user", parts=[common_pb2.Part(text=common_pb2.TextPart(text=text))]
    )


def _drain(call: Any, out: list[Any]) -> None:
    try:
        out.extend(call)
        out.append(grpc.StatusCode.OK)
    except grpc.RpcError as exc:
        out.append(exc.code())


def _wait(predicate: Any) -> None:
    deadline = time.monotonic() + BOUND
    while not predicate():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.01)


def _tail(engine: Sessions, uid: str, n: int) -> list[dict[str, Any]]:
    return [dict(r.event) for r in engine.read(uid)][-n:]


def test_a_turn_running_at_its_deadline_is_canceled_and_the_caller_sees_deadline_exceeded(
    engine: Sessions, stub: session_pb2_grpc.SessionsStub
) -> None:
    uid = engine.create(harness="slow").uid
    request = session_pb2.ExecRequest(
        session=uid, inputs=[_message("hi")], deadline_unix=int(time.time()) + 2
    )
    out: list[Any] = []
    drain = threading.Thread(target=_drain, args=(stub.Exec(request), out))
    drain.start()
    assert Slow.reached.wait(BOUND)
    _wait(lambda: engine.store.cancel_requested(uid))  # type: ignore[attr-defined]
    Slow.go.set()  # its next effect meets the request: the turn stops there
    drain.join(BOUND)
    assert out[-1] == grpc.StatusCode.DEADLINE_EXCEEDED
    last = out[-2]
    assert last.WhichOneof("update") == "session" and last.frame.last
    assert last.frame.turn.canceled
    cancel, end = _tail(engine, uid, 2)
    assert cancel["lifecycle"]["kind"] == "LIFECYCLE_CANCEL"
    assert "TIMEOUT" in cancel["lifecycle"]["detail"]
    assert end["end"]["state"] == "CANCELED"
    assert "late" not in str(list(engine.read(uid)))
    report = engine.rerun(uid)  # "first" served, stopped again before "late"
    assert report.identical, report.divergence
    assert (report.replayed, report.model_calls, report.outputs) == (1, 0, ("first",))


def test_a_deadline_already_past_writes_nothing(
    engine: Sessions, stub: session_pb2_grpc.SessionsStub
) -> None:
    uid = engine.create(harness="slow").uid
    request = session_pb2.ExecRequest(session=uid, inputs=[_message("hi")], deadline_unix=1)
    with pytest.raises(grpc.RpcError) as info:
        list(stub.Exec(request))
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert isinstance(from_rpc_error(info.value), DeadlineExceededError)  # our client's class
    assert engine.get(uid).last_seq == 0 and not Slow.reached.is_set()


def test_a_deadline_in_the_future_does_not_touch_a_turn_that_ends_first(
    engine: Sessions, stub: session_pb2_grpc.SessionsStub
) -> None:
    Slow.go.set()
    uid = engine.create(harness="slow").uid
    request = session_pb2.ExecRequest(
        session=uid, inputs=[_message("hi")], deadline_unix=int(time.time()) + 3600
    )
    updates = list(stub.Exec(request))
    assert not updates[-1].frame.turn.canceled
    assert _tail(engine, uid, 1)[0]["end"]["state"] == "COMPLETED"


def test_cancel_checks_the_execution_it_names_and_records_its_reason(
    engine: Sessions, stub: session_pb2_grpc.SessionsStub
) -> None:
    uid = engine.create(harness="slow").uid
    out: list[Any] = []
    call = stub.Exec(session_pb2.ExecRequest(session=uid, inputs=[_message("hi")]))
    drain = threading.Thread(target=_drain, args=(call, out))
    drain.start()
    assert Slow.reached.wait(BOUND)
    running = engine.store.get(uid).exec_id  # type: ignore[attr-defined]
    wrong = session_pb2.CancelRequest(session=uid, execution_id="not-" + running, wait_ms=0)
    with pytest.raises(grpc.RpcError) as info:
        stub.Cancel(wrong)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "names execution not-" in str(info.value.details())
    assert engine.store.cancel_requested(uid) is None  # type: ignore[attr-defined]
    bad = session_pb2.CancelRequest(session=uid, reason="BORED", wait_ms=0)
    with pytest.raises(grpc.RpcError) as info:
        stub.Cancel(bad)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert engine.store.cancel_requested(uid) is None  # type: ignore[attr-defined]

    right = session_pb2.CancelRequest(session=uid, execution_id=running, reason="USER")
    canceling = threading.Thread(target=lambda: stub.Cancel(right))
    canceling.start()
    _wait(lambda: engine.store.cancel_requested(uid))  # type: ignore[attr-defined]
    Slow.go.set()
    canceling.join(BOUND)
    drain.join(BOUND)
    assert out[-1] == grpc.StatusCode.OK  # a canceled turn without a deadline ends OK
    cancel, end = _tail(engine, uid, 2)
    assert cancel["lifecycle"]["detail"] == "canceled by request (reason USER)"
    assert end["end"]["state"] == "CANCELED"
    assert engine.get(uid).exec_state == "EXEC_CANCELED"
