"""Our protos against the reference's wire schema, field by field.

The tables below are typed out from ``spec/reference-digest.md`` section 1 (1.1 common,
1.2 session, 1.3 harness, 1.4 harness_registry), not read from our protos, in the digest's
own notation: ``name=number:type``; ``[]T`` repeated, ``?T`` optional (explicit presence),
``map<K,V>``, ``@name`` member of oneof ``name``. Every name, number, type, label, oneof,
reserved number, enum value and RPC must match; what we add (docs/WIRE.md) is allowed only
as new messages, RPCs, or fields numbered from 1000 in a reference message.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from agentsessions.wire.gen import (
    common_pb2,
    harness_pb2,
    harness_registry_pb2,
    session_pb2,
)

ROOT = Path(__file__).resolve().parents[2]
GO_PACKAGE = "github.com/aramase/agentsessions/api/genpb;agentsessionsv1"
FIRST_ADDITION = 1000

FILES = {
    "common.proto": (
        common_pb2,
        {"google/protobuf/timestamp.proto", "google/protobuf/struct.proto"},
    ),
    "session.proto": (session_pb2, {"common.proto"}),
    "harness.proto": (harness_pb2, {"common.proto"}),
    "harness_registry.proto": (
        harness_registry_pb2,
        {"common.proto", "harness.proto", "google/protobuf/timestamp.proto"},
    ),
}

ENUMS = {
    "common.proto": {
        "Mediation": "MEDIATION_UNSPECIFIED=0 MEDIATION_IN_HARNESS_REPORTED=1 "
        "MEDIATION_CONTROLLER_MEDIATED=2 MEDIATION_REQUIRES_APPROVAL=3",
        "EventKind": "EVENT_KIND_UNSPECIFIED=0 EVENT_INPUT=1 EVENT_MODEL_CALL=2 EVENT_OUTPUT=3 "
        "EVENT_TOOL_CALL=4 EVENT_TOOL_RESULT=5 EVENT_APPROVAL_REQUEST=6 EVENT_APPROVAL_RESULT=7 "
        "EVENT_USAGE=8 EVENT_LIFECYCLE=9 EVENT_END=10 EVENT_ERROR=11 EVENT_EXECUTION_START=12 "
        "EVENT_PARKED=13",
        "Lifecycle.Kind": "LIFECYCLE_UNSPECIFIED=0 LIFECYCLE_SUSPEND=1 LIFECYCLE_RESUME=2 "
        "LIFECYCLE_FORK=3 LIFECYCLE_BASELINE=4 LIFECYCLE_CANCEL=5",
        "ToolChoice.Mode": "MODE_UNSPECIFIED=0 MODE_AUTO=1 MODE_NONE=2 MODE_REQUIRED=3",
        "ToolResult.Code": "CODE_UNSPECIFIED=0 APPROVAL_DENIED=1 EXECUTOR_ERROR=2",
    },
    "session.proto": {
        "ExecState": "EXEC_STATE_UNSPECIFIED=0 EXEC_PENDING=1 EXEC_RUNNING=2 EXEC_AWAITING=3 "
        "EXEC_COMPLETED=4 EXEC_FAILED=5 EXEC_CANCELED=6",
        "ComputeState": "COMPUTE_STATE_UNSPECIFIED=0 COMPUTE_NONE=1 COMPUTE_LIVE=2 "
        "COMPUTE_WARM=3 COMPUTE_COLD=4 COMPUTE_TERMINATED=5",
    },
    "harness.proto": {
        "Resumability": "RESUMABILITY_UNSPECIFIED=0 RESUMABILITY_STATELESS_REPLAY=1 "
        "RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT=2",
    },
    "harness_registry.proto": {
        "HarnessState": "HARNESS_STATE_UNSPECIFIED=0 HARNESS_STATE_ACTIVE=1 "
        "HARNESS_STATE_RETIRED=2",
        "HarnessSource": "HARNESS_SOURCE_UNSPECIFIED=0 HARNESS_SOURCE_STATIC=1 "
        "HARNESS_SOURCE_REGISTERED=2",
        "RegisterOutcome": "REGISTER_OUTCOME_UNSPECIFIED=0 REGISTER_OUTCOME_CREATED=1 "
        "REGISTER_OUTCOME_UNCHANGED=2 REGISTER_OUTCOME_REACTIVATED=3",
    },
}

MESSAGES = {
    "common.proto": {
        "ResourceMetadata": "project=1:string name=2:string uid=3:string version=4:int64 "
        "create_time=5:Timestamp update_time=6:Timestamp",
        "Part": "text=1:TextPart@part file=2:FilePart@part data=3:DataPart@part "
        "reasoning=4:ReasoningPart@part tool_call=5:ToolCall@part "
        "tool_result=6:ToolResult@part",
        "TextPart": "text=1:string",
        "FilePart": "mime=1:string bytes=2:bytes@source uri=3:string@source name=4:string "
        "digest=5:string",
        "DataPart": "data=1:Struct",
        "ReasoningPart": "provider=1:string model_id=2:string opaque_bytes=3:bytes@opaque "
        "opaque_uri=4:string@opaque summary=5:[]Part item_id=6:string ordinal=7:int32 "
        "validity_scope=8:string opaque_digest=9:string",
        "Message": "role=1:string parts=2:[]Part",
        "IdentityRef": "principal=1:string issuer=2:string subject=3:string",
        "Origin": "source=1:string subject=2:string uri=3:string attributes=4:map<string,string>",
        "ModelCall": "model=1:string params=2:map<string,string> input_hash=3:string "
        "id=4:string messages=5:[]Message tools=6:[]ToolDefinition tool_choice=7:ToolChoice",
        "ToolDefinition": "name=1:string description=2:string input_schema=3:Struct",
        "ToolChoice": "mode=1:ToolChoice.Mode name=2:string",
        "Usage": "model=1:string input_tokens=2:int64 output_tokens=3:int64 "
        "reasoning_tokens=4:int64",
        "ToolCall": "id=1:string tool=2:string args=3:Struct mediation=4:Mediation "
        "idempotency_key=5:string",
        "ToolResult": "id=1:string output=2:Struct output_uri=3:string is_error=4:bool "
        "error=5:string output_digest=6:string content=7:[]Part code=8:ToolResult.Code "
        "approval_request_seq=9:int64 approval_decision_seq=10:int64",
        "ApprovalRequest": "tool_call_id=1:string reason=2:string",
        "ApprovalResult": "tool_call_id=1:string approved=2:bool reason=3:string "
        "request_seq=4:int64",
        "ApprovalRef": "execution_id=1:string tool_call_id=2:string request_seq=3:int64",
        "Error": "code=1:int32 description=2:string",
        "HarnessEnd": "state=1:string error=2:Error",
        "Lifecycle": "kind=1:Lifecycle.Kind detail=2:string snapshot_local=3:string "
        "snapshot_external_uri=4:string snapshot_memory=5:bool snapshot_sealed=6:bool",
        "ExecutionStart": "config=1:bytes resume_from_seq=2:int64 input_count=3:?int64 "
        "harness=4:string harness_version=5:string",
        "Event": "execution_id=2:string ts=3:Timestamp schema_version=4:int32 "
        "kind=7:EventKind message=8:Message@body model=9:ModelCall@body "
        "tool=10:ToolCall@body result=11:ToolResult@body approval=12:ApprovalRequest@body "
        "approval_result=13:ApprovalResult@body usage=14:Usage@body "
        "lifecycle=15:Lifecycle@body end=16:HarnessEnd@body error=17:Error@body "
        "execution_start=19:ExecutionStart@body parked=20:ApprovalRef@body "
        "actor=18:IdentityRef",
        "LogRecord": "seq=1:int64 prev_hash=2:string content_hash=3:string fence=4:int64 "
        "event=5:Event",
    },
    "session.proto": {
        "SnapshotRef": "local=1:string external_uri=2:string memory=3:bool sealed=4:bool",
        "RuntimeCapabilities": "memory_snapshot=1:bool cow_fork=2:bool attest=3:bool "
        "gpu_state=4:bool",
        "ComputeRef": "runtime=1:string worker=2:string snapshot=3:SnapshotRef "
        "capabilities=4:RuntimeCapabilities attributes=5:map<string,string> "
        "fence_token=6:int64",
        "Session": "metadata=1:ResourceMetadata harness=2:string model=3:string "
        "last_seq=5:int64 parent_uid=6:string fork_seq=7:int64 identity=8:IdentityRef "
        "compute=9:ComputeRef origin=10:Origin labels=11:map<string,string> "
        "annotations=12:map<string,string> exec_state=13:ExecState "
        "compute_state=14:ComputeState pending_approval=15:ApprovalRef",
        "CreateSessionRequest": "session=1:Session",
        "GetSessionRequest": "uid=1:string",
        "ListSessionsRequest": "project=1:string page_size=2:int32 page_token=3:string",
        "ListSessionsResponse": "sessions=1:[]Session next_page_token=2:string",
        "DeleteSessionRequest": "uid=1:string",
        "ExecRequest": "session=1:string inputs=2:[]Message resume_from_seq=3:int64 "
        "harness=4:string config=5:bytes expected_last_seq=6:?int64 deadline_unix=7:int64",
        "ReplayRequest": "session=1:string from_seq=2:int64 to_seq=3:int64",
        "ApproveRequest": "session=1:string execution_id=2:string tool_call_id=3:string "
        "request_seq=4:int64 approved=5:?bool reason=6:string identity=7:IdentityRef",
        "ApproveResponse": "session=1:Session decision=2:LogRecord",
        "SuspendRequest": "session=1:string",
        "ResumeRequest": "session=1:string boot=2:bool",
        "ForkRequest": "session=1:string at_seq=2:int64 count=3:int32 identity=4:IdentityRef "
        "labels=5:map<string,string> child_names=6:[]string",
        "ForkResponse": "children=1:[]Session",
        "CancelRequest": "session=1:string execution_id=2:string reason=3:string",
        "ExecUpdate": "record=1:LogRecord@update delta=2:Delta@update session=3:Session@update",
        "Delta": "execution_id=1:string part_index=2:int32 chunk=3:string done=4:bool",
    },
    "harness.proto": {
        "Capabilities": "resumability=1:Resumability fork_safe=2:bool requires_gpu=3:bool "
        "streaming=4:bool reasoning_replay=5:bool",
        "ToolSpec": "name=1:string description=2:string mediation=3:Mediation",
        "HarnessDescriptor": "id=1:string models=2:[]string tools=3:[]ToolSpec "
        "capabilities=4:Capabilities version=5:string",
        "DescribeRequest": "",
        "IdentityContext": "principal=1:IdentityRef can_mint_tokens=2:bool",
        "Start": "config=1:bytes history=2:[]Event inputs=3:[]Message "
        "identity=4:IdentityContext resume_from_seq=5:int64",
        "Cancel": "reason=1:string",
        "ControllerFrame": "session=1:string execution_id=2:string start=3:Start@frame "
        "cancel=4:Cancel@frame approval=5:ApprovalResult@frame tool=6:ToolResult@frame "
        "model=7:ModelResult@frame park=8:ApprovalRef@frame",
        "ModelResult": "message=1:Message usage=2:Usage model_call_id=3:string",
    },
    "harness_registry.proto": {
        "RemotePlacement": "address=1:string",
        "SubstratePlacement": "atespace=1:string template=2:string",
        "HarnessSpec": "remote=1:RemotePlacement@placement "
        "substrate=2:SubstratePlacement@placement capabilities=3:Capabilities "
        "descriptor_id=4:string",
        "HarnessRegistration": "metadata=1:ResourceMetadata spec=2:HarnessSpec "
        "spec_digest=3:string state=4:HarnessState source=5:HarnessSource "
        "retire_time=6:Timestamp retire_reason=7:string observed=8:HarnessDescriptor "
        "observe_error=9:string unservable_reason=10:string",
        "RegisterHarnessRequest": "name=1:string spec=2:HarnessSpec",
        "RegisterHarnessResponse": "harness=1:HarnessRegistration outcome=2:RegisterOutcome",
        "GetHarnessRequest": "name=1:string observe=2:bool",
        "ListHarnessesRequest": "page_size=1:int32 page_token=2:string include_retired=3:bool",
        "ListHarnessesResponse": "harnesses=1:[]HarnessRegistration next_page_token=2:string",
        "RetireHarnessRequest": "name=1:string reason=2:string",
    },
}

RESERVED = {"Event": {1, 5, 6}, "Session": {4}}

# service -> rpc -> (request, response, client streaming, server streaming)
SERVICES = {
    "session.proto": {
        "Sessions": {
            "CreateSession": ("CreateSessionRequest", "Session", False, False),
            "GetSession": ("GetSessionRequest", "Session", False, False),
            "ListSessions": ("ListSessionsRequest", "ListSessionsResponse", False, False),
            "DeleteSession": ("DeleteSessionRequest", "Session", False, False),
            "Exec": ("ExecRequest", "ExecUpdate", False, True),
            "Replay": ("ReplayRequest", "LogRecord", False, True),
            "Approve": ("ApproveRequest", "ApproveResponse", False, False),
            "Cancel": ("CancelRequest", "Session", False, False),
            "Suspend": ("SuspendRequest", "Session", False, False),
            "Resume": ("ResumeRequest", "Session", False, False),
            "Fork": ("ForkRequest", "ForkResponse", False, False),
        },
    },
    "harness.proto": {
        "Harness": {
            "Describe": ("DescribeRequest", "HarnessDescriptor", False, False),
            "Connect": ("ControllerFrame", "Event", True, True),
        },
    },
    "harness_registry.proto": {
        "HarnessRegistry": {
            "RegisterHarness": ("RegisterHarnessRequest", "RegisterHarnessResponse", False, False),
            "GetHarness": ("GetHarnessRequest", "HarnessRegistration", False, False),
            "ListHarnesses": ("ListHarnessesRequest", "ListHarnessesResponse", False, False),
            "RetireHarness": ("RetireHarnessRequest", "HarnessRegistration", False, False),
        },
    },
}

# What we add (each is in docs/WIRE.md, which says why): new RPCs, new messages, and fields
# from 1000 up in the reference's messages.
ADDED_RPCS = {
    "Sessions.Follow": ("FollowRequest", "LogRecord", False, True),
    "Sessions.ResumeStream": ("ResumeRequest", "ExecUpdate", False, True),
    "Sessions.Rerun": ("RerunRequest", "ReplayReport", False, False),
    "Sessions.Compact": ("CompactRequest", "ExecUpdate", False, False),
    "Sessions.Resolve": ("ResolveRequest", "ResolveResponse", False, False),
    "Sessions.Verify": ("VerifyRequest", "VerifyReport", False, False),
    "Sessions.ReadToolStore": ("ToolStoreRequest", "ToolStoreResponse", False, False),
    "Sessions.Export": ("ExportRequest", "ExportChunk", False, True),
    "Sessions.Import": ("ImportChunk", "Session", True, False),
    "Sessions.EnsureSession": ("EnsureSessionRequest", "EnsureSessionResponse", False, False),
    "Sessions.FindSession": ("FindSessionRequest", "FindSessionResponse", False, False),
    "Sessions.ClaimSession": ("ClaimSessionRequest", "ClaimSessionResponse", False, False),
    "Harness.Executions": ("ControllerFrame", "Events", True, True),
    "Sessions.ExecQuick": ("ExecRequest", "ExecQuickResponse", False, False),
    "Sessions.ExecRest": ("ExecRestRequest", "ExecUpdate", False, True),
}
ADDED_MESSAGES = {
    "session.proto": {
        "UnresolvedCall",
        "SessionMemory",
        "FollowRequest",
        "WorkingStateSummary",
        "FrameInfo",
        "Turn",
        "RerunRequest",
        "ReplayReport",
        "CompactRequest",
        "ResolveRequest",
        "ResolveResponse",
        "VerifyRequest",
        "VerifyReport",
        "VerifyComponent",
        "ToolStoreRequest",
        "ToolStoreEntry",
        "ToolStoreResponse",
        "ExportRequest",
        "ExportChunk",
        "ImportChunk",
        "EnsureSessionRequest",
        "EnsureSessionResponse",
        "FindSessionRequest",
        "FindSessionResponse",
        "ClaimSessionRequest",
        "ClaimSessionResponse",
        "CommittedRecord",
        "ExecQuickResponse",
        "ExecRestRequest",
    },
    "harness.proto": {"WorkingState", "StateResult", "HistoryMark", "Events"},
    "common.proto": {"StateCommit", "TextDelta"},
}
ADDED_FIELDS = {
    "Session": "last_hash=1000:string fence=1001:int64 deleted=1002:bool "
    "unresolved_call=1003:UnresolvedCall memory=1004:SessionMemory damaged=1005:string "
    "working_state=1006:WorkingStateSummary",
    "ExecRequest": "model=1000:string wait_ms=1001:int64 project=1002:string name=1003:string "
    "labels=1004:map<string,string> fresh_start=1005:bool tools=1006:string "
    "commit_id=1007:string origin=1008:Origin identity=1009:IdentityRef "
    "input_actors=1010:[]IdentityRef durability=1011:string batched=1012:bool",
    "CreateSessionRequest": "tools=1000:string",
    "ListSessionsResponse": "not_listed=1000:[]string",
    "ApproveResponse": "request=1000:ApprovalRef existing=1001:bool",
    "ResumeRequest": "harness=1000:string wait_ms=1001:int64 batched=1002:bool",
    "CancelRequest": "wait_ms=1000:?int64",
    "ExecUpdate": "frame=1000:FrameInfo committed=1001:CommittedRecord@update "
    "batch=1002:[]ExecUpdate",
    "Start": "tools=1000:[]ToolSpec state=1001:WorkingState memory_restored=1002:bool "
    "history_base=1003:HistoryMark history_head=1004:HistoryMark json_events=1005:bool "
    "history_refs=1006:bool",
    "HarnessDescriptor": "history_node=1000:string executions=1001:bool json_events=1002:bool",
    "ToolSpec": "input_schema=1000:Struct",
    "Capabilities": "uses_session_model=1000:?bool",
    "Event": "state_commit=1000:StateCommit@body delta=1001:TextDelta@body json=1002:bytes "
    "message_seqs=1003:[]int64",
    "ControllerFrame": "state=1000:StateResult@frame",
    "RegisterHarnessRequest": "project=1000:string",
    "GetHarnessRequest": "project=1000:string",
    "ListHarnessesRequest": "project=1000:string",
    "RetireHarnessRequest": "project=1000:string",
}

PKG = "agentsessions.v1"
WELL_KNOWN = {"Timestamp": "google.protobuf.Timestamp", "Struct": "google.protobuf.Struct"}
SCALARS = {
    "string": FieldDescriptor.TYPE_STRING,
    "bytes": FieldDescriptor.TYPE_BYTES,
    "bool": FieldDescriptor.TYPE_BOOL,
    "int32": FieldDescriptor.TYPE_INT32,
    "int64": FieldDescriptor.TYPE_INT64,
}
_SPEC = re.compile(r"(\w+)=(\d+):(\[\]|\?)?(map<(\w+),(\w+)>|[\w.]+)(?:@(\w+))?")
POOL = descriptor_pool.Default()


def _full(name: str) -> str:
    return WELL_KNOWN.get(name, f"{PKG}.{name}")


def _parse(spec: str) -> dict[int, tuple[str, str, str, str, str]]:
    """number -> (name, modifier, type, map key:value, oneof) of one table row."""
    out = {}
    for item in spec.split():
        m = _SPEC.fullmatch(item)
        assert m is not None, item
        name, number, mod, type_, key, value, oneof = m.groups()
        kv = f"{key}:{value}" if key else ""
        out[int(number)] = (name, mod or "", type_ if not key else "map", kv, oneof or "")
    return out


def _check_type(where: str, field: FieldDescriptor, type_: str) -> None:
    if type_ in SCALARS:
        assert field.type == SCALARS[type_], f"{where}: type {field.type} is not {type_}"
        return
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type.full_name == _full(type_), f"{where}: enum type"
        return
    assert field.type == FieldDescriptor.TYPE_MESSAGE, f"{where}: not a message field"
    assert field.message_type.full_name == _full(type_), f"{where}: message type"


def _check_field(where: str, field: FieldDescriptor, row: tuple[str, ...]) -> None:
    name, mod, type_, kv, oneof = row
    assert field.name == name, f"{where}: named {field.name!r}, the reference says {name!r}"
    proto = _proto(field.containing_type).field[field.index]
    repeated = proto.label == proto.LABEL_REPEATED
    if type_ == "map":
        entry = field.message_type
        assert repeated and entry.GetOptions().map_entry, f"{where}: not a map"
        key, value = (entry.fields_by_name[k] for k in ("key", "value"))
        k, v = kv.split(":")
        assert (key.type, value.type) == (SCALARS[k], SCALARS[v]), f"{where}: map types"
    else:
        assert repeated == (mod == "[]"), f"{where}: repeated is {repeated}"
        _check_type(where, field, type_)
    optional = proto.proto3_optional
    assert optional == (mod == "?"), f"{where}: explicit presence (optional) is {optional}"
    real = field.containing_oneof
    got = "" if real is None or optional else real.name
    assert got == oneof, f"{where}: in oneof {got!r}, the reference says {oneof!r}"


def _cases() -> list[tuple[str, str, str]]:
    return [(f, m, spec) for f, msgs in MESSAGES.items() for m, spec in msgs.items()]


@pytest.mark.parametrize(("file", "message", "spec"), _cases(), ids=lambda v: str(v)[:30])
def test_message_fields_match_the_digest(file: str, message: str, spec: str) -> None:
    desc: Descriptor = POOL.FindMessageTypeByName(f"{PKG}.{message}")
    assert desc.file.name == file
    rows = _parse(spec)
    added = _parse(ADDED_FIELDS.get(message, ""))
    ours = {f.number: f for f in desc.fields}
    assert set(ours) - set(added) == set(rows), f"{message}: field numbers differ"
    for number, row in {**rows, **added}.items():
        _check_field(f"{message}.{row[0]} = {number}", ours[number], row)
    assert all(n >= FIRST_ADDITION for n in added), "our fields start at 1000"
    reserved = {n for r in _proto(desc).reserved_range for n in range(r.start, r.end)}
    assert reserved == RESERVED.get(message, set()), f"{message}: reserved numbers"


def _proto(desc: Descriptor) -> descriptor_pb2.DescriptorProto:
    proto = descriptor_pb2.DescriptorProto()
    desc.CopyToProto(proto)
    return proto


@pytest.mark.parametrize(
    ("file", "enum", "spec"),
    [(f, e, s) for f, enums in ENUMS.items() for e, s in enums.items()],
    ids=lambda v: str(v)[:30],
)
def test_enum_values_match_the_digest(file: str, enum: str, spec: str) -> None:
    desc = POOL.FindEnumTypeByName(f"{PKG}.{enum}")
    assert desc.file.name == file
    want = {name: int(n) for name, n in (item.split("=") for item in spec.split())}
    assert {v.name: v.number for v in desc.values} == want


def test_services_match_the_digest_plus_our_rpcs() -> None:
    want = {
        f"{svc}.{rpc}": (file, *sig)
        for file, services in SERVICES.items()
        for svc, rpcs in services.items()
        for rpc, sig in rpcs.items()
    }
    files = {"Sessions": "session.proto", "Harness": "harness.proto"}
    want.update({k: (files[k.split(".")[0]], *v) for k, v in ADDED_RPCS.items()})
    got = {}
    for file, (module, _) in FILES.items():
        for svc in module.DESCRIPTOR.services_by_name.values():
            for m in svc.methods:
                got[f"{svc.name}.{m.name}"] = (
                    file, m.input_type.name, m.output_type.name,
                    m.client_streaming, m.server_streaming,
                )  # fmt: skip
    assert got == want


def test_files_packages_imports_and_every_type_is_accounted_for() -> None:
    for file, (module, imports) in FILES.items():
        fd = module.DESCRIPTOR
        proto = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(proto)
        assert (fd.name, fd.package, proto.syntax) == (file, PKG, "proto3")
        assert fd.GetOptions().go_package == GO_PACKAGE
        assert imports <= {d.name for d in fd.dependencies}
        top = {n for n in MESSAGES[file] if "." not in n} | ADDED_MESSAGES.get(file, set())
        assert set(fd.message_types_by_name) == top, file
        enums = {n for n in ENUMS[file] if "." not in n}
        assert set(fd.enum_types_by_name) == enums, file


def test_every_addition_is_documented_in_wire_md() -> None:
    doc = (ROOT / "docs" / "WIRE.md").read_text("utf-8")
    names = [*ADDED_RPCS, *(m for ms in ADDED_MESSAGES.values() for m in ms)]
    names += [
        f"{message}.{row[0]}"
        for message, spec in ADDED_FIELDS.items()
        for row in _parse(spec).values()
    ]
    missing = [n for n in names if f"`{n}`" not in doc]
    assert not missing, f"docs/WIRE.md does not name: {missing}"
