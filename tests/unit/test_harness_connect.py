"""Harness.Connect conformance (spec digest 1.3 and 6) with real gRPC servers in process.

A harness served by ``agentsessions.wire.harnessnode`` is driven by the remote harness of
``agentsessions.wire.harnessclient`` through the Sessions engine: a mediated tool call and
the digest's approval cases (approved, denied, executor failure) over the wire, each then
replayed with zero model calls and no executor call. A raw proto peer (a Harness servicer
written here, frame by frame) checks what the host sends (``park`` with the journaled
request's tuple; ``approval`` before ``tool`` on a decided resume) and how it treats a
peer that breaks the protocol (a foreign park ack, a second END, an event only the host
writes, another execution's id, no END): the right error, nothing committed lost, and the
same server serving the next stream. And the node's side: a host that sends frames out of
order gets the right status, and the node keeps serving.
"""

from __future__ import annotations

import queue
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.errors import (
    ApprovalParkedError,
    HarnessAckError,
    HarnessError,
    HarnessProtocolError,
)
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.values import SessionFrame
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire import harnesswire as wire
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnessnode import HarnessServer
from tests.tool_harness import ToolLineHarness, line_call, plan

HARNESSES.register("tool-line", ToolLineHarness)
GATED = "MEDIATION_REQUIRES_APPROVAL"


def _socket(tag: str) -> str:
    # a short path: a unix socket's path is limited to ~107 bytes, pytest's tmp_path is long
    return f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{tag}.sock"


@pytest.fixture(scope="module")
def tool_line() -> Iterator[str]:
    """The tool-line harness served over the wire, registered as ``r-tool-line``."""
    server = HarnessServer(HARNESSES.factory("tool-line"), _socket("tool"))
    static_remotes([f"r-tool-line={server.address}"])
    yield "r-tool-line"
    server.stop(0)


def _workload(tmp_path: Path, effects: Path, mediation: str) -> Path:
    path = tmp_path / "w.toml"
    path.write_text(
        f'[tools.append]\nmediation = "{mediation}"\nexecutor = "append_line"\n'
        f'config = {{ path = "{effects}" }}\n'
    )
    return path


def _kinds(engine: Sessions, uid: str) -> list[str]:
    return [str(r.event["kind"]).removeprefix("EVENT_") for r in engine.read(uid)]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


def _resume(engine: Sessions, uid: str) -> SessionFrame:
    last = list(engine.resume(uid))[-1]
    assert isinstance(last, SessionFrame)
    return last


def test_a_mediated_tool_call_over_the_wire_runs_once_and_replays_without_effects(
    tmp_path: Path, tool_line: str
) -> None:
    effects = tmp_path / "effects.txt"
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        uid = engine.create(harness=tool_line,
                            tools=_workload(tmp_path, effects, "mediated")).uid  # fmt: skip
        turn = engine.run(uid, ["go"], config=plan(line_call("c1", "one"))).turn
        assert turn is not None and turn.outputs[0].startswith("c1: ok ")
        assert _kinds(engine, uid) == ["EXECUTION_START", "INPUT", "TOOL_CALL", "TOOL_RESULT",
                                       "OUTPUT", "END"]  # fmt: skip
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0
        assert _lines(effects) == 1  # the executor ran once, live; replay served its result
        assert verify_session(engine.store, uid).ok  # type: ignore[attr-defined]


def _parked(tmp_path: Path, harness: str, effects: Path) -> tuple[Sessions, str]:
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    uid = engine.create(harness=harness, tools=_workload(tmp_path, effects, "approval")).uid
    call = {**line_call("c1", "the line"), "mediation": GATED}
    with pytest.raises(ApprovalParkedError) as info:
        engine.run(uid, ["go"], config=plan(call))
    assert info.value.tool_call_id == "c1" and info.value.request_seq == 4
    # the park over the wire leaves the journal as in process: no PARKED, END or ERROR
    assert _kinds(engine, uid) == ["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST"]
    return engine, uid


@pytest.mark.parametrize("case", ["approved", "denied", "executor failure"])
def test_the_approval_cases_over_the_wire(tmp_path: Path, tool_line: str, case: str) -> None:
    effects = tmp_path / ("dir" if case == "executor failure" else "effects.txt")
    if case == "executor failure":
        effects.mkdir()  # appending to a directory fails: an EXECUTOR_ERROR receipt
    engine, uid = _parked(tmp_path, tool_line, effects)
    with engine:
        engine.approve(uid, approved=case != "denied", reason="r")
        last = _resume(engine, uid)
        assert last.turn is not None
        receipt = next(r for r in engine.read(uid) if r.seq == 6).event["result"]
        assert receipt["approval_request_seq"] == "4" and receipt["approval_decision_seq"] == "5"
        if case == "approved":
            assert last.turn.outputs[0].startswith("c1: ok ") and _lines(effects) == 1
        elif case == "denied":
            assert receipt["code"] == "APPROVAL_DENIED" and receipt["is_error"]
            assert _lines(effects) == 0
        else:
            assert receipt["code"] == "EXECUTOR_ERROR" and receipt["is_error"]
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0
        assert _lines(effects) == (1 if case == "approved" else 0)
        assert _kinds(engine, uid)[-2:] == ["OUTPUT", "END"]


# --------------------------------------------------------------------------- a raw peer


class Peer(harness_pb2_grpc.HarnessServicer):
    """A harness written frame by frame: one gated call, then what ``mode`` says."""

    def __init__(self) -> None:
        self.mode = "good"
        self.seen: list[list[str]] = []  # each stream's frames, by kind
        self.parks: list[common_pb2.ApprovalRef] = []
        self.ended: queue.Queue[bool] = queue.Queue()  # a parked stream's RPC terminated

    def Describe(self, request: Any, context: Any) -> harness_pb2.HarnessDescriptor:
        return harness_pb2.HarnessDescriptor(
            id="peer", version="1",
            capabilities=harness_pb2.Capabilities(resumability=1),
        )  # fmt: skip

    def Connect(self, frames: Iterator[Any], context: Any) -> Iterator[common_pb2.Event]:
        seen: list[str] = []
        self.seen.append(seen)
        start = next(frames)
        seen.append(start.WhichOneof("frame"))
        ex = start.execution_id

        def ev(**body: Any) -> common_pb2.Event:
            return wire.event_to_proto({"execution_id": ex, **body})

        if self.mode == "input":
            yield ev(kind="EVENT_INPUT", message={"role": "user", "parts": []})
            return
        if self.mode == "foreign-id":
            yield wire.event_to_proto({"execution_id": "another", "kind": "EVENT_OUTPUT",
                                       "message": {"role": "assistant"}})  # fmt: skip
            return
        if self.mode.startswith("json-"):  # Event.json the host must refuse
            yield _bad_json(self.mode, ex, start.start.json_events)
            return
        if self.mode == "no-end":
            yield ev(kind="EVENT_OUTPUT", message={"role": "assistant"})
            return
        if self.mode == "two-ends":
            yield ev(kind="EVENT_OUTPUT", message={"role": "assistant"})
            yield ev(kind="EVENT_END", end={"state": "COMPLETED"})
            yield ev(kind="EVENT_END", end={"state": "COMPLETED"})
            return
        call = {"id": "c1", "tool": "append", "args": {"line": "x"}, "mediation": GATED,
                "idempotency_key": "k-c1"}  # fmt: skip
        yield ev(kind="EVENT_TOOL_CALL", tool=call)
        frame = next(frames)
        seen.append(frame.WhichOneof("frame"))
        if frame.WhichOneof("frame") == "park":
            self.parks.append(frame.park)
            ref = {"execution_id": frame.park.execution_id, "tool_call_id": "c1",
                   "request_seq": frame.park.request_seq}  # fmt: skip
            if self.mode == "foreign-ack":
                ref["tool_call_id"] = "someone-else"
            context.add_callback(lambda: self.ended.put(context.is_active()))
            yield ev(kind="EVENT_PARKED", parked=ref)
            return
        if frame.WhichOneof("frame") == "approval":
            frame = next(frames)
            seen.append(frame.WhichOneof("frame"))
        yield ev(kind="EVENT_OUTPUT", message={"role": "assistant", "parts": [
            {"text": {"text": f"got {frame.tool.code or 'ok'}"}}]})  # fmt: skip
        yield ev(kind="EVENT_END", end={"state": "COMPLETED"})


def _bad_json(mode: str, ex: str, asked: bool) -> common_pb2.Event:
    """An event as JSON that is not exactly one canonical Event (the host asked for JSON)."""
    assert asked  # the host's Start says it reads Event.json
    if mode == "json-garbage":
        return common_pb2.Event(json=b"{not json")
    if mode == "json-beside":  # another field set beside it
        return common_pb2.Event(execution_id=ex, json=b'{"kind":"EVENT_OUTPUT"}')
    # a field an Event does not have
    return common_pb2.Event(json=b'{"execution_id":"%s","kind":"EVENT_USAGE",'
                                 b'"usage":{"tokens":5}}' % ex.encode())  # fmt: skip


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    servicer = Peer()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    harness_pb2_grpc.add_HarnessServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    address = _socket("peer")
    server.add_insecure_port(address)
    server.start()
    static_remotes([f"peer={address}"])
    yield servicer
    server.stop(0)


def test_park_then_approval_before_tool_on_the_decided_resume(tmp_path: Path, peer: Peer) -> None:
    peer.mode, peer.seen[:] = "good", []
    effects = tmp_path / "effects.txt"
    engine, uid = _parked(tmp_path, "peer", effects)
    with engine:
        park = peer.parks[-1]
        assert (park.tool_call_id, park.request_seq) == ("c1", 4)
        assert park.execution_id == next(iter(engine.read(uid))).event["execution_id"]
        engine.approve(uid, approved=True)
        last = _resume(engine, uid)
        assert last.turn is not None and last.turn.outputs == ("got ok",)
        assert peer.seen[-1] == ["start", "approval", "tool"]
        assert _lines(effects) == 1
        assert engine.rerun(uid).identical
        assert peer.seen[-1] == ["start", "approval", "tool"]  # replay re-sends the pair
        assert _lines(effects) == 1


def test_a_foreign_park_ack_is_refused_and_the_durable_request_stays(
    tmp_path: Path, peer: Peer
) -> None:
    peer.mode = "foreign-ack"
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    with engine:
        effects = tmp_path / "effects.txt"
        uid = engine.create(harness="peer", tools=_workload(tmp_path, effects, "approval")).uid
        with pytest.raises(HarnessAckError) as info:
            engine.run(uid, ["go"])
        assert info.value.exit_code == 23 and info.value.fields["request_seq"] == 4
        assert "did not acknowledge the park of tool call c1" in str(info.value)
        assert peer.ended.get(timeout=30) is False  # the host ended the stream
        # the request stays, and no terminal event follows the open intent
        assert _kinds(engine, uid) == ["EXECUTION_START", "INPUT", "TOOL_CALL",
                                       "APPROVAL_REQUEST"]  # fmt: skip
        assert engine.get(uid).pending_approval is not None  # type: ignore[attr-defined]
        peer.mode = "good"  # fixed: the decision and resume complete the turn
        engine.approve(uid, approved=False)
        assert _resume(engine, uid).turn is not None
        assert _kinds(engine, uid)[-2:] == ["OUTPUT", "END"] and _lines(effects) == 0


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("two-ends", "sent EVENT_END after EVENT_END"),
        ("input", "sent EVENT_INPUT, which a harness never sends here"),
        ("foreign-id", "an event of execution 'another'"),
        ("no-end", "closed the stream without EVENT_END"),
        ("json-garbage", "an event sent as JSON is not JSON"),
        ("json-beside", "an event sent as JSON has other fields set beside it"),
        ("json-unknown", "an event sent as JSON is not an agentsessions.v1 Event"),
    ],
)
def test_a_peer_that_breaks_the_protocol_fails_its_turn_and_the_server_stays_up(
    tmp_path: Path, peer: Peer, mode: str, says: str
) -> None:
    peer.mode = mode
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        first = engine.run(harness="echo", inputs=["kept"])  # a committed turn before
        uid = engine.create(harness="peer").uid
        with pytest.raises(HarnessProtocolError) as info:
            engine.run(uid, ["go"])
        assert says in str(info.value) and info.value.exit_code == 14
        assert _kinds(engine, uid)[-1] == "ERROR"  # journaled as any failed harness
        assert _kinds(engine, first.uid)[-1] == "END"
        assert verify_session(engine.store, uid).ok  # type: ignore[attr-defined]
        peer.mode = "good"  # the same server serves the next stream
        with pytest.raises(ApprovalParkedError):
            engine.run(engine.create(harness="peer", tools=_workload(
                tmp_path, tmp_path / "e.txt", "approval")).uid, ["go"])  # fmt: skip


# --------------------------------------------------------------------------- the node's side


@pytest.fixture(scope="module")
def echo_node() -> Iterator[harness_pb2_grpc.HarnessStub]:
    server = HarnessServer(HARNESSES.factory("chat"), _socket("chat"))
    channel = grpc.insecure_channel(server.address)
    yield harness_pb2_grpc.HarnessStub(channel)  # type: ignore[no-untyped-call]
    channel.close()
    server.stop(0)


def _frame(**kw: Any) -> harness_pb2.ControllerFrame:
    return harness_pb2.ControllerFrame(session="s1", execution_id="e1", **kw)


def _start() -> harness_pb2.ControllerFrame:
    text = common_pb2.Message(role="user", parts=[common_pb2.Part(
        text=common_pb2.TextPart(text="hi"))])  # fmt: skip
    return _frame(start=harness_pb2.Start(inputs=[text]))


class Host:
    """A host side written frame by frame."""

    def __init__(self, stub: harness_pb2_grpc.HarnessStub) -> None:
        self.frames: queue.Queue[harness_pb2.ControllerFrame | None] = queue.Queue()
        self.events = stub.Connect(iter(self.frames.get, None))

    def send(self, frame: harness_pb2.ControllerFrame) -> None:
        self.frames.put(frame)

    def next(self) -> common_pb2.Event:
        return next(self.events)

    def status(self) -> grpc.StatusCode:
        with pytest.raises(grpc.RpcError) as info:
            while True:
                self.next()
        self.frames.put(None)
        return info.value.code()  # type: ignore[no-any-return]


def _model_result(call_id: str, text: str) -> harness_pb2.ModelResult:
    return harness_pb2.ModelResult(
        model_call_id=call_id,
        message=common_pb2.Message(
            role="assistant", parts=[common_pb2.Part(text=common_pb2.TextPart(text=text))]
        ),
    )


def test_the_node_runs_one_execution_per_stream(echo_node: harness_pb2_grpc.HarnessStub) -> None:
    described = echo_node.Describe(harness_pb2.DescribeRequest())
    assert described.id == "chat" and described.capabilities.resumability == 1
    host = Host(echo_node)
    host.send(_start())
    call = host.next()
    assert call.kind == common_pb2.EVENT_MODEL_CALL and call.execution_id == "e1"
    assert call.model.messages[-1].parts[0].text.text == "hi"
    host.send(_frame(model=_model_result(call.model.id, "hello")))
    end = host.next()
    assert end.kind == common_pb2.EVENT_END and end.end.state == "COMPLETED"
    host.frames.put(None)
    assert next(host.events, None) is None  # exactly one END, then the stream closes


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ("first frame not start", grpc.StatusCode.FAILED_PRECONDITION),
        ("another execution id", grpc.StatusCode.INVALID_ARGUMENT),
        ("another session", grpc.StatusCode.INVALID_ARGUMENT),
        ("a wrong model call id", grpc.StatusCode.FAILED_PRECONDITION),
        ("a tool result for a model call", grpc.StatusCode.FAILED_PRECONDITION),
        ("a second start", grpc.StatusCode.FAILED_PRECONDITION),
        ("a park for a model call", grpc.StatusCode.FAILED_PRECONDITION),
    ],
)
def test_a_host_that_sends_frames_out_of_order_gets_the_right_status(
    echo_node: harness_pb2_grpc.HarnessStub, bad: str, code: grpc.StatusCode
) -> None:
    host = Host(echo_node)
    if bad == "first frame not start":
        host.send(_frame(cancel=harness_pb2.Cancel(reason="x")))
        assert host.status() == code
    else:
        host.send(_start())
        call = host.next()
        if bad in ("another execution id", "another session"):
            session, execution = ("s1", "e2") if bad == "another execution id" else ("s2", "e1")
            result = _model_result(call.model.id, "x")
            wrong = harness_pb2.ControllerFrame(
                session=session, execution_id=execution, model=result
            )
        elif bad == "a wrong model call id":
            wrong = _frame(model=_model_result("not-the-call", "x"))
        elif bad == "a tool result for a model call":
            wrong = _frame(tool=common_pb2.ToolResult(id="c1"))
        elif bad == "a second start":
            wrong = _start()
        else:
            wrong = _frame(park=common_pb2.ApprovalRef(execution_id="e1", tool_call_id="c1",
                                                       request_seq=3))  # fmt: skip
        host.send(wrong)
        assert host.status() == code
    test_the_node_runs_one_execution_per_stream(echo_node)  # the node still serves


def test_a_failing_harness_ends_its_stream_failed(
    echo_node: harness_pb2_grpc.HarnessStub,
) -> None:
    host = Host(echo_node)
    host.send(_frame(start=harness_pb2.Start(config=b"{not json")))
    end = host.next()
    assert end.kind == common_pb2.EVENT_END and end.end.state == "FAILED"
    assert end.end.error.code == 13 and end.end.error.description
    host.frames.put(None)


def test_a_remote_harness_that_fails_raises_harness_error(tmp_path: Path) -> None:
    server = HarnessServer(HARNESSES.factory("chat"), _socket("fail"))
    static_remotes([f"r-chat-fail={server.address}"])
    try:
        with agentsessions.open(tmp_path / "home", runtime="local") as engine:
            with pytest.raises(HarnessError) as info:
                engine.run(harness="r-chat-fail", inputs=["x"], config=b"{not json")
            assert "ended the turn FAILED" in str(info.value)
    finally:
        server.stop(0)


def test_a_cancel_frame_ends_the_execution_canceled(
    echo_node: harness_pb2_grpc.HarnessStub,
) -> None:
    host = Host(echo_node)
    host.send(_start())
    assert host.next().kind == common_pb2.EVENT_MODEL_CALL
    host.send(_frame(cancel=harness_pb2.Cancel(reason="the user asked")))
    end = host.next()
    assert end.kind == common_pb2.EVENT_END and end.end.state == "CANCELED"
    assert "the user asked" in end.end.error.description
    host.frames.put(None)


def test_the_remote_runtime_hosts_only_remote_harnesses(tmp_path: Path, tool_line: str) -> None:
    from agentsessions.errors import PlacementError
    from agentsessions.runtimes import create_runtime
    from agentsessions.runtimes.remote import RemoteRuntime

    runtime = create_runtime("remote", home=tmp_path)
    assert isinstance(runtime, RemoteRuntime) and not runtime.capabilities().memory_snapshot
    with pytest.raises(PlacementError):
        runtime.create("s1", HARNESSES.factory("echo"))
    compute = runtime.create("s2", HARNESSES.factory(tool_line))
    assert compute.harness.describe().id == "tool-line"
    assert runtime.snapshot("s2", compute).memory is False  # cold: rebuilt by replay
    with agentsessions.open(tmp_path / "home", runtime="remote") as engine:
        turn = engine.run(harness=tool_line, inputs=["go"]).turn
        assert turn is not None and turn.outputs == ("",)


class Paused:
    """A harness that answers once, then waits for the test before its output."""

    reached = threading.Event()
    go = threading.Event()

    def describe(self) -> Any:
        from agentsessions.controller.spi import HarnessDescriptor

        return HarnessDescriptor(id="paused", version="1")

    def run(self, start: Any, sink: Any) -> None:
        from agentsessions.controller.spi import ModelRequest

        sink.model(ModelRequest(model="", messages=tuple(start.inputs)))
        Paused.reached.set()
        assert Paused.go.wait(60), "the test never let the harness go on"
        sink.output({"role": "assistant", "parts": [{"text": {"text": "late"}}]})


def test_a_cancel_lands_on_a_remote_turn_at_its_next_effect(tmp_path: Path) -> None:
    server = HarnessServer(Paused, _socket("paused"))
    static_remotes([f"r-paused={server.address}"])
    outcome: list[Any] = []
    try:
        with agentsessions.open(tmp_path / "home", runtime="local") as engine:
            uid = engine.create(harness="r-paused").uid
            worker = threading.Thread(target=lambda: outcome.append(engine.run(uid, ["hi"])))
            worker.start()
            assert Paused.reached.wait(60)
            canceling = threading.Thread(target=lambda: engine.cancel(uid, wait=60))
            canceling.start()
            while not engine.store.cancel_requested(uid):  # type: ignore[attr-defined]
                threading.Event().wait(0.01)
            Paused.go.set()  # its output is the next effect: the cancel stops it there
            worker.join(60)
            canceling.join(60)
            assert outcome and outcome[0].turn.canceled
            assert _kinds(engine, uid)[-3:] == ["OUTPUT", "LIFECYCLE", "END"]
            assert "late" not in str(list(engine.read(uid)))
            report = engine.rerun(uid)  # stopped again at that output, remotely
            assert report.identical, report.divergence
            assert (report.replayed, report.model_calls) == (1, 0)
    finally:
        server.stop(0)


def test_the_history_cache_converts_only_what_changed() -> None:
    cache = wire.HistoryCache(size=2)
    made: list[int] = []

    def make(item: int) -> str:
        made.append(item)
        return f"<{item}>"

    assert cache.convert("s", [1, 2, 3], lambda i: i, make) == ["<1>", "<2>", "<3>"]
    assert cache.convert("s", [1, 2, 3, 4], lambda i: i, make) == ["<1>", "<2>", "<3>", "<4>"]
    assert made == [1, 2, 3, 4]  # the prefix came from the cache
    assert cache.convert("s", [1, 9, 3], lambda i: i, make) == ["<1>", "<9>", "<3>"]
    assert made[-1] == 9  # a changed event is converted again, the rest kept
    cache.convert("a", [5], lambda i: i, make)
    cache.convert("b", [6], lambda i: i, make)  # "s" is now the least recent: dropped
    made.clear()
    assert cache.convert("s", [1], lambda i: i, make) == ["<1>"] and made == [1]
