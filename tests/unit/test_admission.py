"""Admission (issue 18): the per-token and server-wide bounds, counted on grpc's serving
thread before a call takes a worker, on a real grpc server on loopback.

The server here has ONE worker for unary calls, and a test-only unary method that holds it
until released: a refusal that needed a worker would then wait; none does. Exec is held
open until its caller leaves (a turn in flight), Replay too (a stream to count)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.server import auth, memory, service
from agentsessions.server.admission import INLINE, Admission, Ledger
from agentsessions.server.observe import RequestObserver
from agentsessions.server.scoped import Scope
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.tokens import TokenStore
from agentsessions.wire.bounds import Limits
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc

UNKNOWN = "sess-000000000000000000000000"


class HeldService(service.SessionsService):
    """Exec and Replay held open until the caller leaves (a turn, a stream, in flight);
    Replay with ``to_seq`` 1 ends at once instead (a stream that is done)."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope.engine, scope)

    def Exec(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        yield session_pb2.ExecUpdate()
        while context.is_active():
            time.sleep(0.01)

    def Replay(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        yield common_pb2.LogRecord(seq=1)
        while request.to_seq != 1 and context.is_active():
            time.sleep(0.01)


@dataclass
class Rig:
    port: int
    ledger: Ledger
    tokens: TokenStore
    hold: threading.Event
    service: service.SessionsService

    def token(self, project: str = "a") -> str:
        return self.tokens.create(projects=[project])[0]


def _serve(
    home: Path, engine: Sessions, limits: Limits, first: tuple[grpc.ServerInterceptor, ...] = ()
) -> Iterator[Rig]:
    _, interceptors, scope = auth.server_security(
        home, listen="127.0.0.1:0", engine=engine, limits=limits
    )
    admission = interceptors[-1]
    assert isinstance(admission, Admission)
    hold = threading.Event()

    def block(_request: bytes, _context: grpc.ServicerContext) -> bytes:
        hold.wait(30)  # bounded: a hang guard
        return b"released"

    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=1),  # the unary pool: one worker
        interceptors=[*first, RequestObserver(), *interceptors],
    )
    held_service = HeldService(scope)
    session_pb2_grpc.add_SessionsServicer_to_server(held_service, server)  # type: ignore[no-untyped-call]
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "test.Block", {"Hold": grpc.unary_unary_rpc_method_handler(block)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield Rig(port, admission.ledger, TokenStore(home), hold, held_service)
    finally:
        hold.set()
        server.stop(None).wait()
        admission.close()


LIMITS = Limits(max_streams=4, max_streams_per_token=2, max_turns_per_token=1)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="local") as eng:
        yield eng


@pytest.fixture
def rig(engine: Sessions, tmp_path: Path) -> Iterator[Rig]:
    yield from _serve(tmp_path / "home", engine, LIMITS)


@pytest.fixture
def channel(rig: Rig) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{rig.port}") as ch:
        yield ch


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


def key(token: str) -> str:
    return f"token:{token.split('_')[1]}"


def _refusal(call: Callable[[], Any]) -> tuple[grpc.StatusCode, str, float]:
    began = time.monotonic()
    with pytest.raises(grpc.RpcError) as info:
        call()
    err: Any = info.value
    return err.code(), err.details(), time.monotonic() - began


def _wait_until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) for the server to notice: a cancel is asynchronous."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the server never gave the slot back"
        time.sleep(0.01)


def _open(stub: Any, token: str, to_seq: int = 0) -> Any:
    """A Replay of ``token``, held open (``to_seq`` 1: it ends on its own)."""
    request = session_pb2.ReplayRequest(session=UNKNOWN, to_seq=to_seq)
    return stub.Replay(request, metadata=bearer(token))


def _held(stub: Any, token: str) -> Any:
    call = _open(stub, token)
    assert next(call).seq == 1  # admitted: its handler runs
    return call


def _list(stub: Any, token: str) -> Any:
    return stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=bearer(token), timeout=10)


def test_a_token_at_its_stream_limit_is_refused_at_once_without_a_worker(
    rig: Rig, channel: grpc.Channel
) -> None:
    stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
    alice, bob = rig.token(), rig.token("b")
    held = [_held(stub, alice), _held(stub, alice)]
    assert rig.ledger.open_streams(key(alice)) == 2
    # the one unary worker is taken: anything that needed it would wait 30 s
    blocked = channel.unary_unary("/test.Block/Hold").future(b"", metadata=bearer(bob))
    time.sleep(0.2)
    code, details, took = _refusal(lambda: next(_open(stub, alice)))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details == (
        "too many open streams for this token (2 of 2): end a stream (a follow, an exec) "
        "first, or ask the operator to raise serve --max-streams-per-token"
    )
    assert took < 10  # generous: it never waited for the held worker
    code, _, took = _refusal(lambda: stub.ListSessions(session_pb2.ListSessionsRequest()))
    assert (code, took < 10) == (grpc.StatusCode.UNAUTHENTICATED, True)  # no worker either
    other = _held(stub, bob)  # bob's streams: his own budget, and their own pool
    rig.hold.set()  # the unary worker is free again: bob's unary call answers
    assert blocked.result(timeout=10) == b"released"
    assert _list(stub, bob).sessions == []
    for call in (*held, other):
        call.cancel()
    _wait_until(lambda: rig.ledger.open_long_calls() == 0)


class _Threads(grpc.ServerInterceptor):
    """Notes the thread each call's interceptors run on (grpc's serving thread)."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        self.seen.append(threading.get_ident())
        return continuation(details)


def test_a_refusal_runs_at_once_on_the_serving_thread(
    engine: Sessions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused call takes no worker and no thread of its own: its handler runs on the
    thread that ran the interceptors, before that thread takes the next call (so a flood
    of refusals leaves no backlog of calls, nor their heap: bench/streams.py)."""
    threads, refused_on = _Threads(), []
    poke = memory.TRIMMER.poke
    monkeypatch.setattr(
        memory.TRIMMER, "poke", lambda: (refused_on.append(threading.get_ident()), poke())
    )
    rig = _serve(tmp_path / "home", engine, LIMITS, first=(threads,))
    r = next(rig)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{r.port}") as channel:
            stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
            alice = r.token()
            held = [_held(stub, alice), _held(stub, alice)]
            before = threading.active_count()
            for _ in range(20):
                code, _, _ = _refusal(lambda: next(_open(stub, alice)))
                assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert len(refused_on) == 20
            assert set(refused_on) == set(threads.seen) and len(set(threads.seen)) == 1
            assert (
                threading.active_count() <= before
            )  # no pool was started for them (grpc may retire one)
            for call in held:
                call.cancel()
            _wait_until(lambda: r.ledger.open_long_calls() == 0)
    finally:
        next(rig, None)


def test_inline_runs_work_on_the_callers_thread_and_keeps_its_error() -> None:
    done = INLINE.submit(threading.get_ident)
    assert done.done() and done.result() == threading.get_ident()
    failed = INLINE.submit(int, "x")
    assert failed.done() and isinstance(failed.exception(), ValueError)


def test_the_servers_total_is_refused_naming_its_flag_and_unary_calls_go_on(
    rig: Rig, channel: grpc.Channel
) -> None:
    stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
    one, two, three = rig.token(), rig.token(), rig.token("b")
    held = [_held(stub, one), _held(stub, one), _held(stub, two), _held(stub, two)]
    assert rig.ledger.open_long_calls() == 4
    code, details, _ = _refusal(lambda: next(_open(stub, three)))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details.startswith("the server has 4 of 4 streams and turns open: retry later")
    assert details.endswith("serve --max-streams")
    began = time.monotonic()
    assert _list(stub, three).sessions == []  # the unary pool is not the streams'
    assert time.monotonic() - began < 10
    for call in held:
        call.cancel()
    _wait_until(lambda: rig.ledger.open_long_calls() == 0)


def test_turns_in_flight_per_token_are_bounded_unary_turns_too(
    rig: Rig, channel: grpc.Channel
) -> None:
    stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
    alice, bob = rig.token(), rig.token("b")
    turn = stub.Exec(session_pb2.ExecRequest(), metadata=bearer(alice))
    next(turn)  # in flight
    assert rig.ledger.open_turns(key(alice)) == 1
    want = (
        "too many turns in flight for this token (1 of 1): wait for a turn to end, "
        "or ask the operator to raise serve --max-turns-per-token"
    )
    code, details, _ = _refusal(
        lambda: next(stub.Exec(session_pb2.ExecRequest(), metadata=bearer(alice)))
    )
    assert (code, details) == (grpc.StatusCode.RESOURCE_EXHAUSTED, want)
    resume = session_pb2.ResumeRequest(session=UNKNOWN)
    code, details, _ = _refusal(lambda: stub.Resume(resume, metadata=bearer(alice)))
    assert (code, details) == (grpc.StatusCode.RESOURCE_EXHAUSTED, want)  # before NOT_FOUND
    code, _, _ = _refusal(lambda: stub.Resume(resume, metadata=bearer(bob)))
    assert code == grpc.StatusCode.NOT_FOUND  # bob's turn was admitted: the uid is unknown
    turn.cancel()
    _wait_until(lambda: rig.ledger.open_turns(key(alice)) == 0)
    code, _, _ = _refusal(lambda: stub.Resume(resume, metadata=bearer(alice)))
    assert code == grpc.StatusCode.NOT_FOUND  # admitted again


def test_requests_per_second_per_token_are_bounded(engine: Sessions, tmp_path: Path) -> None:
    rig = _serve(tmp_path / "home", engine, Limits(max_rps_per_token=1))  # bursts of 2
    r = next(rig)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{r.port}") as channel:
            stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
            alice, bob = r.token(), r.token("b")
            codes = []
            for _ in range(8):  # 8 calls need 6 s at 1 a second after the burst
                try:
                    _list(stub, alice)
                    codes.append(grpc.StatusCode.OK)
                except grpc.RpcError as exc:
                    codes.append(exc.code())  # type: ignore[attr-defined]
                    details = exc.details()  # type: ignore[attr-defined]
            assert codes[0] == grpc.StatusCode.OK
            assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes
            assert details == (
                "too many requests for this token (over 1 a second): slow down and retry, "
                "or ask the operator to raise serve --max-rps-per-token"
            )
            assert _list(stub, bob).sessions == []  # another token has its own bucket
    finally:
        next(rig, None)


def test_slots_come_back_on_cancel_done_and_peer_gone(rig: Rig, channel: grpc.Channel) -> None:
    stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
    alice = rig.token()
    k = key(alice)
    canceled = _held(stub, alice)
    canceled.cancel()
    _wait_until(lambda: rig.ledger.open_streams(k) == 0)
    assert [r.seq for r in _open(stub, alice, to_seq=1)] == [1]  # done: it ended itself
    _wait_until(lambda: rig.ledger.open_streams(k) == 0)
    # the peer gone: a client process killed with its two streams open (no cancel sent)
    code = (
        "import sys, time, grpc\n"
        "from agentsessions.wire.gen import session_pb2, session_pb2_grpc\n"
        "stub = session_pb2_grpc.SessionsStub(grpc.insecure_channel(sys.argv[1]))\n"
        "meta = (('authorization', 'Bearer ' + sys.argv[2]),)\n"
        "req = session_pb2.ReplayRequest(session=sys.argv[3])\n"
        "calls = [stub.Replay(req, metadata=meta) for _ in range(2)]\n"
        "[next(c) for c in calls]\n"
        "print('open', flush=True)\n"
        "time.sleep(60)\n"
    )
    argv = [sys.executable, "-c", code, f"127.0.0.1:{rig.port}", alice, UNKNOWN]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as peer:
        try:
            assert peer.stdout is not None and peer.stdout.readline() == "open\n"
            assert rig.ledger.open_streams(k) == 2
        finally:
            peer.kill()
    _wait_until(lambda: rig.ledger.open_streams(k) == 0)
    again = [_held(stub, alice), _held(stub, alice)]  # the whole budget is back
    for call in again:
        call.cancel()
    _wait_until(lambda: rig.ledger.open_long_calls() == 0)


def test_the_ledger_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    ledger = Ledger(Limits(max_rps_per_token=10), clock=lambda: now[0])
    for _ in range(20):  # the burst: twice the rate
        assert ledger.admit("token:x", stream=False, turn=False) is None
    with pytest.raises(Exception, match="over 10 a second"):
        ledger.admit("token:x", stream=False, turn=False)
    ledger.admit("token:y", stream=False, turn=False)  # its own bucket
    now[0] += 0.1  # one more request's worth
    ledger.admit("token:x", stream=False, turn=False)
    with pytest.raises(Exception, match="over 10 a second"):
        ledger.admit("token:x", stream=False, turn=False)
    # the operator (no token) is never metered, only counted against the total
    release = [ledger.admit(None, stream=True, turn=False) for _ in range(64)]
    with pytest.raises(Exception, match="64 of 64 streams and turns"):
        ledger.admit(None, stream=True, turn=False)
    for r in release:
        assert r is not None
        r()
        r()  # a second release is nothing
    assert ledger.open_long_calls() == 0


def test_a_turn_exec_quick_paused_holds_its_slot_until_its_rest_is_read(
    rig: Rig, channel: grpc.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a paused turn goes on after ExecQuick returned: it must stay counted, or a caller that
    # never reads its rests could run any number of turns at once past its bound
    from agentsessions.server import quick

    monkeypatch.setattr(quick, "QUICK_WINDOW", 0.0)  # every turn pauses after its first frame
    stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
    alice = rig.token()
    text = common_pb2.Message(role="user", parts=[{"text": {"text": "hi"}}])
    request = session_pb2.ExecRequest(inputs=[text], batched=True)
    reply = stub.ExecQuick(request, metadata=bearer(alice), timeout=30)
    assert reply.rest
    assert rig.ledger.open_turns(key(alice)) == 1  # kept past the call's end
    code, details, _ = _refusal(lambda: stub.ExecQuick(request, metadata=bearer(alice)))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details.startswith("too many turns in flight for this token (1 of 1)")
    rest = session_pb2.ExecRestRequest(rest=reply.rest)
    frames = [
        u for m in stub.ExecRest(rest, metadata=bearer(alice), timeout=30) for u in (m, *m.batch)
    ]
    assert frames[-1].HasField("session") and frames[-1].frame.last  # the turn's end
    _wait_until(lambda: rig.ledger.open_turns(key(alice)) == 0)  # given back with the rest
    again = stub.ExecQuick(request, metadata=bearer(alice), timeout=30)  # room again
    assert again.rest  # paused too: leave it unread, and drop it as the server would
    rig.service.rests.close()  # as the server does when it stops
    _wait_until(lambda: rig.ledger.open_turns(key(alice)) == 0)  # a dropped rest gives it back
    _wait_until(lambda: rig.ledger.open_long_calls() == 0)
