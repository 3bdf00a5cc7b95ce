"""ExecQuick and ExecRest: a quick turn is one unary reply holding every frame; a turn past
the window is paused, its rest held for its caller only and streamed by ExecRest; our
client falls back to Exec on a server without them. (The contract suite runs every turn
of its own through both paths: engines ``client`` and ``client-rest``.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.client import dial
from agentsessions.client.turns import patient
from agentsessions.errors import NotFoundError, ResourceExhaustedError
from agentsessions.server import quick, rests, service
from agentsessions.server.app import build_server
from agentsessions.server.updates import Seen
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import RecordFrame, SessionFrame
from agentsessions.wire import convert
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="auto") as eng:
        yield eng


@pytest.fixture
def stub(engine: Sessions) -> Iterator[session_pb2_grpc.SessionsStub]:
    server = build_server(engine, "127.0.0.1:0")
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield session_pb2_grpc.SessionsStub(channel)
    finally:
        server.stop(grace=None)


def _request(uid: str) -> session_pb2.ExecRequest:
    text = common_pb2.Message(role="user", parts=[{"text": {"text": "hi"}}])
    return session_pb2.ExecRequest(session=uid, inputs=[text], batched=True)


def _flat(update: session_pb2.ExecUpdate) -> list[session_pb2.ExecUpdate]:
    return [update, *update.batch]


def _seqs(updates: list[session_pb2.ExecUpdate]) -> list[int]:
    return [u.committed.seq for u in updates if u.HasField("committed")]


def test_a_quick_turn_is_one_reply_with_every_frame_once(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quick, "QUICK_WINDOW", 600.0)  # quick however loaded the disk is
    uid = engine.create().uid
    reply = stub.ExecQuick(_request(uid))
    got = _flat(reply.update)
    assert reply.rest == ""
    assert got[0].HasField("session") and got[-1].HasField("session") and got[-1].frame.last
    stored = [r.seq for r in engine.read(uid)]
    assert _seqs(got) == stored  # every record once, in order, as committed
    records = [convert.record_from_committed(u.committed) for u in got if u.HasField("committed")]
    assert [r.content_hash for r in records] == [r.content_hash for r in engine.read(uid)]


def test_a_turn_past_the_window_is_paused_and_its_rest_streamed_once(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quick, "QUICK_WINDOW", 0.0)
    uid = engine.create().uid
    reply = stub.ExecQuick(_request(uid))
    assert reply.rest and not reply.update.frame.last
    streamed = stub.ExecRest(session_pb2.ExecRestRequest(rest=reply.rest))
    rest = [u for m in streamed for u in _flat(m)]
    got = [*_flat(reply.update), *rest]
    assert got[-1].HasField("session") and got[-1].frame.last
    assert _seqs(got) == [r.seq for r in engine.read(uid)]
    with pytest.raises(grpc.RpcError) as again:  # taken: a second read finds nothing
        list(stub.ExecRest(session_pb2.ExecRestRequest(rest=reply.rest)))
    assert again.value.code() == grpc.StatusCode.NOT_FOUND


def test_an_unknown_rest_is_not_found(stub: session_pb2_grpc.SessionsStub) -> None:
    with pytest.raises(grpc.RpcError) as err:
        list(stub.ExecRest(session_pb2.ExecRestRequest(rest="nothing-held-here")))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def _held(closed: list[str]) -> Generator[session_pb2.ExecUpdate | None, None, None]:
    try:
        yield None
    finally:
        closed.append("closed")


def test_a_rest_is_only_its_owners_and_taken_once() -> None:
    held = rests.Rests()
    key = held.park("alice", _held([]), Seen(None), None)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        held.take("mallory", key)
    assert held.take("alice", key).owner == "alice"
    with pytest.raises(NotFoundError):
        held.take("alice", key)
    assert len(held) == 0


def test_a_rest_not_taken_in_time_is_dropped_and_closed() -> None:
    now = [0.0]
    held = rests.Rests(clock=lambda: now[0])
    closed: list[str] = []
    updates = _held(closed)
    next(updates)  # started, as a paused turn's generator is
    key = held.park("alice", updates, Seen(None), None)  # type: ignore[arg-type]
    now[0] = rests.REST_TTL + 1
    with pytest.raises(NotFoundError):
        held.take("alice", key)
    deadline = time.monotonic() + 10
    while not closed and time.monotonic() < deadline:  # closed on a thread of its own
        time.sleep(0.01)
    assert closed == ["closed"] and len(held) == 0


def test_joined_keeps_every_update_in_order() -> None:
    def update(seq: int, *more: int) -> session_pb2.ExecUpdate:
        u = session_pb2.ExecUpdate(committed=session_pb2.CommittedRecord(seq=seq))
        u.batch.extend(update(m) for m in more)
        return u

    head = quick.joined([update(1, 2, 3), update(4), update(5, 6)])
    assert _seqs(_flat(head)) == [1, 2, 3, 4, 5, 6]
    assert all(not u.batch for u in head.batch)


class _Older(service.SessionsService):
    """A server from before ExecQuick: UNIMPLEMENTED, as grpc answers an unknown method."""

    def ExecQuick(self, request: Any, context: grpc.ServicerContext) -> Any:
        return session_pb2_grpc.SessionsServicer.ExecQuick(self, request, context)


def test_the_client_falls_back_to_exec_on_a_server_without_exec_quick(engine: Sessions) -> None:
    from concurrent import futures

    server = grpc.server(futures.ThreadPoolExecutor(4))
    session_pb2_grpc.add_SessionsServicer_to_server(_Older(engine), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with dial(f"127.0.0.1:{port}") as client:
            frames = list(client.exec(None, ["hi"]))
            assert isinstance(frames[-1], SessionFrame) and frames[-1].last
            assert any(isinstance(f, RecordFrame) for f in frames)
            assert client._quick_served is False  # later turns go to Exec at once
            uid = frames[0].uid
            assert client.run(uid, ["again"]).session.last_seq == engine.get(uid).last_seq
    finally:
        server.stop(None)


def test_a_turn_goes_on_when_its_rest_is_never_read(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quick, "QUICK_WINDOW", 0.0)
    uid = engine.create().uid
    reply = stub.ExecQuick(_request(uid))
    assert reply.rest
    deadline = time.monotonic() + 30
    while engine.get(uid).exec_state != "EXEC_COMPLETED" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert engine.get(uid).exec_state == "EXEC_COMPLETED" and engine.verify(uid).ok


def test_a_rest_refused_for_the_servers_bounds_is_asked_again_until_patience_ends() -> None:
    calls: list[int] = []
    slept: list[float] = []

    def open_rest(refusals: int) -> Iterator[int]:
        calls.append(1)
        if len(calls) <= refusals:
            raise ResourceExhaustedError("the server has 64 of 64 streams and turns open")
        yield from (1, 2, 3)

    def busy_for(refusals: int) -> Iterator[int]:
        return open_rest(refusals)

    assert list(patient(lambda: busy_for(2), sleep=slept.append)) == [1, 2, 3]
    assert len(calls) == 3 and slept == [0.01, 0.02]  # backing off
    calls.clear()
    with pytest.raises(ResourceExhaustedError):  # patience spent: the refusal is raised
        list(patient(lambda: busy_for(10**6), patience=0.0, sleep=slept.append))


class _Context:
    """A call's context as windowed() uses it (a parked turn's trailers only)."""

    def set_trailing_metadata(self, _metadata: Any) -> None:
        """Nothing to send here."""


def test_a_stream_that_cannot_wait_for_its_frames_is_paused_after_its_first(
    engine: Sessions,
) -> None:
    from agentsessions.server.updates import PAUSE, windowed

    frames = list(engine.exec(None, ["hi"]))  # a plain iterator: no ready() to wait with
    got = list(windowed(engine, iter(frames), Seen(_Context()), None, 600.0))  # type: ignore[arg-type]
    assert got[1] is PAUSE and PAUSE not in got[2:]
    assert len([u for u in got if u is not PAUSE]) == len(frames)


def test_a_rest_holding_a_slot_gives_it_back_when_swept_or_read() -> None:
    now = [0.0]
    held = rests.Rests(clock=lambda: now[0])
    given: list[str] = []
    read = held.park("alice", _held([]), Seen(None), None, lambda: given.append("read"))  # type: ignore[arg-type]
    held.park("alice", _held([]), Seen(None), None, lambda: given.append("swept"))  # type: ignore[arg-type]
    held.take("alice", read).release()  # ExecRest streamed it
    assert given == ["read"]
    now[0] = rests.REST_TTL + 1
    held.sweep()  # nobody parks or takes again: the sweep still gives the slot back
    deadline = time.monotonic() + 10
    while len(given) < 2 and time.monotonic() < deadline:  # dropped on a thread of its own
        time.sleep(0.01)
    assert given == ["read", "swept"] and len(held) == 0


def test_the_sweeper_gives_a_slot_back_when_due_with_nobody_calling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rests, "REST_TTL", 0.05)
    held = rests.Rests()
    given: list[str] = []
    held.park("alice", _held([]), Seen(None), None, lambda: given.append("swept"))  # type: ignore[arg-type]
    deadline = time.monotonic() + 10
    while not given and time.monotonic() < deadline:  # nobody parks, takes or sweeps
        time.sleep(0.01)
    assert given == ["swept"] and len(held) == 0
    held.park("alice", _held([]), Seen(None), None, lambda: given.append("again"))  # type: ignore[arg-type]
    deadline = time.monotonic() + 10
    while len(given) < 2 and time.monotonic() < deadline:  # an idle sweeper wakes for it
        time.sleep(0.01)
    assert given == ["swept", "again"]
    held.close()


def test_parked_turns_share_one_sweeper_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    held = rests.Rests()
    for _ in range(20):
        held.park("alice", _held([]), Seen(None), None, lambda: None)  # type: ignore[arg-type]
    assert started == ["agentsessions rests sweep"]  # not a timer thread a parked turn
    held.close()


def test_the_window_stretches_with_the_turns_each_core_shares_up_to_a_bound() -> None:
    assert quick.window(1) == quick.QUICK_WINDOW  # one turn: the window as set
    assert quick.window(quick.CORES) == quick.QUICK_WINDOW
    assert quick.window(2 * quick.CORES) == pytest.approx(2 * quick.QUICK_WINDOW)
    assert quick.window(1000 * quick.CORES) == quick.MAX_STRETCH * quick.QUICK_WINDOW


def test_busy_counts_the_replies_waiting_at_once() -> None:
    busy = quick.Busy()
    with busy.one() as first, busy.one() as second:
        assert (first, second) == (1, 2)
    with busy.one() as again:
        assert again == 1
