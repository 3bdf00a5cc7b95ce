"""The breaking-change gate: the protos may change only additively relative to the recorded
descriptor set ``proto/agentsessions.v1.binpb`` (the reference runs ``buf breaking``).

The checker itself is shown to catch each kind of breaking change, on descriptors mutated
here, and to let every kind of addition through.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2 as pb

from agentsessions.wire.breaking import breaking_changes
from agentsessions.wire.gen import common_pb2, harness_pb2, harness_registry_pb2, session_pb2

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "proto" / "agentsessions.v1.binpb"
F = pb.FieldDescriptorProto


def _recorded() -> pb.FileDescriptorSet:
    return pb.FileDescriptorSet.FromString(BASELINE.read_bytes())


def _current() -> pb.FileDescriptorSet:
    out = pb.FileDescriptorSet()
    for module in (common_pb2, session_pb2, harness_pb2, harness_registry_pb2):
        module.DESCRIPTOR.CopyToProto(out.file.add())
    return out


def test_current_protos_are_additive_over_the_recorded_set() -> None:
    assert breaking_changes(_recorded(), _current()) == []


def _file(s: pb.FileDescriptorSet, name: str) -> pb.FileDescriptorProto:
    return next(f for f in s.file if f.name == name)


def _msg(s: pb.FileDescriptorSet, path: str) -> pb.DescriptorProto:
    """The message ``file/Name`` (top-level messages only)."""
    file, name = path.split("/")
    return next(m for m in _file(s, file).message_type if m.name == name)


def _field(s: pb.FileDescriptorSet, path: str, name: str) -> pb.FieldDescriptorProto:
    return next(f for f in _msg(s, path).field if f.name == name)


def _enum(s: pb.FileDescriptorSet, file: str, name: str) -> pb.EnumDescriptorProto:
    return next(e for e in _file(s, file).enum_type if e.name == name)


def _rpc(s: pb.FileDescriptorSet, file: str, svc: str, name: str) -> pb.MethodDescriptorProto:
    service = next(x for x in _file(s, file).service if x.name == svc)
    return next(m for m in service.method if m.name == name)


def _remove(container: object, item: object) -> None:
    container.remove(item)  # type: ignore[attr-defined]


Mutation = Callable[[pb.FileDescriptorSet], None]
BREAKING: dict[str, tuple[Mutation, str]] = {
    "removed field": (
        lambda s: _remove(_msg(s, "common.proto/Event").field,
                          _field(s, "common.proto/Event", "execution_start")),
        "field agentsessions.v1.Event.execution_start = 19: removed",
    ),
    "renumbered field": (
        lambda s: setattr(_field(s, "common.proto/LogRecord", "fence"), "number", 6),
        "field agentsessions.v1.LogRecord.fence = 4: renumbered to 6",
    ),
    "renamed field": (
        lambda s: setattr(_field(s, "common.proto/Event", "actor"), "name", "who"),
        "field agentsessions.v1.Event.actor = 18: renamed to 'who'",
    ),
    "json_name changed": (
        lambda s: setattr(_field(s, "common.proto/Event", "execution_id"), "json_name", "eid"),
        "Event.execution_id = 2: json_name changed from 'executionId' to 'eid'",
    ),
    "retyped field": (
        lambda s: setattr(_field(s, "common.proto/LogRecord", "seq"), "type", F.TYPE_INT32),
        "field agentsessions.v1.LogRecord.seq = 1: type changed from int64 to int32",
    ),
    "field message type": (
        lambda s: setattr(_field(s, "session.proto/ApproveResponse", "decision"), "type_name",
                          ".agentsessions.v1.Event"),
        "type changed from message agentsessions.v1.LogRecord to message agentsessions.v1.Event",
    ),
    "label changed": (
        lambda s: setattr(_field(s, "common.proto/Message", "parts"), "label", F.LABEL_OPTIONAL),
        "field agentsessions.v1.Message.parts = 2: label changed from repeated to optional",
    ),
    "presence dropped": (
        lambda s: setattr(_field(s, "common.proto/ExecutionStart", "input_count"),
                          "proto3_optional", False),
        "ExecutionStart.input_count = 3: explicit presence (optional) changed",
    ),
    "left its oneof": (
        lambda s: _field(s, "common.proto/Event", "parked").ClearField("oneof_index"),
        "Event.parked = 20: oneof changed from body to (none)",
    ),
    "unreserved": (
        lambda s: _msg(s, "common.proto/Event").ClearField("reserved_range"),
        "message agentsessions.v1.Event: reserved numbers 1..1 no longer reserved",
    ),
    "removed message": (
        lambda s: _remove(_file(s, "common.proto").message_type, _msg(s, "common.proto/Usage")),
        "message agentsessions.v1.Usage: removed",
    ),
    "removed nested enum value": (
        lambda s: _msg(s, "common.proto/Lifecycle").enum_type[0].value.pop(),
        "enum value agentsessions.v1.Lifecycle.Kind.LIFECYCLE_CANCEL = 5: removed",
    ),
    "removed enum value": (
        lambda s: _enum(s, "common.proto", "EventKind").value.pop(),
        "enum value agentsessions.v1.EventKind.EVENT_PARKED = 13: removed",
    ),
    "renamed enum value": (
        lambda s: setattr(_enum(s, "session.proto", "ExecState").value[3], "name", "EXEC_WAIT"),
        "enum value agentsessions.v1.ExecState.EXEC_AWAITING = 3: renamed to 'EXEC_WAIT'",
    ),
    "renumbered enum value": (
        lambda s: setattr(_enum(s, "harness.proto", "Resumability").value[2], "number", 7),
        "RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT = 2: renumbered to 7",
    ),
    "removed enum": (
        lambda s: _file(s, "harness_registry.proto").enum_type.pop(),
        "enum agentsessions.v1.RegisterOutcome: removed",
    ),
    "removed rpc": (
        lambda s: _remove(next(x for x in _file(s, "session.proto").service).method,
                          _rpc(s, "session.proto", "Sessions", "Fork")),
        "rpc agentsessions.v1.Sessions.Fork: removed",
    ),
    "server streaming changed": (
        lambda s: setattr(_rpc(s, "session.proto", "Sessions", "Replay"),
                          "server_streaming", False),
        "rpc agentsessions.v1.Sessions.Replay: server streaming changed to False",
    ),
    "client streaming changed": (
        lambda s: setattr(_rpc(s, "harness.proto", "Harness", "Connect"),
                          "client_streaming", False),
        "rpc agentsessions.v1.Harness.Connect: client streaming changed to False",
    ),
    "request changed": (
        lambda s: setattr(_rpc(s, "session.proto", "Sessions", "GetSession"), "input_type",
                          ".agentsessions.v1.DeleteSessionRequest"),
        "rpc agentsessions.v1.Sessions.GetSession: request changed",
    ),
    "response changed": (
        lambda s: setattr(_rpc(s, "session.proto", "Sessions", "Suspend"), "output_type",
                          ".agentsessions.v1.ForkResponse"),
        "rpc agentsessions.v1.Sessions.Suspend: response changed",
    ),
    "removed service": (
        lambda s: _file(s, "harness_registry.proto").service.pop(),
        "service agentsessions.v1.HarnessRegistry: removed",
    ),
    "removed file": (
        lambda s: _remove(s.file, _file(s, "harness.proto")),
        "file harness.proto: removed",
    ),
    "package changed": (
        lambda s: setattr(_file(s, "common.proto"), "package", "agentsessions.v2"),
        "file common.proto: package changed",
    ),
    "go_package changed": (
        lambda s: setattr(_file(s, "session.proto").options, "go_package", "example.com/x"),
        "file session.proto: go_package changed",
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(BREAKING))
def test_the_checker_refuses_each_kind_of_breaking_change(kind: str) -> None:
    mutate, expected = BREAKING[kind]
    new = _recorded()
    mutate(new)
    found = breaking_changes(_recorded(), new)
    assert found, kind
    assert any(expected in line for line in found), found


def _additions(s: pb.FileDescriptorSet) -> None:
    event = _msg(s, "common.proto/Event")
    event.field.add(
        name="note", number=2000, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="note"
    )
    _file(s, "common.proto").message_type.add(name="NewThing").field.add(
        name="x", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, json_name="x"
    )
    _enum(s, "common.proto", "EventKind").value.add(name="EVENT_NEW", number=14)
    _msg(s, "common.proto/Lifecycle").enum_type[0].value.add(name="LIFECYCLE_NEW", number=6)
    sessions = next(x for x in _file(s, "session.proto").service if x.name == "Sessions")
    sessions.method.add(
        name="Watch",
        input_type=".agentsessions.v1.FollowRequest",
        output_type=".agentsessions.v1.LogRecord",
        server_streaming=True,
    )
    _file(s, "session.proto").service.add(name="Admin")
    s.file.add(name="extra.proto", package="agentsessions.v1")
    _msg(s, "session.proto/Session").reserved_range.add(start=2000, end=2001)


def test_the_checker_allows_additions() -> None:
    new = _recorded()
    _additions(new)
    assert new != _recorded()
    assert breaking_changes(_recorded(), new) == []


def test_comment_and_deprecation_changes_are_not_breaking() -> None:
    new = _recorded()
    _field(new, "session.proto/ResumeRequest", "boot").options.deprecated = False
    assert breaking_changes(_recorded(), new) == []
