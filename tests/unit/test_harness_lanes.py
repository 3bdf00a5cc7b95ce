"""Harness.Executions: executions one after another on one kept stream (docs/WIRE.md).

A host runs each execution on a node that declares ``executions`` over a stream it keeps
between turns (:mod:`agentsessions.wire.harnesslinks`): successive turns share one stream,
a stream that died while idle is replaced without running anything twice, a node past its
lane cap serves one execution per stream, a stream carries nothing but starts between
executions, and a peer that sends an event after END on it breaks the protocol. What the
journal records is what a Connect per execution records (the session reruns identical).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.errors import HarnessProtocolError
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire import harnesslinks
from agentsessions.wire import harnesswire as wire
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnesslinks import LANES, Lane
from agentsessions.wire.harnessnode import HarnessServer
from agentsessions.wire.inlinestream import InlineStream


def _socket(tag: str) -> str:
    return f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{tag}.sock"


def _kinds(engine: Any, uid: str) -> list[str]:
    return [str(r.event["kind"]).removeprefix("EVENT_") for r in engine.read(uid)]


@pytest.fixture
def node() -> Iterator[HarnessServer]:
    server = HarnessServer(HARNESSES.factory("chat"), _socket("lanes"))
    static_remotes([f"r-lanes={server.address}"])
    yield server
    server.stop(0)


def test_successive_turns_share_one_kept_stream(tmp_path: Path, node: HarnessServer) -> None:
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        uid = engine.run(harness="r-lanes", inputs=["one"]).session.uid
        (lane,) = LANES.waiting(node.address)
        for text in ("two", "three", "four"):
            turn = engine.run(uid, [text]).turn
            assert turn is not None and turn.outputs == (f"echo:{text}",)
            assert LANES.waiting(node.address) == (lane,)  # the same stream, back each time
        assert node.servicer.lanes_open == 1
        assert _kinds(engine, uid).count("END") == 4
        assert verify_session(engine.store, uid).ok  # type: ignore[attr-defined]
        report = engine.rerun(uid)  # replay's executions take the kept stream too
        assert report.identical and report.model_calls == 0
        assert LANES.waiting(node.address) == (lane,)


def test_a_host_drives_its_lanes_from_the_executions_own_thread(
    tmp_path: Path, node: HarnessServer
) -> None:
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        engine.run(harness="r-lanes", inputs=["one"])
        (lane,) = LANES.waiting(node.address)
        assert isinstance(lane.call, InlineStream)  # no grpc request or spin thread between


def test_a_stream_that_died_idle_is_replaced_and_nothing_runs_twice(
    tmp_path: Path, node: HarnessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        uid = engine.run(harness="r-lanes", inputs=["one"]).session.uid
        (lane,) = LANES.waiting(node.address)
        lane.call.end()  # the stream dies while idle (and the lane is taken as if it had not)
        monkeypatch.setattr(Lane, "active", lambda self: True)
        turn = engine.run(uid, ["two"]).turn
        assert turn is not None and turn.outputs == ("echo:two",)
        (fresh,) = LANES.waiting(node.address)
        assert fresh is not lane and not fresh.reused
        assert _kinds(engine, uid).count("MODEL_CALL") == 2  # once per turn: none repeated
        assert engine.rerun(uid).identical


def test_past_its_lane_cap_a_node_serves_one_execution_per_stream(tmp_path: Path) -> None:
    server = HarnessServer(HARNESSES.factory("chat"), _socket("cap"), workers=2)  # one lane
    static_remotes([f"r-cap={server.address}"])
    chan = grpc.insecure_channel(server.address)
    try:
        stub = harness_pb2_grpc.HarnessStub(chan)  # type: ignore[no-untyped-call]
        done = threading.Event()
        blocker = stub.Executions(_until(done))  # holds the node's one lane, idle
        while server.servicer.lanes_open < 1:  # the node has taken it
            time.sleep(0.01)
        with agentsessions.open(tmp_path / "home", runtime="local") as engine:
            uid = engine.run(harness="r-cap", inputs=["one"]).session.uid
            for text in ("two", "three"):
                turn = engine.run(uid, [text]).turn
                assert turn is not None and turn.outputs == (f"echo:{text}",)
            assert engine.rerun(uid).identical
            assert server.servicer.lanes_open == 1  # the host's streams were not kept
        done.set()
        blocker.cancel()
    finally:
        chan.close()
        server.stop(0)


def _until(done: threading.Event) -> Iterator[harness_pb2.ControllerFrame]:
    done.wait()
    yield from ()


def _start(execution_id: str) -> harness_pb2.ControllerFrame:
    return harness_pb2.ControllerFrame(
        session="s", execution_id=execution_id, start=harness_pb2.Start()
    )


def test_a_node_refuses_a_frame_other_than_start_between_executions() -> None:
    server = HarnessServer(HARNESSES.factory("echo"), _socket("echo"))
    chan = grpc.insecure_channel(server.address)
    try:
        frames: list[harness_pb2.ControllerFrame] = []
        stub = harness_pb2_grpc.HarnessStub(chan)  # type: ignore[no-untyped-call]
        lane_frames = iter(
            [
                _start("e1"),
                harness_pb2.ControllerFrame(
                    session="s", execution_id="e1", cancel=harness_pb2.Cancel(reason="late")
                ),
            ]
        )
        call = stub.Executions(lane_frames, timeout=30)
        with pytest.raises(grpc.RpcError) as caught:
            for batch in call:
                frames.extend(batch.events)  # type: ignore[arg-type]
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "the first frame must be start" in str(caught.value.details())
        kinds = [common_pb2.EventKind.Name(e.kind) for e in frames]  # type: ignore[attr-defined]
        assert kinds[-1] == "EVENT_END"
    finally:
        chan.close()
        server.stop(0)


class AfterEnd(harness_pb2_grpc.HarnessServicer):
    """Declares Executions, then sends an OUTPUT after END in the same message."""

    def Describe(self, request: Any, context: Any) -> harness_pb2.HarnessDescriptor:
        return harness_pb2.HarnessDescriptor(
            id="after-end",
            version="1",
            executions=True,
            capabilities=harness_pb2.Capabilities(resumability=1),
        )

    def Executions(self, frames: Iterator[Any], context: Any) -> Iterator[harness_pb2.Events]:
        for first in frames:
            ex = first.execution_id
            end = {"execution_id": ex, "kind": "EVENT_END", "end": {"state": "COMPLETED"}}
            out = {"execution_id": ex, "kind": "EVENT_OUTPUT", "message": {"role": "assistant"}}
            yield harness_pb2.Events(events=[wire.event_to_proto(end), wire.event_to_proto(out)])


def test_an_event_after_end_on_a_kept_stream_breaks_the_protocol(tmp_path: Path) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    harness_pb2_grpc.add_HarnessServicer_to_server(AfterEnd(), server)  # type: ignore[no-untyped-call]
    address = _socket("after")
    server.add_insecure_port(address)
    server.start()
    static_remotes([f"r-after={address}"])
    try:
        with agentsessions.open(tmp_path / "home", runtime="local") as engine:
            with pytest.raises(HarnessProtocolError, match="after EVENT_END"):
                engine.run(harness="r-after", inputs=["go"])
            assert LANES.waiting(address) == ()  # a broken stream is never kept
    finally:
        server.stop(0)


def test_the_pool_keeps_at_most_its_idle_bound() -> None:
    pool = harnesslinks.Lanes(idle=1)
    server = HarnessServer(HARNESSES.factory("echo"), _socket("pool"))
    chan = grpc.insecure_channel(server.address)
    try:
        first, second = pool.take(server.address, chan), pool.take(server.address, chan)
        first.close(clean=True)
        second.close(clean=True)  # one is idle already: this one ends
        assert pool.waiting(server.address) == (first,)
        assert pool.take(server.address, chan) is first and first.reused
        first.close(clean=False)  # not clean: ended, not kept
        assert pool.waiting(server.address) == ()
        pool.close()
    finally:
        chan.close()
        server.stop(0)


EXITS = """
import sys, tempfile
import agentsessions
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.harnessnode import HarnessServer
server = HarnessServer(HARNESSES.factory("echo"), sys.argv[1])  # never stopped
static_remotes([f"r-exit={server.address}"])
with agentsessions.open(sys.argv[2], runtime="local") as engine:
    print(engine.run(harness="r-exit", inputs=["bye"]).turn.outputs[0])
"""


def test_a_process_serving_a_node_it_keeps_a_stream_to_still_exits(tmp_path: Path) -> None:
    # the node's handler waits on the kept stream in a pool thread the interpreter joins at
    # exit: the host ends its idle streams first, so the process exits
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", EXITS, _socket("exit"), str(tmp_path / "home")],
        capture_output=True, text=True, timeout=120, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echo:bye"


def test_sessions_at_once_each_take_a_stream_and_every_turn_lands_once(
    tmp_path: Path, node: HarnessServer
) -> None:
    with agentsessions.open(tmp_path / "home", runtime="local") as engine:
        uids = [engine.run(harness="r-lanes", inputs=["one"]).session.uid for _ in range(6)]

        def turns(uid: str) -> None:
            for i in range(4):
                engine.run(uid, [f"{uid} {i}"])

        with futures.ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(turns, uids))
        assert len(LANES.waiting(node.address)) <= harnesslinks.IDLE_PER_ADDRESS
        for uid in uids:
            inputs = [
                r.event["message"]["parts"][0]["text"]["text"]
                for r in engine.read(uid)
                if r.event["kind"] == "EVENT_INPUT"
            ]
            assert inputs == ["one"] + [f"{uid} {i}" for i in range(4)]  # each once, in order
            assert _kinds(engine, uid).count("END") == 5
            assert engine.rerun(uid).identical
