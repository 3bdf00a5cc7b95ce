"""Bad wire input gets the right code, over a real in-process server (tokens, scope, the
Harness registry: what ``serve`` builds), and writes nothing (``agentsessions.server.
wirecheck``, ``.deadline``):

- every integer field the server reads is range-checked: INVALID_ARGUMENT naming the field
  (``wait_ms = 2**62`` was INTERNAL, an OverflowError in the server's log);
- a negative or past ``deadline_unix`` is DEADLINE_EXCEEDED, one past year 9999 is
  INVALID_ARGUMENT;
- bytes that do not decode are INVALID_ARGUMENT ("malformed request for METHOD") for every
  method of every service the server registers, and of a harness node;
- the table of ranges covers every integer field of every request message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

import agentsessions
from agentsessions.errors import DeadlineExceededError, InvalidArgumentError
from agentsessions.server import auth
from agentsessions.server.app import RunningServer, build_server
from agentsessions.server.registry import harness_services
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.tokens import TokenStore
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.wire import wirecheck
from agentsessions.wire.gen import (
    common_pb2,
    harness_pb2,
    harness_pb2_grpc,
    harness_registry_pb2,
    session_pb2,
    session_pb2_grpc,
)
from agentsessions.wire.harnessnode import HarnessServer
from agentsessions.wire.status import from_rpc_error

BIG = 2**62
GARBAGE = b"\xff\xff\xff\xff"  # a truncated varint: no message of any type decodes from it
PROTOS = (session_pb2, harness_pb2, harness_registry_pb2)
INTEGER = {
    FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
}  # fmt: skip


@dataclass
class Rig:
    engine: Sessions
    server: RunningServer
    token: str
    uid: str  # a session of the token's project, one turn done

    def meta(self) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {self.token}"),)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    home = tmp_path_factory.mktemp("wire") / "home"
    with agentsessions.open(home, runtime="local") as engine:
        _, interceptors, scope = auth.server_security(home, listen="127.0.0.1:0", engine=engine)
        server = build_server(
            engine,
            "127.0.0.1:0",
            interceptors=interceptors,
            scope=scope,
            extra_services=harness_services(engine),
        )
        token = TokenStore(home).create(projects=["a"])[0]
        uid = engine.run(None, ["hi"], harness="echo", project="a").session.uid
        try:
            yield Rig(engine, server, token, uid)
        finally:
            server.stop(grace=None)


@pytest.fixture(scope="module")
def channel(rig: Rig) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(rig.server.address) as ch:
        yield ch


def _text(text: str) -> common_pb2.Message:
    return common_pb2.Message(
        role="user", parts=[common_pb2.Part(text=common_pb2.TextPart(text=text))]
    )


def _state(rig: Rig) -> tuple[int, int]:
    """What a refused request must leave as it was: the session's head, the session count."""
    page = rig.engine.list(project="a", page_size=500)
    return rig.engine.get(rig.uid).last_seq, len(page.sessions)


def _fail(call: Callable[[], Any]) -> Any:
    with pytest.raises(grpc.RpcError) as info:
        result = call()
        if isinstance(result, Iterator):
            list(result)
    return info.value


S = session_pb2
Build = Callable[[str], tuple[str, Message]]
OUT_OF_RANGE: list[tuple[str, Build, str]] = [
    ("exec wait", lambda u: ("Exec", S.ExecRequest(session=u, inputs=[_text("x")], wait_ms=BIG)),
     "wait_ms"),
    ("exec wait<0", lambda u: ("Exec", S.ExecRequest(session=u, inputs=[_text("x")], wait_ms=-1)),
     "wait_ms"),
    ("exec resume_from_seq", lambda u: ("Exec", S.ExecRequest(
        session=u, inputs=[_text("x")], resume_from_seq=3)), "resume_from_seq"),
    ("exec expected<0", lambda u: ("Exec", S.ExecRequest(
        session=u, inputs=[_text("x")], expected_last_seq=-1)), "expected_last_seq"),
    ("exec deadline>9999", lambda u: ("Exec", S.ExecRequest(
        session=u, inputs=[_text("x")], deadline_unix=BIG)), "deadline_unix"),
    ("resume wait", lambda u: ("Resume", S.ResumeRequest(session=u, wait_ms=BIG)), "wait_ms"),
    ("resumestream wait", lambda u: ("ResumeStream", S.ResumeRequest(session=u, wait_ms=BIG)),
     "wait_ms"),
    ("cancel wait", lambda u: ("Cancel", S.CancelRequest(session=u, wait_ms=BIG)), "wait_ms"),
    ("cancel wait<0", lambda u: ("Cancel", S.CancelRequest(session=u, wait_ms=-5)), "wait_ms"),
    ("replay from", lambda u: ("Replay", S.ReplayRequest(session=u, from_seq=-1)), "from_seq"),
    ("replay to", lambda u: ("Replay", S.ReplayRequest(session=u, to_seq=-1)), "to_seq"),
    ("follow from", lambda u: ("Follow", S.FollowRequest(session=u, from_seq=-1)), "from_seq"),
    ("follow idle", lambda u: ("Follow", S.FollowRequest(session=u, idle_timeout_ms=BIG)),
     "idle_timeout_ms"),
    ("fork at", lambda u: ("Fork", S.ForkRequest(session=u, at_seq=-1, count=1)), "at_seq"),
    ("fork count 0", lambda u: ("Fork", S.ForkRequest(session=u, count=0)), "count"),
    ("fork count", lambda u: ("Fork", S.ForkRequest(session=u, count=2**31 - 1)), "count"),
    ("compact keep", lambda u: ("Compact", S.CompactRequest(session=u, keep_turns=-1)),
     "keep_turns"),
    ("toolstore from", lambda u: ("ReadToolStore", S.ToolStoreRequest(
        session=u, tool="notes", from_seq=-1)), "from_seq"),
    ("approve seq", lambda u: ("Approve", S.ApproveRequest(
        session=u, approved=True, request_seq=-1)), "request_seq"),
    ("list page", lambda u: ("ListSessions", S.ListSessionsRequest(page_size=-1)), "page_size"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "build", "field"), OUT_OF_RANGE, ids=[c[0] for c in OUT_OF_RANGE])
def test_an_integer_out_of_range_is_invalid_argument_naming_the_field(
    rig: Rig, channel: grpc.Channel, what: str, build: Build, field: str
) -> None:
    method, request = build(rig.uid)
    stub = session_pb2_grpc.SessionsStub(channel)
    before = _state(rig)
    err = _fail(lambda: getattr(stub, method)(request, metadata=rig.meta()))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (what, err.details())
    assert err.details().startswith(f"{field} must be "), err.details()
    assert str(getattr(request, field)) in err.details()  # the value it got
    exc = from_rpc_error(err)
    assert isinstance(exc, InvalidArgumentError) and exc.fields["field"] == field
    assert _state(rig) == before  # nothing written


def test_list_harnesses_page_size_is_range_checked(rig: Rig, channel: grpc.Channel) -> None:
    from agentsessions.wire.gen import harness_registry_pb2_grpc as reg_grpc

    stub = reg_grpc.HarnessRegistryStub(channel)
    request = harness_registry_pb2.ListHarnessesRequest(page_size=-3)
    err = _fail(lambda: stub.ListHarnesses(request, metadata=rig.meta()))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("page_size must be 0..2147483647"), err.details()


@pytest.mark.parametrize("deadline", [-1, -(2**63), 1, "past"])
def test_a_past_or_negative_deadline_is_deadline_exceeded_with_nothing_written(
    rig: Rig, channel: grpc.Channel, deadline: int | str
) -> None:
    when = int(time.time()) - 10 if deadline == "past" else int(deadline)
    stub = session_pb2_grpc.SessionsStub(channel)
    before = _state(rig)
    for uid in (rig.uid, ""):  # a turn on a session, and one that would create one
        request = S.ExecRequest(session=uid, inputs=[_text("x")], deadline_unix=when)
        err = _fail(lambda r=request: stub.Exec(r, metadata=rig.meta()))
        assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED, err.details()
        assert f"unix {when}" in err.details() and "nothing was run" in err.details()
        assert isinstance(from_rpc_error(err), DeadlineExceededError)
    assert _state(rig) == before


def test_deadline_zero_is_proto3_unset_and_means_none(rig: Rig, channel: grpc.Channel) -> None:
    stub = session_pb2_grpc.SessionsStub(channel)
    seq = rig.engine.get(rig.uid).last_seq
    request = S.ExecRequest(session=rig.uid, inputs=[_text("x")], deadline_unix=0)
    updates = list(stub.Exec(request, metadata=rig.meta()))
    assert updates[-1].session.last_seq > seq  # the turn ran


def _methods(*modules: Any) -> list[tuple[str, Any]]:
    return [
        (f"/{service.full_name}/{method.name}", method)
        for module in modules
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    ]


def _raw(channel: grpc.Channel, path: str, method: Any, meta: Any) -> Any:
    kind = (
        ("stream" if method.client_streaming else "unary")
        + "_"
        + ("stream" if method.server_streaming else "unary")
    )
    call = getattr(channel, kind)(path)  # no serializers: the bytes go as they are
    request: Any = iter([GARBAGE]) if method.client_streaming else GARBAGE
    return call(request, metadata=meta, timeout=30)


@pytest.mark.parametrize(
    ("path", "method"),
    _methods(session_pb2, harness_registry_pb2),
    ids=[p for p, _ in _methods(session_pb2, harness_registry_pb2)],
)
def test_undecodable_bytes_are_invalid_argument_for_every_method(
    rig: Rig, channel: grpc.Channel, path: str, method: Any
) -> None:
    before = _state(rig)
    err = _fail(lambda: _raw(channel, path, method, rig.meta()))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    assert err.details().startswith(f"malformed request for {path}: "), err.details()
    assert _state(rig) == before
    # without a token the caller learns nothing more than any tokenless caller does
    assert _fail(lambda: _raw(channel, path, method, ())).code() == (
        grpc.StatusCode.UNAUTHENTICATED
    )


def test_the_server_still_serves_after_garbage(rig: Rig, channel: grpc.Channel) -> None:
    for path, method in _methods(session_pb2):
        _fail(lambda p=path, m=method: _raw(channel, p, m, rig.meta()))
    stub = session_pb2_grpc.SessionsStub(channel)
    got = stub.GetSession(S.GetSessionRequest(uid=rig.uid), metadata=rig.meta())
    assert got.metadata.uid == rig.uid


def test_a_harness_node_refuses_garbage_and_out_of_range_frames(tmp_path: Path) -> None:
    server = HarnessServer(HARNESSES.factory("echo"), "127.0.0.1:0")
    try:
        with grpc.insecure_channel(server.address) as ch:
            for path, method in _methods(harness_pb2):
                err = _fail(lambda p=path, m=method: _raw(ch, p, m, ()))
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (path, err.details())
                assert err.details().startswith(f"malformed request for {path}: ")
            stub = harness_pb2_grpc.HarnessStub(ch)
            start = harness_pb2.ControllerFrame(
                session="sess-000000000000000000000001",
                execution_id="e1",
                start=harness_pb2.Start(inputs=[_text("hi")], resume_from_seq=-1),
            )
            err = _fail(lambda: stub.Connect(iter([start]), timeout=30))
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.details().startswith("start.resume_from_seq must be 0.."), err.details()
            # on a kept stream the thread that runs its executions reads the frame: the same
            err = _fail(lambda: list(stub.Executions(iter([start]), timeout=30)))
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.details().startswith("start.resume_from_seq must be 0.."), err.details()
            assert stub.Describe(harness_pb2.DescribeRequest()).id  # still serving
    finally:
        server.stop(grace=None)


# -- the table covers every integer field -------------------------------------------------


def _field(desc: Descriptor, path: str) -> FieldDescriptor:
    *through, last = path.split(".")
    for name in through:
        desc = desc.fields_by_name[name].message_type
    return desc.fields_by_name[last]


def test_every_integer_field_of_every_request_is_in_the_table_or_not_read() -> None:
    requests = {method.input_type for _, method in _methods(*PROTOS)}
    missing = []
    for desc in requests:
        listed = {path.split(".")[0] for path, _ in wirecheck.RANGES.get(desc.full_name, ())}
        for f in desc.fields:
            name = f"{desc.full_name}.{f.name}"
            if f.type in INTEGER and f.name not in listed and name not in wirecheck.NOT_READ:
                missing.append(name)
            if f.message_type is not None and f.name not in listed:
                nested = [g.name for g in f.message_type.fields if g.type in INTEGER]
                if nested and name not in wirecheck.NOT_READ:
                    missing.append(f"{name} ({', '.join(nested)})")
    assert missing == [], f"integer fields with no range and no reason: {missing}"


def test_every_path_of_the_table_names_an_integer_field_of_its_message() -> None:
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.Default()
    for message, ranges in wirecheck.RANGES.items():
        desc = pool.FindMessageTypeByName(message)
        for path, rng in ranges:
            assert _field(desc, path).type in INTEGER, (message, path)
            assert rng.lo is None or rng.lo <= rng.hi
    for name in wirecheck.NOT_READ:
        message, _, field = name.rpartition(".")
        for _ in range(2):  # a nested path (ControllerFrame.start.history) resolves too
            try:
                desc = pool.FindMessageTypeByName(message)
                break
            except KeyError:
                message, _, head = message.rpartition(".")
                field = f"{head}.{field}"
        _field(desc, field)


def test_a_wait_at_the_bound_is_accepted_and_one_past_it_is_not() -> None:
    at = S.CancelRequest(session="s", wait_ms=wirecheck.MAX_WAIT_MS)
    assert wirecheck.check(at) is None
    at.wait_ms += 1
    error = wirecheck.check(at)
    assert error is not None and error.fields == {"field": "wait_ms"}


def test_health_and_reflection_refuse_garbage_too(channel: grpc.Channel) -> None:
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    err = _fail(lambda: check(GARBAGE, timeout=30))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("malformed request for /grpc.health.v1.Health/Check: ")


def test_refused_input_leaves_no_error_in_the_servers_log(
    rig: Rig, channel: grpc.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    stub = session_pb2_grpc.SessionsStub(channel)
    with caplog.at_level("WARNING"):
        request = S.ExecRequest(session=rig.uid, inputs=[_text("x")], wait_ms=BIG)
        _fail(lambda: stub.Exec(request, metadata=rig.meta()))
        late = S.ExecRequest(session=rig.uid, inputs=[_text("x")], deadline_unix=BIG)
        _fail(lambda: stub.Exec(late, metadata=rig.meta()))
        for path, method in _methods(session_pb2):
            _fail(lambda p=path, m=method: _raw(channel, p, m, rig.meta()))
    noisy = [r for r in caplog.records if r.levelname in ("WARNING", "ERROR", "CRITICAL")]
    assert noisy == [], [r.getMessage() for r in noisy]
