"""Every RPC of the Sessions service over a real engine and a real server on loopback (or a
Unix socket): the raw generated stub sees what a reference client sees, our client what the
local engine gives. The bad-input cases of issue 10 get INVALID_ARGUMENT, nothing written."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import agentsessions
from agentsessions.client import dial
from agentsessions.errors import ApprovalParkedError, InvalidArgumentError
from agentsessions.server.app import build_server
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import RecordFrame
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc
from tests.tool_harness import ToolLineHarness

HARNESSES.register("tool-line", ToolLineHarness)
GATE = threading.Event()


class HeldHarness:
    """Records EXECUTION_START, then waits for GATE before its model call."""

    def describe(self) -> Any:
        from agentsessions.controller.spi import HarnessDescriptor

        return HarnessDescriptor(id="held", version="1")

    def run(self, start: Any, sink: Any) -> None:
        from agentsessions.controller.spi import ModelRequest

        GATE.wait()
        sink.model(ModelRequest(model="echo", messages=(start.inputs[-1],), params=None))


HARNESSES.register("held", HeldHarness)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Sessions]:
    with agentsessions.open(tmp_path / "home", runtime="auto") as eng:
        yield eng


@pytest.fixture
def address(engine: Sessions) -> Iterator[str]:
    server = build_server(engine, "127.0.0.1:0")
    try:
        yield server.address
    finally:
        server.stop(grace=None)


@pytest.fixture
def stub(address: str) -> Iterator[session_pb2_grpc.SessionsStub]:
    with grpc.insecure_channel(address) as channel:
        yield session_pb2_grpc.SessionsStub(channel)


def _code(call: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()  # type: ignore[no-any-return, attr-defined]


def test_approve_with_approved_unset_is_invalid_argument(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    uid = engine.create().uid
    req = session_pb2.ApproveRequest(session=uid, reason="no decision")
    assert _code(lambda: stub.Approve(req)) == grpc.StatusCode.INVALID_ARGUMENT
    assert engine.get(uid).last_seq == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"count": 0},
        {"count": 129},
        {"count": 2, "child_names": ["only-one"]},
        {"count": 1, "identity": common_pb2.IdentityRef(principal="me")},
    ],
    ids=["count-0", "count-129", "names-length", "identity-set"],
)
def test_bad_forks_are_invalid_argument(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions, bad: dict[str, Any]
) -> None:
    uid = engine.run(None, ["root"]).uid
    req = session_pb2.ForkRequest(session=uid, **bad)
    assert _code(lambda: stub.Fork(req)) == grpc.StatusCode.INVALID_ARGUMENT
    assert [s.uid for s in engine.list().sessions] == [uid]  # no child was made


def _parking_workload(tmp_path: Path) -> tuple[Path, bytes]:
    workload = tmp_path / "w.toml"
    workload.write_text(
        '[tools.append]\nmediation = "approval"\nexecutor = "append_line"\n'
        f'config = {{ path = "{tmp_path / "effects.txt"}" }}\n'
    )
    call = {"id": "c1", "tool": "append", "key": "k1", "args": {"line": "hi"},
            "mediation": "MEDIATION_REQUIRES_APPROVAL"}  # fmt: skip
    return workload, json.dumps({"calls": [call]}).encode()


def test_a_parked_turn_ends_ok_with_an_awaiting_session_frame(
    stub: session_pb2_grpc.SessionsStub, address: str, engine: Sessions, tmp_path: Path
) -> None:
    workload, config = _parking_workload(tmp_path)
    uid = engine.create(harness="tool-line", tools=workload).uid
    req = session_pb2.ExecRequest(
        session=uid, inputs=[common_pb2.Message(role="user", parts=[{"text": {"text": "go"}}])],
        config=config,
    )  # fmt: skip
    updates = list(stub.Exec(req))  # a reference client: status OK, the session last
    assert updates[0].WhichOneof("update") == "session"
    last = updates[-1]
    assert last.WhichOneof("update") == "session" and last.frame.parked
    assert last.session.exec_state == session_pb2.EXEC_AWAITING
    assert last.session.pending_approval.tool_call_id == "c1"
    assert last.session.pending_approval.request_seq == 4
    with dial(address) as client:
        decided = client.approve(uid, approved=True, actor="alice")
        # Approve commits the decision only: the turn is still open until resume
        assert decided.decision.seq == 5 and decided.session.busy
        assert decided.decision.event["actor"] == {"principal": "alice"}
        done = list(client.resume(uid))[-1]
        assert done.session.exec_state == "EXEC_COMPLETED"  # type: ignore[union-attr]
        assert client.verify(uid).ok


def test_our_client_raises_what_the_local_engine_raises_on_a_park(
    address: str, engine: Sessions, tmp_path: Path
) -> None:
    workload, config = _parking_workload(tmp_path)
    uid = engine.create(harness="tool-line", tools=workload).uid
    with dial(address) as client, pytest.raises(ApprovalParkedError) as info:
        list(client.exec(uid, ["go"], config=config))
    assert (info.value.fields["tool_call_id"], info.value.fields["request_seq"]) == ("c1", 4)
    with pytest.raises(ApprovalParkedError) as local:
        list(engine.resume(uid))  # parks again: the same error, locally
    assert str(local.value) == str(info.value)


def test_a_client_that_disconnects_mid_stream_does_not_hurt_the_turn(
    address: str, engine: Sessions
) -> None:
    GATE.clear()
    channel = grpc.insecure_channel(address)
    stub = session_pb2_grpc.SessionsStub(channel)
    msg = common_pb2.Message(role="user", parts=[{"text": {"text": "hi"}}])
    call = stub.Exec(session_pb2.ExecRequest(harness="held", inputs=[msg]))
    first = next(call)
    uid = first.session.metadata.uid
    assert next(call).record.event.kind == common_pb2.EVENT_EXECUTION_START
    call.cancel()
    channel.close()  # the client is gone; the turn is held at its gate
    GATE.set()
    kinds = []
    for record in engine.follow(uid):  # blocks until the turn's END is durable
        kinds.append(record.event["kind"])
        if record.event["kind"] == "EVENT_END":
            break
    assert kinds[-1] == "EVENT_END" and "EVENT_OUTPUT" in kinds
    assert engine.get(uid).exec_state == "EXEC_COMPLETED" and engine.verify(uid).ok


def test_a_unix_socket_serves_the_same_api(engine: Sessions, tmp_path: Path) -> None:
    server = build_server(engine, f"unix://{tmp_path}/s.sock")
    try:
        assert server.address == f"unix://{tmp_path}/s.sock"
        with dial(server.address) as client:
            frames = list(client.exec(None, ["over a socket"]))
            records = [f for f in frames if isinstance(f, RecordFrame)]
            assert records[-1].record.event["kind"] == "EVENT_END"
            assert client.get(frames[0].uid).last_seq == len(records)
    finally:
        server.stop(grace=None)


@pytest.mark.parametrize("listen", ["nowhere", "host:port", "unix://relative", ":80"])
def test_a_bad_listen_address_is_refused(engine: Sessions, listen: str) -> None:
    with pytest.raises(InvalidArgumentError, match="listen address"):
        build_server(engine, listen)


def test_a_client_of_no_server_gets_unavailable_naming_the_address(tmp_path: Path) -> None:
    from agentsessions.errors import UnavailableError

    with dial(f"unix://{tmp_path}/none.sock") as client, pytest.raises(UnavailableError) as info:
        client.get("sess-" + "0" * 24)
    assert f"unix://{tmp_path}/none.sock" in str(info.value)


def _hi() -> common_pb2.Message:
    return common_pb2.Message(role="user", parts=[{"text": {"text": "hi"}}])


def test_exec_with_a_stale_expected_last_seq_is_aborted_and_writes_nothing(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    uid = engine.run(None, ["one"]).uid
    stale = session_pb2.ExecRequest(session=uid, inputs=[_hi()], expected_last_seq=3)
    with pytest.raises(grpc.RpcError) as info:
        list(stub.Exec(stale))
    assert info.value.code() == grpc.StatusCode.ABORTED  # type: ignore[attr-defined]
    assert engine.get(uid).last_seq == 5
    fresh = session_pb2.ExecRequest(session=uid, inputs=[_hi()], expected_last_seq=5)
    assert list(stub.Exec(fresh))[-1].session.last_seq == 10
    with pytest.raises(grpc.RpcError) as refused:
        list(stub.Exec(session_pb2.ExecRequest(session=uid, inputs=[_hi()], resume_from_seq=2)))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


def test_replay_streams_a_range_of_stored_records(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions
) -> None:
    uid = engine.run(None, ["one"]).uid
    got = [r.seq for r in stub.Replay(session_pb2.ReplayRequest(session=uid, from_seq=2, to_seq=4))]
    assert got == [2, 3, 4]
    assert [r.seq for r in stub.Replay(session_pb2.ReplayRequest(session=uid))] == [1, 2, 3, 4, 5]
    with pytest.raises(grpc.RpcError) as info:
        list(stub.Replay(session_pb2.ReplayRequest(session="sess-" + "0" * 24)))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]


def test_resolve_over_the_wire_keeps_the_answer_and_resumes(tmp_path: Path) -> None:
    from agentsessions.errors import ToolNotUnresolvedError, ToolOutcomeUnknownError
    from tests.tool_harness import line_call, plan
    from tests.unresolved import cut_workload

    effects, tools = tmp_path / "effects.txt", tmp_path / "tools.toml"
    tools.write_text(cut_workload(effects))
    config = plan(line_call("c1", "one"), line_call("c2", "two"))
    with agentsessions.open(tmp_path / "home") as engine:
        with pytest.raises(KeyboardInterrupt):  # c2's executor is cut after its effect
            engine.run(inputs=["go"], harness="tool-line", config=config, tools=tools)
        (uid,) = [s.uid for s in engine.list().sessions]
    with agentsessions.open(tmp_path / "home") as engine:
        server = build_server(engine, "127.0.0.1:0")
        try:
            with dial(server.address) as client:
                with pytest.raises(ToolOutcomeUnknownError):
                    list(client.resume(uid))
                ref = client.get(uid).unresolved_call
                assert ref is not None and ref.tool_call_id == "c2"
                with pytest.raises(ToolNotUnresolvedError):
                    client.resolve(uid, call_id="c1", result={"ok": True})
                with pytest.raises(InvalidArgumentError):
                    client.resolve(uid, call_id="c2")  # neither result nor failed
                done = client.resolve(uid, call_id="c2", result={"bytes": 4}, actor="ops")
                assert done.result == {"id": "c2", "output": {"bytes": 4}}
                assert done.turn is not None and done.turn.outputs[-1].endswith(
                    '\nc2: ok {"bytes": 4}'
                )
                assert done.session.unresolved_call is None and client.verify(uid).ok
        finally:
            server.stop(grace=None)
    assert effects.read_text() == "one\ntwo\n"


def test_compact_export_and_import_over_the_wire(
    address: str, engine: Sessions, tmp_path: Path
) -> None:
    from agentsessions.errors import NothingToCompactError

    with dial(address) as client:
        uid = client.run(None, ["one"], harness="chat").uid
        with pytest.raises(NothingToCompactError):
            client.compact(uid, keep_turns=2)
        for text in ("two", "three"):
            client.run(uid, [text])
        frame = client.compact(uid, keep_turns=1)
        assert frame.last and frame.turn is not None and frame.turn.model_calls == 1
        assert frame.session.last_seq == engine.get(uid).last_seq and client.verify(uid).ok
        out = tmp_path / "copy.agx"
        summary = client.export(uid, out, compress=False)
        assert summary["path"] == str(out) and summary["records"] == frame.session.last_seq
        assert out.read_bytes().startswith(b"{")  # uncompressed JSON lines, written here
        copy = client.import_(out, name="copy")
        assert copy.name == "copy" and copy.project == "default"
        same = [(r.seq, r.content_hash) for r in client.read(copy.uid)]
        assert same == [(r.seq, r.content_hash) for r in engine.read(uid)]


EMPTY: list[tuple[str, Any]] = [
    ("GetSession", session_pb2.GetSessionRequest()),
    ("DeleteSession", session_pb2.DeleteSessionRequest()),
    ("Replay", session_pb2.ReplayRequest()),
    ("Follow", session_pb2.FollowRequest()),
    ("Approve", session_pb2.ApproveRequest(approved=True)),
    ("Cancel", session_pb2.CancelRequest()),
    ("Suspend", session_pb2.SuspendRequest()),
    ("Resume", session_pb2.ResumeRequest()),
    ("ResumeStream", session_pb2.ResumeRequest()),
    ("Fork", session_pb2.ForkRequest(count=1)),
    ("Rerun", session_pb2.RerunRequest()),
    ("Compact", session_pb2.CompactRequest()),
    ("Resolve", session_pb2.ResolveRequest(call_id="c1", failed="x")),
    ("Verify", session_pb2.VerifyRequest()),
    ("ReadToolStore", session_pb2.ToolStoreRequest(tool="notes")),
    ("Export", session_pb2.ExportRequest()),
]


@pytest.mark.parametrize(("rpc", "request_"), EMPTY, ids=[name for name, _ in EMPTY])
def test_an_empty_session_id_is_invalid_argument_on_every_rpc(
    stub: session_pb2_grpc.SessionsStub, engine: Sessions, rpc: str, request_: Any
) -> None:
    def call() -> None:
        answer = getattr(stub, rpc)(request_)
        if not hasattr(answer, "ByteSize"):  # a stream: the status comes as it is read
            list(answer)

    assert _code(call) == grpc.StatusCode.INVALID_ARGUMENT
    assert engine.list().sessions == ()  # nothing was created or written


@pytest.mark.parametrize(
    "request_",
    [
        session_pb2.ListSessionsRequest(page_size=-1),
        session_pb2.ListSessionsRequest(page_token="garbage!"),
        session_pb2.ListSessionsRequest(project="a/b"),
    ],
    ids=["negative-page-size", "bad-page-token", "bad-project"],
)
def test_bad_list_requests_are_invalid_argument(
    stub: session_pb2_grpc.SessionsStub, request_: Any
) -> None:
    assert _code(lambda: stub.ListSessions(request_)) == grpc.StatusCode.INVALID_ARGUMENT


def test_a_reference_client_sees_deltas_named_by_their_execution(
    stub: session_pb2_grpc.SessionsStub,
) -> None:
    updates = list(stub.Exec(session_pb2.ExecRequest(inputs=[_hi()])))
    start = next(u.record for u in updates if u.WhichOneof("update") == "record")
    deltas = [u.delta for u in updates if u.WhichOneof("update") == "delta"]
    assert deltas and {d.execution_id for d in deltas} == {start.event.execution_id}
    assert "".join(d.chunk for d in deltas) == "echo:hi"
