"""interchange.py: Go api.Event JSON and LogRecord lines to canonical proto3-JSON events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.errors import FormatError
from agentsessions.journal.format import canonical
from agentsessions.journal.tools import interchange
from agentsessions.v1 import schema

FIXTURE = Path(agentsessions.__file__).parent / "data" / "go-v0.1.2-completed.json"
ZERO = "0001-01-01T00:00:00Z"
EMPTY_ACTOR = {"Principal": "", "Issuer": "", "Subject": ""}


def _go(**fields: Any) -> dict[str, Any]:
    """A Go api.Event as encoding/json writes it: every field present, nil bodies null."""
    base: dict[str, Any] = {
        "ExecutionID": "",
        "Timestamp": ZERO,
        "SchemaVersion": 0,
        "Kind": "",
        "Message": None,
        "ModelCall": None,
        "ToolCall": None,
        "Result": None,
        "Approval": None,
        "ApprovalResult": None,
        "Usage": None,
        "Lifecycle": None,
        "End": None,
        "Err": None,
        "Actor": dict(EMPTY_ACTOR),
    }
    base.update(fields)
    return base


def _part(**fields: Any) -> dict[str, Any]:
    return {"Text": None, "File": None, "Data": None, "Reasoning": None, **fields}


def test_fixture_records() -> None:
    records = interchange.parse_go_records(FIXTURE.read_bytes())
    assert records[0] == interchange.ForeignRecord(
        seq=1,
        prev_hash="",
        content_hash="62daf59c5c1e5062b1b0d47d5665b34aa52bf7ed0ca8a0b016af2c9827b5d8f6",
        fence=1,
        event={
            "kind": "EVENT_INPUT",
            "message": {"role": "user", "parts": [{"text": {"text": "hello"}}]},
        },
    )
    assert records[3].event == {"kind": "EVENT_END", "end": {"state": "COMPLETED"}}
    assert interchange.GoRecord is interchange.ForeignRecord


CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        _go(
            ExecutionID="e1",
            Timestamp="2023-11-15T00:13:20.5+02:00",
            SchemaVersion=1,
            Kind="OUTPUT",
            Message={"Role": "assistant", "Parts": [_part(Text={"Text": "hi"}), _part()]},
            Actor={"Principal": "agent://a", "Issuer": "", "Subject": "s"},
        ),
        {
            "execution_id": "e1",
            "ts": "2023-11-14T22:13:20.500Z",
            "schema_version": 1,
            "kind": "EVENT_OUTPUT",
            "message": {"role": "assistant", "parts": [{"text": {"text": "hi"}}, {}]},
            "actor": {"principal": "agent://a", "subject": "s"},
        },
    ),
    (
        _go(
            Kind="INPUT",
            Message={
                "Role": "user",
                "Parts": [
                    _part(
                        File={"MIME": "a/b", "Bytes": None, "URI": "", "Digest": "", "Name": "n"}
                    ),
                    _part(
                        File={"MIME": "", "Bytes": "AAE=", "URI": "u", "Digest": "d", "Name": ""}
                    ),
                    _part(File={"MIME": "", "Bytes": "", "URI": "u", "Digest": "", "Name": ""}),
                    _part(Data={}),
                    _part(Data={"n": 9007199254740993, "f": 2.0, "x": [1e21, None]}),
                    _part(
                        Reasoning={
                            "Provider": "p",
                            "ModelID": "",
                            "Opaque": None,
                            "OpaqueURI": "ou",
                            "OpaqueDigest": "od",
                            "Summary": [_part(Text={"Text": "s"})],
                            "ItemID": "",
                            "Ordinal": 2,
                            "ValidityScope": "",
                        }
                    ),
                    _part(
                        ToolCall={
                            "ID": "c",
                            "Tool": "t",
                            "Args": None,
                            "Mediation": "",
                            "IdempotencyKey": "",
                        }
                    ),
                ],
            },
        ),
        {
            "kind": "EVENT_INPUT",
            "message": {
                "role": "user",
                "parts": [
                    {"file": {"mime": "a/b", "name": "n"}},
                    {"file": {"bytes": "AAE=", "digest": "d"}},
                    {"file": {"uri": "u"}},
                    {"data": {"data": {}}},
                    {"data": {"data": {"n": 9007199254740992, "f": 2, "x": [1e21, None]}}},
                    {
                        "reasoning": {
                            "provider": "p",
                            "opaque_uri": "ou",
                            "summary": [{"text": {"text": "s"}}],
                            "ordinal": 2,
                            "opaque_digest": "od",
                        }
                    },
                    {"tool_call": {"id": "c", "tool": "t"}},
                ],
            },
        },
    ),
    (
        _go(Kind="MODEL_CALL", ModelCall={"Model": "m", "Params": {}, "InputHash": "h", "ID": "i"}),
        {"kind": "EVENT_MODEL_CALL", "model": {"model": "m", "input_hash": "h", "id": "i"}},
    ),
    (
        _go(
            Kind="TOOL_CALL",
            ToolCall={
                "ID": "c",
                "Tool": "t",
                "Args": {},
                "Mediation": "REQUIRES_APPROVAL",
                "IdempotencyKey": "k",
            },
        ),
        {
            "kind": "EVENT_TOOL_CALL",
            "tool": {
                "id": "c",
                "tool": "t",
                "args": {},
                "mediation": "MEDIATION_REQUIRES_APPROVAL",
                "idempotency_key": "k",
            },
        },
    ),
    (
        _go(
            Kind="TOOL_RESULT",
            Result={
                "ID": "c",
                "Output": {"ok": True},
                "OutputURI": "",
                "OutputDigest": "",
                "IsError": True,
                "Error": "e",
                "Content": [_part(Text={"Text": "r"})],
                "Code": 1,
                "ApprovalRequestSeq": 9007199254740993,
                "ApprovalDecisionSeq": 0,
                "Approval": {"anything": "wire-only"},
            },
        ),
        {
            "kind": "EVENT_TOOL_RESULT",
            "result": {
                "id": "c",
                "output": {"ok": True},
                "is_error": True,
                "error": "e",
                "content": [{"text": {"text": "r"}}],
                "code": "APPROVAL_DENIED",
                "approval_request_seq": "9007199254740993",
            },
        },
    ),
    (
        _go(Kind="TOOL_RESULT", Result={"ID": "c", "Code": 99}),
        {"kind": "EVENT_TOOL_RESULT", "result": {"id": "c", "code": 99}},
    ),
    (
        _go(Kind="APPROVAL_REQUEST", Approval={"ToolCallID": "c", "Reason": ""}),
        {"kind": "EVENT_APPROVAL_REQUEST", "approval": {"tool_call_id": "c"}},
    ),
    (
        _go(
            Kind="APPROVAL_RESULT",
            ApprovalResult={"ToolCallID": "c", "Approved": False, "Reason": "r", "RequestSeq": 3},
        ),
        {
            "kind": "EVENT_APPROVAL_RESULT",
            "approval_result": {"tool_call_id": "c", "reason": "r", "request_seq": "3"},
        },
    ),
    (
        _go(
            Kind="USAGE",
            Usage={"Model": "m", "InputTokens": 5, "OutputTokens": 0, "ReasoningTokens": 2**62},
        ),
        {
            "kind": "EVENT_USAGE",
            "usage": {"model": "m", "input_tokens": "5", "reasoning_tokens": str(2**62)},
        },
    ),
    (
        _go(
            Kind="LIFECYCLE",
            Lifecycle={
                "Kind": "SUSPEND",
                "Detail": "",
                "Snapshot": {"Local": "/s", "ExternalURI": "", "Memory": True, "Sealed": False},
            },
        ),
        {
            "kind": "EVENT_LIFECYCLE",
            "lifecycle": {
                "kind": "LIFECYCLE_SUSPEND",
                "snapshot_local": "/s",
                "snapshot_memory": True,
            },
        },
    ),
    (
        _go(Kind="LIFECYCLE", Lifecycle={"Kind": "FORK", "Detail": "parent@3"}),
        {"kind": "EVENT_LIFECYCLE", "lifecycle": {"kind": "LIFECYCLE_FORK", "detail": "parent@3"}},
    ),
    (
        _go(Kind="END", End={"State": "FAILED", "Error": {"Code": 13, "Description": "x"}}),
        {
            "kind": "EVENT_END",
            "end": {"state": "FAILED", "error": {"code": 13, "description": "x"}},
        },
    ),
    (
        _go(Kind="ERROR", Err={"Code": 0, "Description": ""}),
        {"kind": "EVENT_ERROR", "error": {}},
    ),
    (
        _go(
            Kind="EXECUTION_START",
            ExecutionStart={"Config": "", "ResumeFromSeq": 0, "InputCount": 0},
        ),
        {"kind": "EVENT_EXECUTION_START", "execution_start": {"input_count": "0"}},
    ),
    (
        _go(
            Kind="EXECUTION_START",
            ExecutionStart={
                "Config": "AP8gCgk=",
                "ResumeFromSeq": 7,
                "InputCount": None,
                "Harness": "echo",
                "HarnessVersion": "",
            },
        ),
        {
            "kind": "EVENT_EXECUTION_START",
            "execution_start": {"config": "AP8gCgk=", "resume_from_seq": "7", "harness": "echo"},
        },
    ),
    (  # Go's EventToProto takes the first non-nil body; the later one is not hashed
        _go(
            Kind="END",
            Message={"Role": "user", "Parts": None},
            End={"State": "COMPLETED", "Error": None},
        ),
        {"kind": "EVENT_END", "message": {"role": "user"}},
    ),
    (  # the zero instant written with an offset is still Go's zero time
        _go(Timestamp="0001-01-01T01:00:00+01:00", Kind=""),
        {},
    ),
]


@pytest.mark.parametrize(("go", "wire"), CASES)
def test_go_event_to_wire(go: dict[str, Any], wire: dict[str, Any]) -> None:
    got = interchange.go_event_to_wire(go)
    assert got == wire
    schema.validate_event(got)
    assert canonical.canonical_json(got) == canonical.canonical_json(wire)


def test_missing_go_fields_are_zero_values() -> None:
    assert interchange.go_event_to_wire({"Kind": "INPUT"}) == {"kind": "EVENT_INPUT"}


@pytest.mark.parametrize(
    ("go", "message"),
    [
        ([], "Event: expected a JSON object"),
        ({"Kind": "INPUT", "Credential": None}, "Event: unknown field 'Credential'"),
        ({"Kind": "CREDENTIAL_REQUEST"}, "Event.Kind: unknown value 'CREDENTIAL_REQUEST'"),
        ({"Kind": "EVENT_INPUT"}, "Event.Kind: unknown value"),
        ({"Kind": 1}, "Event.Kind: expected a string"),
        ({"ExecutionID": 5}, "Event.ExecutionID: expected a string, got int"),
        ({"SchemaVersion": 2**31}, "Event.SchemaVersion: expected an integer in range"),
        ({"Timestamp": "yesterday"}, "Event.Timestamp: not an RFC 3339 timestamp"),
        ({"Timestamp": "0001-01-01T00:00:00+01:00"}, "Event.Timestamp: timestamp outside"),
        (
            {"Message": {"Role": "u", "Parts": [{"Txt": None}]}},
            "Event.Message.Parts[0]: unknown field 'Txt'",
        ),
        ({"Message": {"Parts": {}}}, "Event.Message.Parts: expected an array or null"),
        (
            {"Message": {"Parts": [{"Text": {"Text": 1}}]}},
            "Event.Message.Parts[0].Text.Text: expected a string",
        ),
        (
            {"Message": {"Parts": [{"File": {"Bytes": "!!"}}]}},
            "Event.Message.Parts[0].File.Bytes: invalid base64",
        ),
        (
            {"ExecutionStart": {"Config": "AA\u00e9="}},
            "Event.ExecutionStart.Config: invalid base64",
        ),
        (
            {"Message": {"Parts": [{"Data": [1]}]}},
            "Event.Message.Parts[0].Data: expected a JSON object",
        ),
        ({"ToolCall": {"Args": {"x": 1e400}}}, "Event.ToolCall.Args"),
        ({"ToolCall": {"Mediation": "ALWAYS"}}, "Event.ToolCall.Mediation: unknown value 'ALWAYS'"),
        (
            {"ModelCall": {"Params": {"a": 1}}},
            "Event.ModelCall.Params: expected an object of strings",
        ),
        ({"Result": {"Code": "NOPE"}}, "Event.Result.Code: unknown value 'NOPE'"),
        ({"Result": {"IsError": "yes"}}, "Event.Result.IsError: expected true or false"),
        ({"Usage": {"InputTokens": 1.5}}, "Event.Usage.InputTokens: expected an integer in range"),
        (
            {"Usage": {"InputTokens": 2**63}},
            "Event.Usage.InputTokens: expected an integer in range",
        ),
        ({"Lifecycle": {"Kind": "PAUSE"}}, "Event.Lifecycle.Kind: unknown value 'PAUSE'"),
        ({"Lifecycle": {"Snapshot": {"ID": "x"}}}, "Event.Lifecycle.Snapshot: unknown field 'ID'"),
        (
            {"ExecutionStart": {"InputCount": "1"}},
            "Event.ExecutionStart.InputCount: expected an integer",
        ),
        ({"Actor": {"Principal": "a", "Role": "x"}}, "Event.Actor: unknown field 'Role'"),
    ],
)
def test_go_event_refusals(go: Any, message: str) -> None:
    with pytest.raises(FormatError) as info:
        interchange.go_event_to_wire(go)
    assert str(info.value).startswith(message), str(info.value)


def _fixture() -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(FIXTURE.read_bytes())
    return doc


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: {"records": d}, "a Go journal is a JSON array of records"),
        (lambda d: [*d[:1], {**d[1], "Extra": 1}], "record 2: unknown field 'Extra'"),
        (lambda d: [{k: v for k, v in d[0].items() if k != "Event"}], "record 1: no Event"),
        (lambda d: [{**d[0], "Hash": "AB" * 32}], "record 1.Hash: expected 64 lowercase hex"),
        (lambda d: [{**d[0], "Hash": ""}], "record 1.Hash: expected 64 lowercase hex"),
        (lambda d: [{**d[0], "PrevHash": "abc"}], "record 1.PrevHash: expected 64 lowercase hex"),
        (lambda d: [{**d[0], "Seq": "1"}], "record 1.Seq: expected an integer"),
        (lambda d: [{**d[0], "Fence": None}], "record 1.Fence: expected an integer"),
        (
            lambda d: [{**d[0], "Event": {**d[0]["Event"], "Kind": "NOPE"}}],
            "record 1: Event.Kind: unknown value",
        ),
    ],
)
def test_go_records_refusals(mutate: Any, message: str) -> None:
    data = json.dumps(mutate(_fixture())).encode()
    with pytest.raises(FormatError) as info:
        interchange.parse_go_records(data)
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize("data", [b"", b"[", b"\xff", b"[NaN]"])
def test_go_records_not_json(data: bytes) -> None:
    with pytest.raises(FormatError, match="invalid JSON"):
        interchange.parse_go_records(data)


def test_logrecord_lines() -> None:
    line = (
        b'{"seq":"2","prevHash":"' + b"ab" * 32 + b'","contentHash":"' + b"cd" * 32 + b'",'
        b'"fence":3,"event":{"executionId":"e","kind":"EVENT_INPUT",'
        b'"message":{"role":"user","parts":[{"text":{"text":"hi"}}]}}}'
    )
    rec = interchange.parse_logrecord_line(line)
    assert rec == interchange.ForeignRecord(
        seq=2,
        prev_hash="ab" * 32,
        content_hash="cd" * 32,
        fence=3,
        event={
            "execution_id": "e",
            "kind": "EVENT_INPUT",
            "message": {"role": "user", "parts": [{"text": {"text": "hi"}}]},
        },
    )
    genesis = interchange.parse_logrecord_line(
        b'{"seq":1,"content_hash":"' + b"ef" * 32 + b'","event":{}}'
    )
    assert (genesis.seq, genesis.prev_hash, genesis.fence, genesis.event) == (1, "", 0, {})


def test_logrecord_round_trip_of_the_fixture() -> None:
    for record in interchange.parse_go_records(FIXTURE.read_bytes()):
        wire = {
            "seq": str(record.seq),
            "prev_hash": record.prev_hash,
            "content_hash": record.content_hash,
            "fence": str(record.fence),
            "event": record.event,
        }
        line = canonical.dumps({k: v for k, v in wire.items() if v})
        assert interchange.parse_logrecord_line(line) == record


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{", "invalid JSON"),
        (b"[]", "record: expected a JSON object"),
        (b'{"seq":"1"}', "record: no event"),
        (b'{"seq":"x","event":{}}', "record.seq: not an integer"),
        (b'{"seq":"1","event":{},"hash":"x"}', "record: unknown field 'hash'"),
        (b'{"seq":"1","event":{"kind":"INPUT"}}', "record.event.kind: unknown enum value"),
        (b'{"seq":"1","event":{},"content_hash":"xy"}', "record.content_hash: expected 64"),
        (b'{"seq":"1","event":{},"content_hash":""}', "record.content_hash: expected 64"),
    ],
)
def test_logrecord_refusals(line: bytes, message: str) -> None:
    with pytest.raises(FormatError) as info:
        interchange.parse_logrecord_line(line)
    assert str(info.value).startswith(message), str(info.value)
