"""A node's model call names the messages of the history the host holds (Event.message_seqs).

Real gRPC servers in process, the chat harness behind them. What is checked: a chat session
on a node that names its history's messages records the same journal (every MODEL_CALL's
input hash) as the same session in process and replays identical, while its calls carry
only the messages not in the history; a new host with a node that never names (an old node)
and a host that never says it reads them (an old host) with a new node get every message
whole, with the same journal; the node names a message only by its identity within its
run's history; the host refuses a call whose seqs or shape are not the protocol's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.controller.history import ListHistory
from agentsessions.errors import HarnessProtocolError
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.harnessbook import static_remotes
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire import harnessclient, messagerefs
from agentsessions.wire.gen import common_pb2
from agentsessions.wire.harnessnode import HarnessServer
from agentsessions.wire.harnessoutbox import Outbox
from agentsessions.wire.historysync import Mark, NodeHistories

CALLS: list[common_pb2.Event] = []


@pytest.fixture(autouse=True)
def _sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Note every model call a node queues for its host, as it crosses."""
    put = Outbox.put

    def noted(self: Outbox, event: common_pb2.Event) -> None:
        if b'"EVENT_MODEL_CALL"' in event.json or event.HasField("model"):
            CALLS.append(event)
        put(self, event)

    monkeypatch.setattr(Outbox, "put", noted)
    CALLS.clear()
    yield


def _node(tag: str, *, named: bool = True) -> HarnessServer:
    address = f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{tag}.sock"
    server = HarnessServer(HARNESSES.factory("chat"), address, named=named)
    static_remotes([f"{tag}={server.address}"])
    return server


def _hashes(engine: Sessions, uid: str) -> list[str]:
    return [
        str(r.event["model"]["input_hash"])
        for r in engine.read(uid)
        if r.event["kind"] == "EVENT_MODEL_CALL"
    ]


def _session(engine: Sessions, harness: str, turns: int = 8) -> str:
    uid = engine.run(harness=harness, inputs=["hello"]).uid
    for i in range(turns):
        engine.run(uid, [f"t {i}"])
    return uid


def _check_same_as_in_process(engine: Sessions, remote: str) -> None:
    local = _session(engine, "chat")
    assert _hashes(engine, remote) == _hashes(engine, local)  # the same requests recorded
    report = engine.rerun(remote)
    assert report.identical, report.divergence
    assert report.model_calls == 0


def test_a_node_names_the_history_s_messages_and_the_journal_is_the_same(tmp_path: Path) -> None:
    server = _node("named-node")
    try:
        with agentsessions.open(tmp_path, runtime="local") as engine:
            remote = _session(engine, "named-node")
            live = CALLS[:9]
            # the first call has no history; each later one names every message the
            # history holds (the last turns' inputs and outputs) and carries only the
            # system prompt and the new input
            assert not live[0].message_seqs
            for i, call in enumerate(live[1:], 1):
                seqs = list(call.message_seqs)
                assert seqs[0] == 0 and seqs[-1] == 0 and all(seqs[1:-1])
                assert len(seqs) == 2 * i + 2
                assert len(json.loads(call.json)["model"]["messages"]) == 2
            _check_same_as_in_process(engine, remote)
            assert any(c.message_seqs for c in CALLS[9:])  # the rerun names them too
    finally:
        server.stop(0)


def test_a_node_that_never_names_is_read_as_before(tmp_path: Path) -> None:
    server = _node("old-node", named=False)  # as a node before named messages
    try:
        with agentsessions.open(tmp_path, runtime="local") as engine:
            remote = _session(engine, "old-node")
            _check_same_as_in_process(engine, remote)
    finally:
        server.stop(0)
    assert CALLS and not any(c.message_seqs for c in CALLS)


def test_a_host_that_does_not_say_it_reads_them_gets_every_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = harnessclient.RemoteHarness.__init__

    def old_host(self: harnessclient.RemoteHarness, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.refs = False  # its Starts leave history_refs unset, as an old host's do

    monkeypatch.setattr(harnessclient.RemoteHarness, "__init__", old_host)
    server = _node("old-host")
    try:
        with agentsessions.open(tmp_path, runtime="local") as engine:
            remote = _session(engine, "old-host")
            _check_same_as_in_process(engine, remote)
    finally:
        server.stop(0)
    assert CALLS and not any(c.message_seqs for c in CALLS)


# --------------------------------------------------------------------------- the parts


def _input(text: str) -> dict[str, Any]:
    return {
        "kind": "EVENT_INPUT",
        "execution_id": "e0",
        "message": {"role": "user", "parts": [{"text": {"text": text}}]},
    }


def test_the_node_names_a_message_only_by_identity_within_its_history() -> None:
    kept = NodeHistories()
    events = [_input("a"), {"kind": "EVENT_END", "execution_id": "e0"}, _input("b")]
    head = Mark(1, 3, "h3")
    kept.put("s", head, events, 100)
    seqs = kept.seqs("s", head)
    assert seqs is not None and kept.seqs("s", Mark(1, 3, "other")) is None
    a, b = events[0]["message"], events[2]["message"]
    system = {"role": "system", "parts": [{"text": {"text": "hi"}}]}
    split = messagerefs.name([system, a, dict(b), b], seqs, 3)
    assert split == ([system, b], [0, 1, 0, 3])  # an equal copy is not the history's
    assert messagerefs.name([system, b], seqs, 2) is None  # past the run's end: not named
    later = [_input("c")]
    kept.extend("s", head, Mark(1, 4, "h4"), later, 50)
    assert kept.seqs("s", Mark(1, 4, "h4")) == {**seqs, id(later[0]["message"]): 4}


HISTORY = ListHistory([_input("a"), {"kind": "EVENT_END", "execution_id": "e0"}, _input("b")])


def _call(messages: list[dict[str, Any]], seqs: list[int], **extra: Any) -> common_pb2.Event:
    model: dict[str, Any] = {"id": "e1:model:1"}
    if messages:
        model["messages"] = messages
    event = {"kind": "EVENT_MODEL_CALL", "execution_id": "e1", "model": model, **extra}
    msg = messagerefs.named_event(event, seqs)
    assert msg is not None
    return msg


def test_the_host_puts_each_named_message_back_in_its_place() -> None:
    new = {"role": "user", "parts": [{"text": {"text": "c"}}]}
    event = messagerefs.resolve(_call([new], [1, 3, 0]), HISTORY)
    a, b = (HISTORY.tail(3)[i]["message"] for i in (0, 2))
    assert event["model"]["messages"] == [a, b, new]
    assert messagerefs.resolve(_call([], [3]), HISTORY)["model"]["messages"] == [b]


@pytest.mark.parametrize(
    ("seqs", "inline", "says"),
    [
        ([0, 4], 1, "outside the history"),
        ([-1, 0], 1, "outside the history"),
        ([2, 0], 1, "an event with no message"),
        ([1, 0, 0], 1, "holds 1 of its 2"),
        ([1, 3], 1, "holds 1 of its 0"),
    ],
)
def test_the_host_refuses_seqs_that_are_not_the_history_s_messages(
    seqs: list[int], inline: int, says: str
) -> None:
    message = {"role": "user", "parts": [{"text": {"text": "c"}}]}
    with pytest.raises(HarnessProtocolError, match=says):
        messagerefs.resolve(_call([message] * inline, seqs), HISTORY)


def test_the_host_refuses_named_messages_on_anything_but_a_plain_model_call_alone() -> None:
    ok = _call([], [1])
    beside = common_pb2.Event()
    beside.CopyFrom(ok)
    beside.execution_id = "e1"  # another field beside the JSON
    output = common_pb2.Event(json=json.dumps(_input("x")).encode(), message_seqs=[1])
    loose = common_pb2.Event(
        json=b'{"kind":"EVENT_MODEL_CALL","model":{"id":"x","temperature":1}}', message_seqs=[1]
    )
    for msg, says in (
        (beside, "other fields"),
        (output, "only a canonical, plain EVENT_MODEL_CALL"),
        (loose, "not valid"),
        (common_pb2.Event(message_seqs=[1]), "other fields"),
    ):
        with pytest.raises(HarnessProtocolError, match=says):
            messagerefs.resolve(msg, HISTORY)


def test_the_bytes_bench_counts_a_named_call_smaller_than_the_whole_one() -> None:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(root / "bench" / "harness_bytes.py"), "--turns", "50"],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line[:30].strip(): line[30:].split() for line in proc.stdout.splitlines()[1:]}
    whole, named = (float(v) for v in rows["node: EVENT_MODEL_CALL"][:2])
    assert named < whole / 3  # a 20-message window of short messages, at 50 turns
    assert rows["host: start"][0] == rows["host: start"][1]  # the Start is the same
