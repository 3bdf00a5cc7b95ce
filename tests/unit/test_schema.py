"""v1 schema: the table, validate_event (canonical only), normalize_event (parser forms)."""

from __future__ import annotations

import base64
import copy
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsessions.errors import FormatError, InvalidArgumentError
from agentsessions.journal.format import canonical
from agentsessions.v1 import construct, model, normalize, schema, timestamps

sys.path.insert(0, str(Path(__file__).parent))
from test_canonical import SETTINGS, canonical_events, typed

# --------------------------------------------------------------------------- the table


def test_table_matches_the_digest() -> None:
    event = {f.name: (f.number, f.oneof) for f in schema.MESSAGES["Event"]}
    assert event["execution_start"] == (19, "body") and event["actor"] == (18, "")
    assert event["parked"] == (20, "body") and {1, 5, 6}.isdisjoint(n for n, _ in event.values())
    assert [f.name for f in schema.MESSAGES["LogRecord"]] == [
        "seq", "prev_hash", "content_hash", "fence", "event",
    ]  # fmt: skip
    start = {f.name: f for f in schema.MESSAGES["ExecutionStart"]}
    assert start["input_count"].label == schema.OPTIONAL and start["input_count"].number == 3
    assert schema.ENUMS["EventKind"][12:] == ("EVENT_EXECUTION_START", "EVENT_PARKED")
    assert schema.ENUMS["ToolResult.Code"] == (
        "CODE_UNSPECIFIED",
        "APPROVAL_DENIED",
        "EXECUTOR_ERROR",
    )
    for name, fields in schema.MESSAGES.items():
        numbers = [f.number for f in fields]
        assert len(set(numbers)) == len(numbers), name
        for f in fields:
            assert f.type != schema.MESSAGE or f.ref in schema.MESSAGES, (name, f.name)
            assert f.type != schema.ENUM or f.ref in schema.ENUMS, (name, f.name)
    body = [f.name for f in schema.MESSAGES["Event"] if f.oneof == "body"]
    assert tuple(body) == model.BODY_FIELDS


def test_typed_dicts_cover_the_table() -> None:
    for name, fields in schema.MESSAGES.items():
        typed_dict = getattr(model, name)
        assert set(typed_dict.__annotations__) == {f.name for f in fields}, name


# --------------------------------------------------------------------------- validate


@SETTINGS
@given(canonical_events)
def test_generated_events_validate(event: dict[str, Any]) -> None:
    schema.validate_event(event)
    schema.validate_event(canonical.loads(canonical.canonical_json(event)))


def _good() -> dict[str, Any]:
    return construct.output_event(construct.text_message("assistant", "hi"), execution_id="e1")


BAD: list[tuple[Any, str]] = [
    (None, "event: expected a JSON object, got null"),
    ({"kind": "EVENT_OUTPUT", "message": {"parts": [{"text": {"txt": "x"}}]}},
     "event.message.parts[0].text: unknown field 'txt'"),
    ({"executionId": "e1"}, "event: unknown field 'executionId'"),
    ({"execution_id": ""}, "event.execution_id: a field at its default value must be omitted"),
    ({"execution_id": 5}, "event.execution_id: expected a string, got int"),
    ({"schema_version": 0}, "event.schema_version: a field at its default"),
    ({"schema_version": 2**31}, "event.schema_version: int32 out of range"),
    ({"schema_version": True}, "event.schema_version: int32 must be a JSON integer"),
    ({"kind": "EVENT_KIND_UNSPECIFIED"}, "event.kind: a field at its default"),
    ({"kind": "INPUT"}, "event.kind: unknown enum value 'INPUT'"),
    ({"kind": 1}, "event.kind: enum value 1 must be written by name (EVENT_INPUT)"),
    ({"kind": 2**31}, "event.kind: expected an enum name"),
    ({"ts": "2023-11-14T22:13:20+00:00"}, "event.ts: not a canonical RFC 3339 UTC timestamp"),
    ({"ts": "2023-11-14T22:13:20.100000Z"}, "event.ts: timestamp fraction is not in shortest"),
    ({"ts": "2023-11-14T22:13:20.000Z"}, "event.ts: timestamp fraction"),
    ({"ts": "2023-11-14T22:13:20.1Z"}, "event.ts: not a canonical"),
    ({"ts": "2023-02-29T00:00:00Z"}, "event.ts: not a calendar date"),
    ({"ts": "2023-01-01T24:00:00Z"}, "event.ts: time of day out of range"),
    ({"ts": "0000-12-31T23:59:59Z"}, "event.ts: "),
    ({"ts": "\u0662\u0660\u0662\u0664-01-01T00:00:00Z"}, "event.ts: not a canonical RFC 3339"),
    ({"usage": {"input_tokens": 5}}, "event.usage.input_tokens: int64 must be a decimal string"),
    ({"usage": {"input_tokens": "0"}}, "event.usage.input_tokens: a field at its default"),
    ({"usage": {"input_tokens": "007"}}, "event.usage.input_tokens: not a canonical int64"),
    ({"usage": {"input_tokens": "-0"}}, "event.usage.input_tokens: not a canonical int64"),
    ({"usage": {"input_tokens": "+5"}}, "event.usage.input_tokens: not a canonical int64"),
    ({"usage": {"input_tokens": "9223372036854775808"}}, "event.usage.input_tokens: int64 out of"),
    ({"execution_start": {"resume_from_seq": "1.0"}}, "event.execution_start.resume_from_seq"),
    ({"execution_start": {"config": ""}}, "event.execution_start.config: a field at its default"),
    ({"execution_start": {"config": "AP8gCgk"}}, "event.execution_start.config: bytes are not"),
    ({"execution_start": {"config": "AP8gCgl="}}, "event.execution_start.config: bytes are not"),
    ({"execution_start": {"config": "AP-_"}}, "event.execution_start.config: bytes are not"),
    ({"message": {}, "end": {}}, "event: oneof 'body' has two members set: 'message' and 'end'"),
    ({"message": {"parts": []}}, "event.message.parts: a field at its default"),
    ({"message": {"parts": {}}}, "event.message.parts: expected a JSON array"),
    ({"message": {"parts": [{"text": {}, "file": {}}]}}, "event.message.parts[0]: oneof 'part'"),
    ({"message": {"parts": [None]}}, "event.message.parts[0]: expected a JSON object, got null"),
    ({"message": {"parts": [{"file": {"bytes": "AA==", "uri": "x"}}]}},
     "event.message.parts[0].file: oneof 'source' has two members"),
    ({"result": {"is_error": False}}, "event.result.is_error: a field at its default"),
    ({"result": {"is_error": 1}}, "event.result.is_error: expected true or false"),
    ({"result": {"code": "CODE_UNSPECIFIED"}}, "event.result.code: a field at its default"),
    ({"result": {"output": {"x": float("nan")}}}, "event.result.output.x: nan is not a JSON"),
    ({"result": {"output": {"a b": [1, 2**60]}}},
     "event.result.output['a b'][1]: integer 1152921504606846976 is not a float64 value"),
    ({"result": {"output": {"x": b"1"}}}, "event.result.output.x: bytes is not a JSON value"),
    ({"result": {"output": []}}, "event.result.output: expected a JSON object, got list"),
    ({"model": {"params": {}}}, "event.model.params: a field at its default"),
    ({"model": {"params": {"a": 1}}}, "event.model.params: map value for 'a' must be a string"),
    ({"tool": {"mediation": "CONTROLLER_MEDIATED"}}, "event.tool.mediation: unknown enum value"),
    ({"actor": {"principal": "x\ud800"}}, "event.actor.principal: string contains a lone"),
    ({"lifecycle": {"snapshot_memory": False}}, "event.lifecycle.snapshot_memory: a field at its"),
]  # fmt: skip


@pytest.mark.parametrize(("event", "message"), BAD)
def test_validate_rejects_with_the_path(event: Any, message: str) -> None:
    with pytest.raises(FormatError) as info:
        schema.validate_event(event)
    assert str(info.value).startswith(message), str(info.value)
    assert info.value.fields["path"] == str(info.value).split(": ")[0]


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"execution_start": {}},
        {"execution_start": {"input_count": "0"}},
        {"message": {"parts": [{}, {"text": {}}, {"data": {"data": {}}}]}},
        {"message": {"parts": [{"file": {"bytes": ""}}, {"file": {"uri": ""}}]}},
        {"tool": {"args": {}}, "actor": {}},
        {"result": {"code": 7, "output": {"n": [1.5, 1e21, 1152921504606847000, None, True]}}},
        {"ts": "0001-01-01T00:00:00Z"},
        {"ts": "9999-12-31T23:59:59.999999999Z"},
        {"ts": "2000-02-29T12:00:00.010Z"},
        {"model": {"params": {"": ""}}},
    ],
)
def test_validate_accepts_canonical_edge_forms(event: dict[str, Any]) -> None:
    schema.validate_event(event)
    assert normalize.normalize_event(event) == event


def test_validate_message_for_log_records() -> None:
    record = {"seq": "1", "prev_hash": "", "content_hash": "ab" * 32, "event": _good()}
    with pytest.raises(FormatError, match=r"^record\.prev_hash: a field at its default"):
        schema.validate_message(record, "LogRecord", "record")
    del record["prev_hash"]
    schema.validate_message(record, "LogRecord", "record")


# --------------------------------------------------------------------------- normalize


@SETTINGS
@given(canonical_events)
def test_normalize_of_canonical_is_identity(event: dict[str, Any]) -> None:
    data = canonical.canonical_json(event)
    assert canonical.canonical_json(normalize.normalize_event(event)) == data
    decoded = canonical.loads(data)
    assert typed(normalize.normalize_event(decoded)) == typed(decoded)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _parser_form(obj: dict[str, Any], message: str, data: st.DataObject) -> dict[str, Any]:
    """Rewrite canonical proto3-JSON into other forms a proto3-JSON parser accepts."""
    out: dict[str, Any] = {}
    fields = {f.name: f for f in schema.MESSAGES[message]}
    for name, f in fields.items():
        key = _camel(name) if data.draw(st.booleans()) else name
        if name in obj:
            out[key] = _parser_value(f, obj[name], data)
        elif not f.oneof and data.draw(st.integers(0, 3)) == 0:
            out[key] = None  # null means unset
        elif not f.has_presence and not f.label and data.draw(st.integers(0, 3)) == 0:
            out[key] = {"string": "", "bytes": "", "bool": False, "int32": 0, "int64": "0"}.get(
                f.type, schema.ENUMS.get(f.ref, ("",))[0]
            )
    keys = list(out)
    return {k: out[k] for k in data.draw(st.permutations(keys))}


def _parser_value(f: schema.Field, value: Any, data: st.DataObject) -> Any:
    if f.label == schema.REPEATED:
        return [
            _parser_value(schema.Field(f.name, f.number, f.type, ref=f.ref), v, data) for v in value
        ]
    if f.label == schema.MAP or f.type == schema.STRUCT or f.type == schema.STRING:
        return value
    if f.type == schema.MESSAGE:
        return _parser_form(value, f.ref, data)
    if f.type == schema.INT64:
        n = int(value)
        choice = data.draw(st.integers(0, 2))
        return n if choice == 0 and abs(n) <= 2**53 else (f"{n}e0" if choice == 1 else value)
    if f.type == schema.INT32:
        return str(value) if data.draw(st.booleans()) else value
    if f.type == schema.ENUM:
        names = schema.ENUMS[f.ref]
        return names.index(value) if value in names and data.draw(st.booleans()) else value
    if f.type == schema.BYTES:
        raw = base64.b64decode(value)
        if data.draw(st.booleans()):
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")
        return value
    if f.type == schema.TIMESTAMP:
        return _with_offset(value, data.draw(st.integers(-(23 * 60 + 59), 23 * 60 + 59)))
    return value


def _with_offset(ts: str, minutes: int) -> str:
    seconds, nanos = timestamps.parse_timestamp(ts)
    local = seconds + minutes * 60
    if not timestamps.MIN_TIMESTAMP_SECONDS <= local <= timestamps.MAX_TIMESTAMP_SECONDS:
        return ts
    text = timestamps.timestamp_from_parts(local, 0)[:-1] + f".{nanos:09d}"
    sign = "+" if minutes >= 0 else "-"
    return text + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


@SETTINGS
@given(canonical_events, st.data())
def test_normalize_parser_forms_to_canonical(event: dict[str, Any], data: st.DataObject) -> None:
    form = _parser_form(copy.deepcopy(event), "Event", data)
    got = normalize.normalize_event(form)
    schema.validate_event(got)
    assert canonical.canonical_json(got) == canonical.canonical_json(event)


def test_normalize_examples() -> None:
    given_ = {
        "executionId": "x",
        "ts": "2023-11-14T23:13:20.5+01:00",
        "schemaVersion": "1",
        "kind": 3,
        "message": {"role": "assistant", "parts": [{"data": {"data": {"a": 2**60, "b": 2.0}}}]},
        "actor": None,
        "usage": None,
        "executionStart": None,
    }
    assert normalize.normalize_event(given_) == {
        "execution_id": "x",
        "ts": "2023-11-14T22:13:20.500Z",
        "schema_version": 1,
        "kind": "EVENT_OUTPUT",
        "message": {
            "role": "assistant",
            "parts": [{"data": {"data": {"a": 1152921504606847000, "b": 2}}}],
        },
    }
    start = normalize.normalize_event(
        {"executionStart": {"inputCount": 0, "config": "AP-_", "resumeFromSeq": "0"}}
    )
    assert start == {"execution_start": {"config": "AP+/", "input_count": "0"}}
    assert normalize.normalize_event({"kind": 0, "schemaVersion": 0, "result": {"code": 9}}) == {
        "result": {"code": 9}
    }


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ([], "event: expected a JSON object, got list"),
        ({"executionID": "x"}, "event: unknown field 'executionID'"),
        ({"execution_id": "a", "executionId": "b"}, "event: field 'execution_id' is given twice"),
        ({"message": {}, "end": {}}, "event: oneof 'body' has two members set"),
        ({"kind": "INPUT"}, "event.kind: unknown enum value 'INPUT'"),
        ({"kind": 2**31}, "event.kind: expected an enum name or number"),
        ({"schemaVersion": 1.5}, "event.schemaVersion: not an integer"),
        ({"schemaVersion": "1.5"}, "event.schemaVersion: not an integer in range"),
        ({"schemaVersion": "+1"}, "event.schemaVersion: not an integer"),
        ({"schemaVersion": "1e400"}, "event.schemaVersion: not an integer in range"),
        ({"schemaVersion": 2**31}, "event.schemaVersion: integer out of range"),
        ({"usage": {"inputTokens": 2**63}}, "event.usage.inputTokens: integer out of range"),
        ({"usage": {"inputTokens": True}}, "event.usage.inputTokens: expected an integer"),
        (
            {"executionStart": {"config": "AP8=A"}},
            "event.executionStart.config: base64 has partial",
        ),
        ({"executionStart": {"config": "A+-_"}}, "event.executionStart.config: base64 mixes"),
        ({"executionStart": {"config": "A!!A"}}, "event.executionStart.config: invalid base64"),
        (
            {"executionStart": {"config": "AA\u00e9="}},
            "event.executionStart.config: invalid base64",
        ),
        ({"ts": "\u0662\u0660\u0662\u0664-01-01T00:00:00Z"}, "event.ts: not an RFC 3339"),
        ({"ts": "2023-11-14 22:13:20Z"}, "event.ts: not an RFC 3339 timestamp"),
        ({"ts": "2023-11-14T22:13:20.1234567890Z"}, "event.ts: not an RFC 3339"),
        ({"ts": "0001-01-01T00:00:00+00:01"}, "event.ts: timestamp outside"),
        ({"message": {"parts": [None]}}, "event.message.parts[0]: null is not allowed"),
        ({"message": {"parts": {}}}, "event.message.parts: expected a JSON array"),
        ({"tool": {"args": {"x": float("inf")}}}, "event.tool.args.x: JSON cannot represent"),
        ({"tool": {"args": "x"}}, "event.tool.args: expected a JSON object, got str"),
        ({"model": {"params": {"a": None}}}, "event.model.params: map value for 'a' must be"),
        ({"result": {"isError": "true"}}, "event.result.isError: expected true or false"),
    ],
)
def test_normalize_rejects_what_a_parser_refuses(event: Any, message: str) -> None:
    with pytest.raises(FormatError) as info:
        normalize.normalize_event(event)
    assert str(info.value).startswith(message), str(info.value)


# --------------------------------------------------------------------------- model helpers


def _helper_events() -> list[dict[str, Any]]:
    from datetime import UTC, datetime, timedelta, timezone

    m = construct
    when = datetime(2024, 5, 1, 12, 0, 0, 120000, tzinfo=timezone(timedelta(hours=2)))
    kw: dict[str, Any] = {"execution_id": "e", "ts": when, "actor": {"principal": "p"}}
    return [
        m.input_event(m.text_message("user", "hi"), **kw),
        m.output_event(m.message("assistant", m.text_part(""), m.data_part({"x": 1.5})), **kw),
        m.model_call_event("gpt", input_hash="ab" * 32, call_id="c", params={"t": "0.2"}),
        m.tool_call_event("c", "search", {}, mediation="MEDIATION_CONTROLLER_MEDIATED"),
        m.tool_call_event("c", "search", None, idempotency_key="k"),
        m.tool_result_event(
            "c",
            output={"n": 2**60},
            is_error=True,
            error="x",
            content=[m.text_part("r")],
            code="EXECUTOR_ERROR",
            approval_request_seq=3,
            approval_decision_seq=2**62,
        ),
        m.approval_request_event("c", "why"),
        m.approval_result_event("c", False, request_seq=9),
        m.usage_event("gpt", 10, 0, 2**53 + 1),
        m.lifecycle_event("LIFECYCLE_SUSPEND", snapshot_local="/s", snapshot_sealed=True),
        m.end_event(),
        m.end_event("FAILED", m.rpc_error(13, "boom")),
        m.error_event(14, "unavailable", ts=datetime(1970, 1, 1, tzinfo=UTC)),
        m.execution_start(input_count=0, config=b"\x00", resume_from_seq=4, harness="h"),
        m.event("EVENT_KIND_UNSPECIFIED", schema_version=2, ts="2024-05-01T12:00:00+00:00"),
    ]


def test_helpers_build_canonical_events() -> None:
    events = _helper_events()
    for ev in events:
        schema.validate_event(ev)
        assert normalize.normalize_event(ev) == ev
    assert events[0] == {
        "execution_id": "e",
        "ts": "2024-05-01T10:00:00.120Z",
        "kind": "EVENT_INPUT",
        "message": {"role": "user", "parts": [{"text": {"text": "hi"}}]},
        "actor": {"principal": "p"},
    }
    assert events[1]["message"]["parts"][0] == {"text": {}}
    assert events[3]["tool"] == {
        "id": "c",
        "tool": "search",
        "args": {},
        "mediation": "MEDIATION_CONTROLLER_MEDIATED",
    }
    assert "args" not in events[4]["tool"]
    assert events[5]["result"]["output"] == {"n": 1152921504606847000}
    assert events[8]["usage"] == {
        "model": "gpt",
        "input_tokens": "10",
        "reasoning_tokens": "9007199254740993",
    }
    assert events[10] == {"kind": "EVENT_END", "end": {"state": "COMPLETED"}}
    assert events[13]["execution_start"] == {
        "config": "AA==",
        "resume_from_seq": "4",
        "input_count": "0",
        "harness": "h",
    }
    assert events[14] == {"ts": "2024-05-01T12:00:00Z", "schema_version": 2}


def test_timestamps() -> None:
    from datetime import UTC, datetime

    assert timestamps.format_timestamp(datetime(2024, 1, 1, tzinfo=UTC)) == "2024-01-01T00:00:00Z"
    assert (
        timestamps.format_timestamp(datetime(2024, 1, 1, 0, 0, 0, 5, tzinfo=UTC))
        == "2024-01-01T00:00:00.000005Z"
    )
    assert timestamps.format_timestamp_ns(1) == "1970-01-01T00:00:00.000000001Z"
    assert timestamps.format_timestamp_ns(-1) == "1969-12-31T23:59:59.999999999Z"
    assert (
        timestamps.normalize_timestamp("2024-01-01T00:00:00.1-00:30") == "2024-01-01T00:30:00.100Z"
    )
    assert timestamps.parse_timestamp("0001-01-01T00:00:00Z") == (
        timestamps.MIN_TIMESTAMP_SECONDS,
        0,
    )
    for bad in ("2024-01-01", "2024-01-01T00:00:60Z", "9999-12-31T23:59:59-01:00", 5):
        with pytest.raises(InvalidArgumentError):
            timestamps.parse_timestamp(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="aware datetime"):
        timestamps.format_timestamp(datetime(2024, 1, 1))
    with pytest.raises(InvalidArgumentError):
        timestamps.timestamp_from_parts(timestamps.MAX_TIMESTAMP_SECONDS + 1)


@pytest.mark.parametrize(
    "build",
    [
        lambda: construct.event("INPUT"),
        lambda: construct.event("EVENT_INPUT", message={}, end={}),
        lambda: construct.event("EVENT_INPUT", body={}),
        lambda: construct.event("EVENT_INPUT", message="hi"),
        lambda: construct.event("EVENT_INPUT", schema_version=2**31),
        lambda: construct.event("EVENT_INPUT", execution_id=5),
        lambda: construct.event("EVENT_INPUT", actor={"role": "x"}),
        lambda: construct.usage_event("m", input_tokens=2**63),
        lambda: construct.usage_event("m", input_tokens=True),
        lambda: construct.tool_call_event("c", "t", {"x": float("nan")}),
        lambda: construct.tool_call_event("c", "t", mediation="CONTROLLER_MEDIATED"),
        lambda: construct.lifecycle_event("FORK"),
        lambda: construct.execution_start(input_count=-(2**63) - 1),
        lambda: construct.execution_start(input_count=None, config="text"),
        lambda: construct.model_call_event("m", params={"a": 1}),
        lambda: construct.input_event(construct.text_message("u", "x"), ts="yesterday"),
    ],
)
def test_helpers_refuse_bad_arguments(build: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        build()


# --------------------------------------------------------------------------- fast path


def _generic(event: Any) -> tuple[Any, ...]:
    """What validate_event gives with the generated fast path bypassed."""
    try:
        return ("ok", not schema._check_msg(event, schema._SPECS["Event"]))
    except schema.Invalid as bad:
        return ("err", str(schema.path_error("event", bad)))
    except Exception as exc:
        return ("exc", type(exc).__name__)


def _public(event: Any) -> tuple[Any, ...]:
    try:
        return ("ok", schema.validate_event(event))
    except FormatError as exc:
        return ("err", str(exc))
    except Exception as exc:
        return ("exc", type(exc).__name__)


def test_fast_path_agrees_with_the_generic_checker_on_mutated_events() -> None:
    import random

    eid = "0123456789abcdef"
    seeds: list[Any] = [
        construct.output_event(construct.text_message("assistant", "lorem"), execution_id=eid),
        construct.input_event(construct.text_message("user", "h\u00e9llo"), execution_id=eid),
        construct.model_call_event("m", input_hash="h", call_id="c", params={"t": "0.2"}),
        construct.end_event(state="FAILED", error=construct.rpc_error(3, "x"), execution_id=eid),
        construct.execution_start(input_count=0, config=b"abc", resume_from_seq=5, harness="h"),
        construct.tool_call_event("t1", "search", {"q": "x", "n": 3, "f": 1.5, "\U0001f600": 1}),
        construct.tool_result_event(
            "t1", output={"a": [1, 2.5, {"b": None}]}, is_error=True, error="e",
            content=[construct.text_part("c")], approval_request_seq=3, execution_id=eid,
            actor={"principal": "p"}, schema_version=1,
        ),
        construct.approval_result_event("t1", True, "r", 7, execution_id=eid),
        construct.usage_event("m", 1, 2, 3, ts="2024-01-02T03:04:05.123Z"),
        construct.lifecycle_event(model.LIFECYCLE_KINDS[1], "d", snapshot_memory=True),
        {"kind": "EVENT_PARKED", "parked": {"tool_call_id": "x", "request_seq": "-12"}},
    ]  # fmt: skip
    pool: list[Any] = [
        None, 0, 1, -1, 2**31, 2**63, "", "0", "1", "-5", "01", "9223372036854775808",
        "AAA=", "AA==", "A", True, False, 1.5, float("nan"), [], [1], {}, {"a": "b"},
        {"text": {"text": "hi"}}, "EVENT_END", "EVENT_UNSPECIFIED", "\ud800", "\u00e9",
        "2024-01-02T03:04:05Z", "2024-02-30T00:00:00Z", "2024-01-02T03:04:05.100Z",
        {"role": "user", "parts": [{"text": {"text": "x"}}]}, {"\ud800x": "y"}, 99,
        {"reasoning": {"summary": [{"text": {"text": "s"}}], "ordinal": 0}},
    ]  # fmt: skip
    keys = [*sorted({f.name for fields in schema.MESSAGES.values() for f in fields}), "x"]

    def containers(o: Any, acc: list[Any]) -> list[Any]:
        if isinstance(o, (dict, list)):
            acc.append(o)
            for x in o.values() if isinstance(o, dict) else o:
                containers(x, acc)
        return acc

    rng = random.Random(7)
    for seed in seeds:
        assert _public(seed) == _generic(seed) and _public(seed)[0] == "ok"
    for _ in range(20000):
        event = copy.deepcopy(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            c = rng.choice(containers(event, []))
            new = copy.deepcopy(rng.choice(pool))
            if isinstance(c, dict):
                r = rng.random()
                if r < 0.4 and c:
                    c[rng.choice(list(c))] = new
                elif r < 0.6 and c:
                    del c[rng.choice(list(c))]
                else:
                    c[rng.choice(keys)] = new
            elif c and rng.random() < 0.5:
                c[rng.randrange(len(c))] = new
            else:
                c.append(new)
        assert _public(event) == _generic(event), event


_B64_OLD = re.compile(
    r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?"
)


@given(st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()) | st.text(max_size=12))
def test_canonical_base64_is_the_old_regex_without_its_memory(text: str) -> None:
    """The check of a field's base64 used a regex that kept state per character (800 MB for
    an 18 MiB part); the flat check accepts exactly what it accepted."""
    from agentsessions.v1 import schema

    assert schema.is_canonical_base64(text) == bool(_B64_OLD.fullmatch(text))
    for tail in ("AB==", "AQ==", "ABC=", "ABE=", "ABCD", "AB=", "A==="):
        assert schema.is_canonical_base64(text + tail) == bool(_B64_OLD.fullmatch(text + tail))
