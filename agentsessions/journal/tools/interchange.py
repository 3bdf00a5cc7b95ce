"""Reading journals written by the Go reference: its fixture JSON and LogRecord lines.

Invariants:

- :func:`go_event_to_wire` maps a Go ``api.Event`` (encoding/json, Go field names) to exactly
  the canonical proto3-JSON Event the reference hashes, following its ``wire/convert.go``:
  the zero time means no ``ts``; an all-empty Actor means no ``actor``; the first non-null body
  pointer wins (Message, ModelCall, ToolCall, Result, Approval, ApprovalResult, Usage,
  Lifecycle, End, Err, ExecutionStart) and later ones are dropped as Go drops them; a FilePart or
  ReasoningPart with empty bytes and an empty URI sets no oneof; structured maps pass through
  Struct (float64) semantics; an empty ``Config`` is unset while ``InputCount`` keeps presence.
- Unknown keys, unknown Go enum strings and wrongly typed values raise FormatError naming the
  path (``record 2: Event.Message.Parts[0].Text.Text: ...``): an event we cannot map exactly
  would hash differently, so it is refused rather than guessed.
- Records keep their claimed ``Hash``/``PrevHash``/``Fence``; verifying them is the caller's job.

Go field names come from the reference's ``api`` package (v0.1.2 and the approval era);
``ToolResult.Approval`` is a wire-only receipt with no proto field, so it is not hashed.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentsessions.errors import FormatError, InvalidArgumentError
from agentsessions.journal.format import canonical
from agentsessions.v1 import model, normalize, numbers, schema, timestamps


@dataclass(frozen=True, slots=True)
class ForeignRecord:
    """A record read from another writer's journal: chain fields as claimed, canonical event."""

    seq: int
    prev_hash: str
    content_hash: str
    fence: int
    event: dict[str, Any]

    def payload(self) -> bytes:
        """The canonical envelope this record's content hash must be the SHA-256 of."""
        return canonical.envelope(canonical.canonical_json(self.event), self.prev_hash, self.seq)


GoRecord = ForeignRecord
"""Alias: a record of the Go fixture format (``eventlog.Record``)."""

_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_GO_ZERO_TIME = (timestamps.MIN_TIMESTAMP_SECONDS, 0)

_KINDS = {k.removeprefix("EVENT_"): k for k in model.EVENT_KINDS[1:] if k != "EVENT_PARKED"}
_MEDIATIONS = {m.removeprefix("MEDIATION_"): m for m in model.MEDIATIONS[1:]}
_LIFECYCLE = {k.removeprefix("LIFECYCLE_"): k for k in model.LIFECYCLE_KINDS[1:]}
_CODES: dict[str, str] = {c: c for c in model.TOOL_RESULT_CODES[1:]}


class _Go:
    """Typed access to one Go JSON object, with the path for error messages."""

    def __init__(self, obj: Any, path: str, keys: frozenset[str]) -> None:
        if not isinstance(obj, dict):
            raise FormatError(f"{path}: expected a JSON object, got {_kind(obj)}")
        unknown = sorted(set(obj) - keys)
        if unknown:
            raise FormatError(f"{path}: unknown field {unknown[0]!r}")
        self.obj, self.path = obj, path

    def raw(self, key: str) -> Any:
        return self.obj.get(key)

    def where(self, key: str) -> str:
        return f"{self.path}.{key}"

    def text(self, key: str) -> str:
        v = self.obj.get(key, "")
        if not isinstance(v, str):
            raise FormatError(f"{self.where(key)}: expected a string, got {_kind(v)}")
        return v

    def flag(self, key: str) -> bool:
        v = self.obj.get(key, False)
        if not isinstance(v, bool):
            raise FormatError(f"{self.where(key)}: expected true or false, got {_kind(v)}")
        return v

    def integer(self, key: str, bounds: tuple[int, int] = _INT64) -> int:
        v = self.obj.get(key, 0)
        if type(v) is not int or not bounds[0] <= v <= bounds[1]:
            raise FormatError(f"{self.where(key)}: expected an integer in range, got {v!r}")
        return v

    def b64(self, key: str) -> str:
        """Go []byte: std base64 or null; returns canonical base64 ("" for empty)."""
        v = self.obj.get(key)
        if v is None:
            return ""
        if not isinstance(v, str):
            raise FormatError(f"{self.where(key)}: expected base64 or null, got {_kind(v)}")
        if schema.is_canonical_base64(v):
            return v  # already what re-encoding gives: no decoded and re-encoded copies
        try:
            return base64.b64encode(base64.b64decode(v, validate=True)).decode()
        except ValueError:  # binascii.Error, or non-ASCII text
            raise FormatError(f"{self.where(key)}: invalid base64") from None

    def enum(self, key: str, names: Mapping[str, str]) -> str | None:
        v = self.text(key)
        if v == "":
            return None
        if v not in names:
            raise FormatError(f"{self.where(key)}: unknown value {v!r} (known: {', '.join(names)})")
        return names[v]

    def struct(self, key: str) -> dict[str, Any] | None:
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise FormatError(f"{self.where(key)}: expected a JSON object or null, got {_kind(v)}")
        out: dict[str, Any] = numbers.ijson(v, error=FormatError, path=self.where(key))
        return out

    def sub(self, key: str, convert: Callable[[Any, str], dict[str, Any]]) -> dict[str, Any] | None:
        v = self.obj.get(key)
        return None if v is None else convert(v, self.where(key))

    def items(self, key: str, convert: Callable[[Any, str], dict[str, Any]]) -> list[Any] | None:
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, list):
            raise FormatError(f"{self.where(key)}: expected an array or null, got {_kind(v)}")
        return [convert(x, f"{self.where(key)}[{i}]") for i, x in enumerate(v)] or None


def _kind(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def _keys(*names: str) -> frozenset[str]:
    return frozenset(names)


def _put_int64(out: dict[str, Any], name: str, value: int) -> None:
    if value:
        out[name] = str(value)


def _fields(**values: Any) -> dict[str, Any]:
    """Drop proto3 defaults (None, "", False) keeping set messages."""
    return {k: v for k, v in values.items() if v is not None and v != "" and v is not False}


# --------------------------------------------------------------------------- content


def _part(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("Text", "File", "Data", "Reasoning", "ToolCall", "ToolResult"))
    if g.raw("Text") is not None:
        t = _Go(g.raw("Text"), g.where("Text"), _keys("Text"))
        return {"text": _fields(text=t.text("Text"))}
    if g.raw("File") is not None:
        return {"file": _file(g.raw("File"), g.where("File"))}
    data = g.struct("Data")
    if data is not None:
        return {"data": {"data": data}}
    for key, member, convert in (
        ("Reasoning", "reasoning", _reasoning),
        ("ToolCall", "tool_call", _tool_call),
        ("ToolResult", "tool_result", _tool_result),
    ):
        body = g.sub(key, convert)
        if body is not None:
            return {member: body}
    return {}


def _file(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("MIME", "Bytes", "URI", "Digest", "Name"))
    data, uri = g.b64("Bytes"), g.text("URI")
    return _fields(
        mime=g.text("MIME"),
        bytes=data or None,
        uri=uri if not data and uri else None,
        name=g.text("Name"),
        digest=g.text("Digest"),
    )


def _reasoning(obj: Any, path: str) -> dict[str, Any]:
    keys = _keys(
        "Provider", "ModelID", "Opaque", "OpaqueURI", "OpaqueDigest", "Summary", "ItemID",
        "Ordinal", "ValidityScope",
    )  # fmt: skip
    g = _Go(obj, path, keys)
    opaque, uri = g.b64("Opaque"), g.text("OpaqueURI")
    out = _fields(
        provider=g.text("Provider"),
        model_id=g.text("ModelID"),
        opaque_bytes=opaque or None,
        opaque_uri=uri if not opaque and uri else None,
        summary=g.items("Summary", _part),
        item_id=g.text("ItemID"),
        validity_scope=g.text("ValidityScope"),
        opaque_digest=g.text("OpaqueDigest"),
    )
    ordinal = g.integer("Ordinal", _INT32)
    if ordinal:
        out["ordinal"] = ordinal
    return out


def _message(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("Role", "Parts"))
    return _fields(role=g.text("Role"), parts=g.items("Parts", _part))


def _model_call(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("Model", "Params", "InputHash", "ID"))
    params = g.raw("Params")
    if params is not None and not (
        isinstance(params, dict) and all(isinstance(v, str) for v in params.values())
    ):
        raise FormatError(f"{g.where('Params')}: expected an object of strings or null")
    return _fields(
        model=g.text("Model"),
        params=params or None,
        input_hash=g.text("InputHash"),
        id=g.text("ID"),
    )


def _tool_call(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("ID", "Tool", "Args", "Mediation", "IdempotencyKey"))
    return _fields(
        id=g.text("ID"),
        tool=g.text("Tool"),
        args=g.struct("Args"),
        mediation=g.enum("Mediation", _MEDIATIONS),
        idempotency_key=g.text("IdempotencyKey"),
    )


def _tool_result(obj: Any, path: str) -> dict[str, Any]:
    keys = _keys(
        "ID", "Output", "OutputURI", "OutputDigest", "IsError", "Error", "Content", "Code",
        "ApprovalRequestSeq", "ApprovalDecisionSeq", "Approval",
    )  # fmt: skip
    g = _Go(obj, path, keys)
    out = _fields(
        id=g.text("ID"),
        output=g.struct("Output"),
        output_uri=g.text("OutputURI"),
        is_error=g.flag("IsError"),
        error=g.text("Error"),
        output_digest=g.text("OutputDigest"),
        content=g.items("Content", _part),
    )
    code = _result_code(g)
    if code:
        out["code"] = code
    _put_int64(out, "approval_request_seq", g.integer("ApprovalRequestSeq"))
    _put_int64(out, "approval_decision_seq", g.integer("ApprovalDecisionSeq"))
    return out


def _result_code(g: _Go) -> str | int | None:
    """Go's ToolResultCode is numeric (an open enum: unknown numbers stay numbers)."""
    v = g.raw("Code")
    if v is None or isinstance(v, str):
        return g.enum("Code", _CODES)
    n = g.integer("Code", _INT32)
    if 0 <= n < len(model.TOOL_RESULT_CODES):
        return model.TOOL_RESULT_CODES[n] if n else None
    return n


# --------------------------------------------------------------------------- bodies


def _approval(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("ToolCallID", "Reason"))
    return _fields(tool_call_id=g.text("ToolCallID"), reason=g.text("Reason"))


def _approval_result(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("ToolCallID", "Approved", "Reason", "RequestSeq"))
    out = _fields(
        tool_call_id=g.text("ToolCallID"), approved=g.flag("Approved"), reason=g.text("Reason")
    )
    _put_int64(out, "request_seq", g.integer("RequestSeq"))
    return out


def _usage(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("Model", "InputTokens", "OutputTokens", "ReasoningTokens"))
    out = _fields(model=g.text("Model"))
    for key, name in (
        ("InputTokens", "input_tokens"),
        ("OutputTokens", "output_tokens"),
        ("ReasoningTokens", "reasoning_tokens"),
    ):
        _put_int64(out, name, g.integer(key))
    return out


def _lifecycle(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("Kind", "Detail", "Snapshot"))
    out = _fields(kind=g.enum("Kind", _LIFECYCLE), detail=g.text("Detail"))
    if g.raw("Snapshot") is not None:
        s = _Go(
            g.raw("Snapshot"),
            g.where("Snapshot"),
            _keys("Local", "ExternalURI", "Memory", "Sealed"),
        )
        out.update(
            _fields(
                snapshot_local=s.text("Local"),
                snapshot_external_uri=s.text("ExternalURI"),
                snapshot_memory=s.flag("Memory"),
                snapshot_sealed=s.flag("Sealed"),
            )
        )
    return out


def _error(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("Code", "Description"))
    out = _fields(description=g.text("Description"))
    code = g.integer("Code", _INT32)
    if code:
        out = {"code": code, **out}
    return out


def _end(obj: Any, path: str) -> dict[str, Any]:
    g = _Go(obj, path, _keys("State", "Error"))
    return _fields(state=g.text("State"), error=g.sub("Error", _error))


def _execution_start(obj: Any, path: str) -> dict[str, Any]:
    keys = _keys("Config", "ResumeFromSeq", "InputCount", "Harness", "HarnessVersion")
    g = _Go(obj, path, keys)
    out = _fields(config=g.b64("Config"))
    _put_int64(out, "resume_from_seq", g.integer("ResumeFromSeq"))
    if g.raw("InputCount") is not None:
        out["input_count"] = str(g.integer("InputCount"))
    out.update(_fields(harness=g.text("Harness"), harness_version=g.text("HarnessVersion")))
    return out


_BODIES: tuple[tuple[str, str, Callable[[Any, str], dict[str, Any]]], ...] = (
    ("Message", "message", _message),
    ("ModelCall", "model", _model_call),
    ("ToolCall", "tool", _tool_call),
    ("Result", "result", _tool_result),
    ("Approval", "approval", _approval),
    ("ApprovalResult", "approval_result", _approval_result),
    ("Usage", "usage", _usage),
    ("Lifecycle", "lifecycle", _lifecycle),
    ("End", "end", _end),
    ("Err", "error", _error),
    ("ExecutionStart", "execution_start", _execution_start),
)
_EVENT_KEYS = _keys(
    "ExecutionID", "Timestamp", "SchemaVersion", "Kind", "Actor", *(b[0] for b in _BODIES)
)


# --------------------------------------------------------------------------- events


def go_event_to_wire(ev: Mapping[str, Any], path: str = "Event") -> dict[str, Any]:
    """The canonical proto3-JSON Event the reference hashes for a Go ``api.Event`` object."""
    g = _Go(dict(ev) if isinstance(ev, Mapping) else ev, path, _EVENT_KEYS)
    out = _fields(execution_id=g.text("ExecutionID"), ts=_go_time(g))
    version = g.integer("SchemaVersion", _INT32)
    if version:
        out["schema_version"] = version
    kind = g.enum("Kind", _KINDS)
    if kind:
        out["kind"] = kind
    for key, member, convert in _BODIES:
        body = g.sub(key, convert)
        if body is not None:
            out[member] = body
            break  # Go's EventToProto takes the first non-nil body and drops the rest
    if g.raw("Actor") is not None:
        a = _Go(g.raw("Actor"), g.where("Actor"), _keys("Principal", "Issuer", "Subject"))
        actor = _fields(
            principal=a.text("Principal"), issuer=a.text("Issuer"), subject=a.text("Subject")
        )
        if actor:
            out["actor"] = actor
    return out


def _go_time(g: _Go) -> str | None:
    text = g.raw("Timestamp")
    if text is None:
        return None
    if not isinstance(text, str):
        raise FormatError(f"{g.where('Timestamp')}: expected an RFC 3339 string, got {_kind(text)}")
    try:
        parts = timestamps.parse_timestamp(text)
    except InvalidArgumentError as exc:
        raise FormatError(f"{g.where('Timestamp')}: {exc}") from None
    return None if parts == _GO_ZERO_TIME else timestamps.timestamp_from_parts(*parts)


# --------------------------------------------------------------------------- records

_RECORD_KEYS = _keys("Seq", "PrevHash", "Hash", "Fence", "Event")


def _go_record(obj: Any, index: int) -> ForeignRecord:
    where = f"record {index}"
    g = _Go(obj, where, _RECORD_KEYS)
    if "Event" not in g.obj:
        raise FormatError(f"{where}: no Event")
    return ForeignRecord(
        seq=g.integer("Seq"),
        prev_hash=_hash(g.text("PrevHash"), f"{where}.PrevHash", empty_ok=True),
        content_hash=_hash(g.text("Hash"), f"{where}.Hash", empty_ok=False),
        fence=g.integer("Fence"),
        event=go_event_to_wire(g.raw("Event"), f"{where}: Event"),
    )


def _hash(value: str, where: str, *, empty_ok: bool) -> str:
    if (value or not empty_ok) and not (len(value) == 64 and _is_hex(value)):
        raise FormatError(f"{where}: expected 64 lowercase hex digits, got {value!r}")
    return value


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def parse_go_records(data: bytes) -> list[ForeignRecord]:
    """Parse the Go reference's fixture journal: a JSON array of ``eventlog.Record``."""
    return go_records_from_json(canonical.loads(data))


def go_records_from_json(doc: Any) -> list[ForeignRecord]:
    """:func:`parse_go_records` of a document already decoded to JSON values."""
    if not isinstance(doc, list):
        raise FormatError(f"a Go journal is a JSON array of records, got {_kind(doc)}")
    return [_go_record(obj, i) for i, obj in enumerate(doc, start=1)]


def parse_logrecord_line(line: bytes) -> ForeignRecord:
    """Parse one ``agentsessions.v1.LogRecord`` in proto3-JSON (any form a parser accepts)."""
    return logrecord_from_json(canonical.loads(line))


def logrecord_from_json(obj: Any) -> ForeignRecord:
    """:func:`parse_logrecord_line` of a line already decoded to JSON values.

    Lets a reader drop the line before the record is normalised: the decoded strings are
    shared, never copied, so a wide record is held once (import and verify stay bounded).
    """
    rec = normalize.normalize_message(obj, "LogRecord", "record")
    if "event" not in rec:
        raise FormatError("record: no event")
    return ForeignRecord(
        seq=int(rec.get("seq", "0")),
        prev_hash=_hash(rec.get("prev_hash", ""), "record.prev_hash", empty_ok=True),
        content_hash=_hash(rec.get("content_hash", ""), "record.content_hash", empty_ok=False),
        fence=int(rec.get("fence", "0")),
        event=rec["event"],
    )


__all__ = [
    "ForeignRecord",
    "GoRecord",
    "go_event_to_wire",
    "go_records_from_json",
    "logrecord_from_json",
    "parse_go_records",
    "parse_logrecord_line",
]
