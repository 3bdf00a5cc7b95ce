"""A harness node keeps each session's history; a Start carries only what is new.

Real gRPC servers in process, the chat harness behind them. What is checked: the history a
served harness sees is the journal's prefix, event for event, whatever crossed (whole or
only the new events); a node that lost its cache (evicted, restarted, bounded) and a fence
change (another controller took the session) get the whole history again, never a wrong
one; the model inputs recorded are those of the same session in process, and the session
replays identical over the wire, each replayed execution's Start carrying only what is new
under the session's rerun key. Plus the node's and the host's bookkeeping alone.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.controller.spi import Sink, Start
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.described import described
from agentsessions.wire.gen import harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnessclient import RemoteHarness, channel
from agentsessions.wire.harnessnode import HarnessServer
from agentsessions.wire.historysync import (
    MISS,
    TRAILER,
    HistoryMiss,
    Mark,
    NodeHistories,
    SentHistories,
)
from harnesses.chat import ChatHarness

SEEN: list[list[dict[str, Any]]] = []
NAMES = itertools.count()


class ProbeHarness(ChatHarness):
    """The chat harness, noting the whole history each run was handed."""

    def run(self, start: Start, sink: Sink) -> None:
        SEEN.append(list(start.history))
        super().run(start, sink)


HARNESSES.register("history-probe", ProbeHarness)


@dataclass
class LoggedHistories(NodeHistories):
    """A node's real history cache that notes how each Start's history arrived."""

    log: list[tuple[str, int]] = field(default_factory=list)

    def extend(self, uid: str, base: Mark, head: Mark, events: list[Any], size: int) -> list[Any]:
        try:
            out = super().extend(uid, base, head, events, size)
        except HistoryMiss:
            self.log.append(("miss", base.seq))
            raise
        self.log.append(("new", len(events)))
        return out

    def put(self, uid: str, head: Mark, events: list[Any], size: int) -> None:
        self.log.append(("whole", len(events)))
        super().put(uid, head, events, size)


def _socket(tag: str) -> str:
    # a short path: a unix socket's path is limited to ~107 bytes, pytest's tmp_path is long
    return f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{tag}.sock"


@dataclass
class Node:
    """A served probe harness, registered under ``name``; ``restart`` replaces the process."""

    name: str
    address: str
    kept: LoggedHistories
    server: HarnessServer

    def restart(self, kept: LoggedHistories | None = None) -> None:
        self.server.stop(0)
        self.kept = kept or LoggedHistories()
        self.server = HarnessServer(
            HARNESSES.factory("history-probe"), self.address, kept=self.kept
        )


@pytest.fixture
def node() -> Iterator[Node]:
    kept = LoggedHistories()
    address = _socket("probe")
    server = HarnessServer(HARNESSES.factory("history-probe"), address, kept=kept)
    name = f"probe-{next(NAMES)}"
    static_remotes([f"{name}={server.address}"])
    made = Node(name, server.address, kept, server)
    yield made
    made.server.stop(0)


def _journal(engine: Sessions, uid: str) -> list[dict[str, Any]]:
    return [r.event for r in engine.read(uid)]


def _turns(engine: Sessions, uid: str, n: int, tag: str = "t") -> None:
    for i in range(n):
        engine.run(uid, [f"{tag} {i}"])
        history = SEEN[-1]
        assert history == _journal(engine, uid)[: len(history)]  # the journal's prefix
        assert history[-1]["kind"] == "EVENT_END"  # ... all of it, to the last turn's end


def test_a_session_s_next_start_carries_only_what_is_new(tmp_path: Path, node: Node) -> None:
    with agentsessions.open(tmp_path, runtime="local") as engine:
        uid = engine.run(harness=node.name, inputs=["hello"]).uid
        _turns(engine, uid, 6)
        # the first turn has no history; the second crosses whole (the node had nothing),
        # then each carries the 5 events the previous turn added
        assert node.kept.log == [("whole", 5)] + [("new", 5)] * 5
        # it holds what the last Start ended at: seq 30, its chain hash, the writer's fence
        assert node.kept.holds(uid) == Mark(engine.get(uid).fence, 30, _hash_at(engine, uid, 30))


def _hash_at(engine: Sessions, uid: str, seq: int) -> str:
    return next(r.content_hash for r in engine.read(uid, from_seq=seq, to_seq=seq))


def test_the_model_inputs_match_in_process_and_the_session_replays_identical(
    tmp_path: Path, node: Node
) -> None:
    with agentsessions.open(tmp_path, runtime="local") as engine:
        local = engine.run(harness="chat", inputs=["hello"]).uid
        remote = engine.run(harness=node.name, inputs=["hello"]).uid
        for i in range(12):
            engine.run(local, [f"t {i}"])
            engine.run(remote, [f"t {i}"])
        assert ("new", 5) in node.kept.log

        def inputs(uid: str) -> list[str]:
            return [
                str(e["model"]["input_hash"])
                for e in _journal(engine, uid)
                if e["kind"] == "EVENT_MODEL_CALL"
            ]

        assert inputs(remote) == inputs(local)  # each request was built on the same history
        report = engine.rerun(remote)  # the node keeps the rerun's history too
        assert report.identical, report.divergence
        assert (report.replayed, report.model_calls) == (13, 0)


def test_a_rerun_sends_each_replayed_execution_only_what_is_new(tmp_path: Path, node: Node) -> None:
    with agentsessions.open(tmp_path, runtime="local") as engine:
        uid = engine.run(harness=node.name, inputs=["hello"]).uid
        _turns(engine, uid, 5)
        live = node.kept.holds(uid)
        for _ in range(2):  # a second rerun starts whole again: its first history is shorter
            del node.kept.log[:], SEEN[:]
            report = engine.rerun(uid)
            assert report.identical and (report.replayed, report.model_calls) == (6, 0)
            # the first execution has no history; the second crosses whole, then each
            # carries the 5 events the execution before it added, as on the live turns
            assert node.kept.log == [("whole", 5)] + [("new", 5)] * 4
            journal = _journal(engine, uid)
            assert [len(h) for h in SEEN] == [0, 5, 10, 15, 20, 25]
            assert all(h == journal[: len(h)] for h in SEEN)  # each, the journal's prefix
        # kept apart from the live turns' history, which the next turn extends as before
        rerun = node.kept.holds(f"{uid}#rerun")
        assert rerun == Mark(0, 25, _hash_at(engine, uid, 25))
        assert node.kept.holds(uid) == live
        del node.kept.log[:]
        _turns(engine, uid, 1, "after")
        assert node.kept.log == [("new", 5)]


def test_a_node_that_lost_its_cache_gets_the_whole_history(tmp_path: Path, node: Node) -> None:
    with agentsessions.open(tmp_path, runtime="local") as engine:
        uid = engine.run(harness=node.name, inputs=["hello"]).uid
        _turns(engine, uid, 3)
        node.kept.evict(uid)  # as the bound would: the host still believes it holds 15
        _turns(engine, uid, 2, "after")
        # refused before the harness ran, then sent whole on a new stream; then new only
        assert node.kept.log[-3:] == [("miss", 15), ("whole", 20), ("new", 5)]
        assert len(SEEN[-1]) == 25


def test_a_restarted_node_is_sent_the_whole_history_at_once(tmp_path: Path, node: Node) -> None:
    with agentsessions.open(tmp_path, runtime="local") as engine:
        uid = engine.run(harness=node.name, inputs=["hello"]).uid
        _turns(engine, uid, 3)
        node.restart()  # a new process: a new node id, nothing held
        _turns(engine, uid, 2, "after")
        # its new id tells the host before the Start (no miss, no second stream) once the
        # channel has seen the old connection drop; a turn in between misses once
        assert node.kept.log[-2:] == [("whole", 20), ("new", 5)]
        assert node.kept.log[:-2] in ([], [("miss", 15)])


def test_a_fence_change_sends_the_whole_history(tmp_path: Path, node: Node) -> None:
    with agentsessions.open(tmp_path, runtime="local") as first:
        uid = first.run(harness=node.name, inputs=["hello"]).uid
        _turns(first, uid, 2)
        fence = first.get(uid).fence
        with agentsessions.open(tmp_path, runtime="local") as second:  # another controller
            _turns(second, uid, 2, "second")
            assert second.get(uid).fence > fence
        _turns(first, uid, 1, "first again")  # it takes the session back: a new fence
    assert node.kept.log == [
        ("whole", 5),
        ("new", 5),
        ("whole", 15),  # the second controller's first turn: its fence is new
        ("new", 5),
        ("whole", 25),  # and the first one's again
    ]


def test_eviction_by_the_node_s_bounds_only_costs_whole_starts(tmp_path: Path) -> None:
    kept = LoggedHistories(sessions=1)
    server = HarnessServer(HARNESSES.factory("history-probe"), _socket("one"), kept=kept)
    static_remotes([f"probe-one={server.address}"])
    try:
        with agentsessions.open(tmp_path, runtime="local") as engine:
            a = engine.run(harness="probe-one", inputs=["a"]).uid
            b = engine.run(harness="probe-one", inputs=["b"]).uid
            for i in range(3):  # each session evicts the other: every Start misses once
                _turns(engine, a, 1, f"a{i}")
                _turns(engine, b, 1, f"b{i}")
            _turns(engine, b, 1, "b again")  # b is held now: only the new events
            assert kept.holds(a) is None and kept.holds(b) is not None  # one session only
        assert kept.log[-1] == ("new", 5)
        # from the second round on, each Start's base was evicted by the other session
        assert [e for e in kept.log if e[0] == "miss"] == [("miss", 5)] * 2 + [("miss", 10)] * 2
    finally:
        server.stop(0)


def test_the_node_s_bounds_evict_least_recent_first() -> None:
    kept = NodeHistories(sessions=2, max_bytes=100)
    mark = Mark(1, 2, "h")
    kept.put("a", mark, [{}, {}], 40)
    kept.put("b", mark, [{}, {}], 40)
    kept.holds("a")
    assert kept.extend("a", mark, Mark(1, 3, "i"), [{}], 10) == [{}, {}, {}]
    kept.put("c", mark, [{}, {}], 40)  # over both bounds: b (least recent) goes
    assert (kept.holds("a"), kept.holds("b"), kept.holds("c")) == (Mark(1, 3, "i"), None, mark)
    assert kept.bytes == 90
    kept.put("d", mark, [{}] * 2, 101)  # larger than the bound alone: not kept
    assert kept.holds("d") is None and kept.bytes <= 100
    with pytest.raises(HistoryMiss):
        kept.extend("a", mark, Mark(1, 4, "j"), [{}], 1)  # a is at 3, not 2


class Chain:
    """A lineage over a fixed list of hashes (seq n has ``hashes[n - 1]``)."""

    def __init__(self, uid: str, fence: int, hashes: list[str]) -> None:
        self.uid, self.fence, self.hashes = uid, fence, hashes

    def hash_at(self, seq: int) -> str:
        return self.hashes[seq - 1] if 0 < seq <= len(self.hashes) else ""


def test_the_host_sends_from_a_mark_only_while_it_still_holds() -> None:
    sent = SentHistories(size=2)
    key = ("addr", "node", "s")
    chain = Chain("s", 3, ["h1", "h2", "h3", "h4"])
    head = Mark(3, 4, "h4")
    assert sent.base(key, chain, head) is None  # nothing accepted yet
    sent.accepted(key, Mark(3, 2, "h2"))
    assert sent.base(key, chain, head) == Mark(3, 2, "h2")
    assert sent.base(key, Chain("s", 4, chain.hashes), Mark(4, 4, "h4")) is None  # new fence
    assert sent.base(key, Chain("s", 3, ["h1", "X", "h3", "h4"]), head) is None  # other chain
    assert sent.base(key, chain, Mark(3, 1, "h1")) is None  # a mark past the head
    sent.accepted(("addr", "node", "t"), head)
    sent.accepted(("addr", "node", "u"), head)  # bounded: s, the least recent, is forgotten
    assert sent.base(key, chain, head) is None
    sent.forget(("addr", "node", "u"))
    assert sent.base(("addr", "node", "u"), chain, head) is None


def _start_frame(**start: Any) -> harness_pb2.ControllerFrame:
    return harness_pb2.ControllerFrame(
        session="sess-x", execution_id="e1", start=harness_pb2.Start(**start)
    )


def test_a_base_the_node_does_not_hold_is_refused_before_the_harness_runs(node: Node) -> None:
    stub = harness_pb2_grpc.HarnessStub(channel(node.address))  # type: ignore[no-untyped-call]
    assert stub.Describe(harness_pb2.DescribeRequest()).history_node == node.kept.node
    base, head = Mark(1, 5, "h5").to_proto(), Mark(1, 5, "h5").to_proto()
    runs = len(SEEN)
    with pytest.raises(grpc.RpcError) as caught:
        list(stub.Connect(iter([_start_frame(history_base=base, history_head=head)])))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (TRAILER, MISS) in [tuple(m) for m in caught.value.trailing_metadata()]
    assert len(SEEN) == runs  # the harness never ran
    node.kept.put("sess-x", Mark(1, 5, "h5"), [{}] * 5, 5)
    with pytest.raises(grpc.RpcError) as caught:  # 0 events cannot take 5 to 7
        seven = Mark(1, 7, "h7").to_proto()
        list(stub.Connect(iter([_start_frame(history_base=base, history_head=seven)])))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "cannot end at" in str(caught.value.details())


def test_a_descriptor_is_kept_while_the_connection_stays_up(node: Node) -> None:
    asked: list[int] = []

    def ask() -> harness_pb2.HarnessDescriptor:
        asked.append(1)
        stub = harness_pb2_grpc.HarnessStub(channel(node.address))  # type: ignore[no-untyped-call]
        reply: harness_pb2.HarnessDescriptor = stub.Describe(harness_pb2.DescribeRequest())
        return reply

    chan = channel(node.address)
    first = described(node.address, chan, ask)

    def kept() -> bool:  # kept once the channel has reported READY
        before = len(asked)
        described(node.address, chan, ask)
        return len(asked) == before

    _until(kept)
    count = len(asked)
    for _ in range(5):  # connected: kept
        assert described(node.address, chan, ask).history_node == first.history_node
    assert len(asked) == count
    # each turn describes its harness on new instances: converted once per reply
    kept_ours = RemoteHarness(node.address).describe()
    assert RemoteHarness(node.address).describe() is kept_ours
    old = node.kept.node
    node.restart()  # the connection drops: asked again, and the new node id is seen
    _until(lambda: described(node.address, chan, ask).history_node == node.kept.node)
    assert node.kept.node != old and len(asked) > count
    again = RemoteHarness(node.address)
    assert again.describe() is not kept_ours and again.node == node.kept.node


def _until(ok: Callable[[], object], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_node_that_keeps_nothing_gets_whole_histories(tmp_path: Path) -> None:
    server = HarnessServer(HARNESSES.factory("history-probe"), _socket("none"), keep_history=False)
    static_remotes([f"probe-none={server.address}"])
    try:
        stub = harness_pb2_grpc.HarnessStub(channel(server.address))  # type: ignore[no-untyped-call]
        assert stub.Describe(harness_pb2.DescribeRequest()).history_node == ""
        with agentsessions.open(tmp_path, runtime="local") as engine:
            uid = engine.run(harness="probe-none", inputs=["hello"]).uid
            _turns(engine, uid, 3)  # each Start whole, as an old node (or the Go one) is sent
            assert len(SEEN[-1]) == 15
    finally:
        server.stop(0)
