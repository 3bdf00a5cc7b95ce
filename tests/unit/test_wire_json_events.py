"""Events as ``Event.json`` read as the same dicts as events sent field by field.

An event crosses as JSON only when the receiver said it reads it (a node's own events, only
when its fast schema check finds them canonical and plain); the receiver gets the dict the
field-by-field path gives (the golden vectors, the Go fixture's events, Hypothesis events, a
Start's history), reads JSON that is not canonical through the message (normalised, or
refused as the message path refuses it), and an old peer (nothing declared) gets every event
field by field.
"""

from __future__ import annotations

import queue
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import given
from test_canonical import SETTINGS, canonical_events, typed
from test_wire_fastconv import CHAT_TURN, FIXTURE, VECTORS

from agentsessions.controller.history import StoreHistory, WriterHistory
from agentsessions.controller.spi import Start, ToolSpec
from agentsessions.errors import HarnessProtocolError
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, WorkingState, new_uid
from agentsessions.journal.tools import interchange
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.v1.schema import validate_event
from agentsessions.wire import harnesswire as wire
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_pb2_grpc
from agentsessions.wire.harnessnode import HarnessServer
from agentsessions.wire.historysync import Mark, NodeHistories


def _same_either_way(event: dict[str, Any]) -> None:
    """As JSON (when canonical) the receiver reads what the message path gives: the same
    dict, hashed to the same canonical bytes."""
    fields = wire.event_to_proto(event)
    want = wire.event_dict(fields)
    as_json = wire.event_to_wire(event, True)
    assert bool(as_json.json) == validate_event(event)  # canonical and plain: as JSON
    assert not wire.event_to_wire(event, False).json  # an old peer: field by field
    sent = common_pb2.Event(json=canonical.canonical_json(event))  # another sender's JSON
    for msg in (as_json, sent):
        got = wire.event_dict(msg)
        assert typed(got) == typed(want)
        assert canonical.canonical_json(got) == canonical.canonical_json(want)


@pytest.mark.parametrize("event", VECTORS, ids=range(len(VECTORS)))
def test_golden_events_read_the_same_as_json(event: dict[str, Any]) -> None:
    _same_either_way(event)


def test_the_go_fixture_s_events_read_the_same_as_json() -> None:
    for record in interchange.parse_go_records(FIXTURE.read_bytes()):
        _same_either_way(record.event)


@SETTINGS
@given(canonical_events)
def test_any_event_reads_the_same_as_json(event: dict[str, Any]) -> None:
    _same_either_way(event)


LOOSE = {"kind": "EVENT_USAGE", "execution_id": "e1", "usage": {"input_tokens": 5}}
"""Valid proto3-JSON, not canonical: an int64 as a number."""


def test_an_event_not_canonical_goes_field_by_field_and_is_normalised() -> None:
    msg = wire.event_to_wire(LOOSE, True)
    assert not msg.json
    assert wire.event_dict(msg)["usage"] == {"input_tokens": "5"}  # as before


def test_json_not_canonical_is_read_through_the_message() -> None:
    got = wire.event_dict(wire.event_as_json(LOOSE))
    assert got == wire.event_dict(wire.event_to_proto(LOOSE))
    assert got["usage"] == {"input_tokens": "5"}


def _with_unknown(data: bytes) -> common_pb2.Event:
    """An Event.json with a field this schema does not know beside it (field 5000, a
    varint 1), as a peer built on a later schema might send."""
    return common_pb2.Event.FromString(
        common_pb2.Event(json=data).SerializeToString() + b"\xc0\xb8\x02\x01"
    )


def test_an_event_s_wire_size_is_that_of_its_json_alone() -> None:
    for n in (1, 127, 128, 16383, 16384, 1 << 21):
        assert wire.json_event_size(n) == common_pb2.Event(json=b"x" * n).ByteSize()


@pytest.mark.parametrize(
    ("msg", "says"),
    [
        (common_pb2.Event(json=b"{1"), "not JSON"),
        (common_pb2.Event(json=b"[1, 2]"), "not an agentsessions.v1 Event"),
        (common_pb2.Event(json=b'{"kind":"EVENT_NOPE"}'), "not an agentsessions.v1 Event"),
        (common_pb2.Event(json=b'{"kind":"EVENT_END","end":{}}', kind=1), "beside it"),
        (_with_unknown(b'{"kind":"EVENT_END","end":{}}'), "beside it"),
    ],
)
def test_json_that_is_not_one_canonical_event_is_refused(msg: common_pb2.Event, says: str) -> None:
    with pytest.raises(HarnessProtocolError, match=says):
        wire.event_dict(msg)


def _start(history: list[dict[str, Any]]) -> Start:
    return Start(execution_id="e2", config=b"", inputs=(), history=wire.ListHistory(history))


def test_a_start_s_history_as_json_is_the_history_sent_field_by_field() -> None:
    start = _start(CHAT_TURN)
    as_json = wire.start_to_proto(start, "s1", json=True)
    fields = wire.start_to_proto(start, "s2", json=False)
    assert all(e.json for e in as_json.history) and not any(e.json for e in fields.history)
    assert as_json.json_events and fields.json_events  # this host reads JSON either way
    read = [list(wire.start_from_proto("e2", m, s).history) for m, s in
            ((as_json, "s1"), (fields, "s2"))]  # fmt: skip
    assert read[0] == read[1] == CHAT_TURN


def test_a_start_with_a_base_carries_only_the_new_events_as_json() -> None:
    kept = NodeHistories()
    base, head = Mark(1, 2, "h2"), Mark(1, 5, "h5")
    kept.put("s1", base, CHAT_TURN[:2], 100)
    msg = wire.start_to_proto(_start(CHAT_TURN), "s1", base, head, json=True)
    assert len(msg.history) == 3 and all(e.json for e in msg.history)
    assert list(wire.start_from_proto("e2", msg, "s1", kept).history) == CHAT_TURN
    assert kept.holds("s1") == head
    assert kept.bytes == 100 + sum(e.ByteSize() for e in msg.history)


def test_a_start_leaves_default_parts_unset_and_they_read_as_defaults() -> None:
    bare = wire.start_to_proto(_start(CHAT_TURN), "s1", json=True)
    assert not bare.HasField("state") and not bare.tools
    read = wire.start_from_proto("e2", bare, "s1")
    assert read.state == WorkingState() and read.tools == ()
    state = WorkingState(3, b"mem", 1, 4, "host", 7)
    tool = ToolSpec("echo", "echoes", "MEDIATION_CONTROLLER_MEDIATED", {"type": "object"})
    full = replace(_start(CHAT_TURN), state=state, tools=(tool,))
    again = wire.start_from_proto("e2", wire.start_to_proto(full, "s1", json=True), "s1")
    assert again.state == state and again.tools == (tool,)


class _Journal:
    """A held writer's reads, served by a store (the RecordSource of a WriterHistory); it
    refuses to decode, as the Start must not need it to."""

    def __init__(self, store: MemoryStore, uid: str) -> None:
        self.store, self.uid = store, uid

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        return self.store.read(self.uid, from_seq, to_seq)

    def events(self, from_seq: int, to_seq: int = 0) -> list[dict[str, Any]]:
        raise AssertionError("the history was decoded to be sent")


def test_a_history_the_journal_serves_crosses_as_its_stored_bytes() -> None:
    store = MemoryStore()
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as writer:
        writer.append(CHAT_TURN)
    stored = [r.event_json for r in store.read(uid, 1, len(CHAT_TURN))]
    base, head = Mark(1, 2, "h2"), Mark(1, len(CHAT_TURN), "h5")
    for history in (StoreHistory(store, uid, len(CHAT_TURN)),
                    WriterHistory(_Journal(store, uid), len(CHAT_TURN))):  # fmt: skip
        start = Start(execution_id="e2", config=b"", inputs=(), history=history)
        whole = wire.start_to_proto(start, "s1", json=True)
        assert [e.json for e in whole.history] == stored  # not decoded and encoded again
        assert list(wire.start_from_proto("e2", whole, "s1").history) == CHAT_TURN
        kept = NodeHistories()
        kept.put("s1", base, CHAT_TURN[:2], 100)
        new = wire.start_to_proto(start, "s1", base, head, json=True)
        assert [e.json for e in new.history] == stored[2:]
        assert list(wire.start_from_proto("e2", new, "s1", kept).history) == CHAT_TURN


# --------------------------------------------------------------------------- a node


@pytest.fixture(scope="module")
def node() -> Iterator[harness_pb2_grpc.HarnessStub]:
    home = tempfile.mkdtemp(prefix="ash-json-")
    server = HarnessServer(HARNESSES.factory("chat"), f"unix://{Path(home) / 'n.sock'}")
    channel = grpc.insecure_channel(server.address)
    yield harness_pb2_grpc.HarnessStub(channel)  # type: ignore[no-untyped-call]
    channel.close()
    server.stop(0)


def _run(stub: harness_pb2_grpc.HarnessStub, start: harness_pb2.Start) -> list[Any]:
    """Run one execution on a Connect stream, answering the model call with ``ok``."""
    frames: queue.Queue[harness_pb2.ControllerFrame | None] = queue.Queue()
    envelope = {"session": "s1", "execution_id": "e1"}
    frames.put(harness_pb2.ControllerFrame(start=start, **envelope))
    got: list[Any] = []
    for msg in stub.Connect(iter(frames.get, None)):
        got.append(msg)
        event = wire.event_dict(msg)
        if event["kind"] == "EVENT_MODEL_CALL":
            ok = {"role": "assistant", "parts": [{"text": {"text": "ok"}}]}
            result = harness_pb2.ModelResult(
                model_call_id=event["model"]["id"], message=wire.parse(ok, common_pb2.Message, "")
            )
            frames.put(harness_pb2.ControllerFrame(model=result, **envelope))
    frames.put(None)
    return got


def test_a_node_sends_json_only_to_a_host_that_reads_it(
    node: harness_pb2_grpc.HarnessStub,
) -> None:
    assert node.Describe(harness_pb2.DescribeRequest()).json_events
    hi = wire.parse({"role": "user", "parts": [{"text": {"text": "hi"}}]}, common_pb2.Message, "")
    new = _run(node, harness_pb2.Start(inputs=[hi], json_events=True))
    old = _run(node, harness_pb2.Start(inputs=[hi]))
    assert [bool(m.json) for m in new] == [True] * len(new) and not any(m.json for m in old)
    assert [wire.event_dict(m) for m in new] == [wire.event_dict(m) for m in old]
    assert [wire.event_dict(m)["kind"] for m in new][-1] == "EVENT_END"


def test_a_node_refuses_a_history_event_that_is_not_an_event(
    node: harness_pb2_grpc.HarnessStub,
) -> None:
    bad = common_pb2.Event(json=b'{"kind":"EVENT_USAGE","usage":{"tokens":5}}')
    with pytest.raises(grpc.RpcError) as info:
        _run(node, harness_pb2.Start(history=[bad], json_events=True))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not an agentsessions.v1 Event" in str(info.value.details())
