"""The constructors of ``agentsessions.v1`` messages and events: the only code that builds one.

Every dict built here keeps the rules :mod:`.model` states (proto field names, int64 as
decimal strings, enum value names, RFC 3339 ``...Z`` timestamps, defaults omitted except an
``optional`` field and a set message), so an event needs no conversion before it is hashed;
``schema.validate_event`` checks the same rules on a dict from anywhere else. The event
constructors' ``**kw`` is ``execution_id``, ``ts``, ``actor``, ``schema_version`` of
:func:`event`. Values a caller passes wrongly raise InvalidArgumentError.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.v1.model import (
    BODY_FIELDS,
    EVENT_KINDS,
    LIFECYCLE_KINDS,
    MEDIATIONS,
    TOOL_RESULT_CODES,
    Error,
    Event,
    IdentityRef,
    Message,
    Part,
)
from agentsessions.v1.numbers import ijson
from agentsessions.v1.timestamps import format_timestamp, normalize_timestamp


def _ts(ts: datetime | str | None) -> str | None:
    if isinstance(ts, datetime):
        return format_timestamp(ts)
    return None if ts is None else normalize_timestamp(ts)


# --------------------------------------------------------------------------- values


def struct_value(value: Mapping[str, Any], *, path: str = "struct") -> dict[str, Any]:
    """A ``google.protobuf.Struct`` (JSON object) from a mapping, see :func:`.numbers.ijson`."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{path}: expected a JSON object, got {type(value).__name__}")
    out: dict[str, Any] = ijson(dict(value), path=path)
    return out


_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)


def _int(name: str, value: int, bounds: tuple[int, int]) -> int:
    if type(value) is not int or not bounds[0] <= value <= bounds[1]:
        bits = 64 if bounds is _INT64 else 32
        raise InvalidArgumentError(f"{name} must be an int{bits}, got {value!r}")
    return value


def _put_int64(out: dict[str, Any], name: str, value: int) -> None:
    if _int(name, value, _INT64):
        out[name] = str(value)


def _enum(name: str, value: str, names: Sequence[str]) -> str | None:
    if value not in names:
        raise InvalidArgumentError(f"{name} must be one of {', '.join(names)}; got {value!r}")
    return value if value != names[0] else None


def _fields(**values: Any) -> dict[str, Any]:
    """Strings, bools, sub-dicts and lists without their defaults (the proto3 omission rule).

    ``None`` is absent; a set but empty message ``{}`` is kept.
    """
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None or value is False:
            continue
        if not isinstance(value, (str, bool, dict, list)):  # a tuple: ~5x a union's speed
            raise InvalidArgumentError(f"{name} has the wrong type {type(value).__name__}")
        if value != "" and value != []:
            out[name] = value
    return out


# --------------------------------------------------------------------------- constructors


def text_part(text: str) -> Part:
    """A ``Part`` holding one text block."""
    return {"text": _fields(text=text)}  # type: ignore[typeddict-item]


def data_part(data: Mapping[str, Any]) -> Part:
    """A ``Part`` holding structured data (a Struct; numbers get float64 semantics)."""
    return {"data": {"data": struct_value(data, path="data")}}


def message(role: str, *parts: Part) -> Message:
    """A ``Message`` with a role and parts."""
    out: Message = _fields(role=role)  # type: ignore[assignment]
    if parts:
        out["parts"] = [dict(p) for p in parts]  # type: ignore[misc]
    return out


def text_message(role: str, text: str) -> Message:
    """A ``Message`` with a single text part."""
    return message(role, text_part(text))


def identity(principal: str = "", issuer: str = "", subject: str = "") -> IdentityRef:
    """An ``IdentityRef`` (empty fields omitted)."""
    return _fields(principal=principal, issuer=issuer, subject=subject)  # type: ignore[return-value]


def rpc_error(code: int, description: str = "") -> Error:
    """An ``Error`` (a gRPC status code, int32, and a description)."""
    out: dict[str, Any] = _fields(description=description)
    if _int("code", code, _INT32):
        out["code"] = code
    return out  # type: ignore[return-value]


def event(
    kind: str,
    *,
    execution_id: str = "",
    ts: datetime | str | None = None,
    actor: Mapping[str, str] | None = None,
    schema_version: int = 0,
    **body: Mapping[str, Any],
) -> Event:
    """An ``Event`` of ``kind`` (an EVENT_* name) with at most one body member.

    ``body`` is ``message=...``, ``model=...`` and so on (see BODY_FIELDS); its value must be
    a proto3-JSON dict already (use the helpers). ``ts`` is an aware datetime or RFC 3339
    text. An actor whose fields are all empty is dropped, as the reference does.
    """
    if len(body) > 1:
        raise InvalidArgumentError(f"an event has at most one body, got {', '.join(body)}")
    out: dict[str, Any] = _fields(execution_id=execution_id, ts=_ts(ts))
    if _int("schema_version", schema_version, _INT32):
        out["schema_version"] = schema_version
    name = _enum("kind", kind, EVENT_KINDS)
    if name:
        out["kind"] = name
    for member, value in body.items():
        if member not in BODY_FIELDS:
            raise InvalidArgumentError(f"{member!r} is not an Event body (one of {BODY_FIELDS})")
        if not isinstance(value, Mapping):
            raise InvalidArgumentError(f"{member} must be a dict, got {type(value).__name__}")
        out[member] = dict(value)
    if actor:
        if not set(actor) <= {"principal", "issuer", "subject"}:
            raise InvalidArgumentError(f"actor keys are principal, issuer, subject: {actor!r}")
        ref = identity(**actor)
        if ref:
            out["actor"] = ref
    return out  # type: ignore[return-value]


def input_event(msg: Message, **kw: Any) -> Event:
    """EVENT_INPUT carrying a user message (``kw``: execution_id, ts, actor)."""
    return event("EVENT_INPUT", message=msg, **kw)


def output_event(msg: Message, **kw: Any) -> Event:
    """EVENT_OUTPUT carrying the model's (assistant) message."""
    return event("EVENT_OUTPUT", message=msg, **kw)


def model_call_event(
    model: str,
    *,
    input_hash: str = "",
    call_id: str = "",
    params: Mapping[str, str] | None = None,
    **kw: Any,
) -> Event:
    """EVENT_MODEL_CALL as journaled: model, params, input_hash and id (no wire-only fields)."""
    body: dict[str, Any] = _fields(model=model)
    if params:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
            raise InvalidArgumentError("model call params must map strings to strings")
        body["params"] = dict(params)
    body.update(_fields(input_hash=input_hash, id=call_id))
    return event("EVENT_MODEL_CALL", model=body, **kw)


def tool_call_event(
    call_id: str,
    tool: str,
    args: Mapping[str, Any] | None = None,
    *,
    mediation: str = "MEDIATION_UNSPECIFIED",
    idempotency_key: str = "",
    **kw: Any,
) -> Event:
    """EVENT_TOOL_CALL; ``args`` is a Struct (float64 numbers), ``{}`` is kept as set."""
    body = _fields(
        id=call_id,
        tool=tool,
        args=None if args is None else struct_value(args, path="args"),
        mediation=_enum("mediation", mediation, MEDIATIONS),
        idempotency_key=idempotency_key,
    )
    return event("EVENT_TOOL_CALL", tool=body, **kw)


def tool_result_event(
    call_id: str,
    *,
    output: Mapping[str, Any] | None = None,
    output_uri: str = "",
    is_error: bool = False,
    error: str = "",
    output_digest: str = "",
    content: Sequence[Part] = (),
    code: str = "CODE_UNSPECIFIED",
    approval_request_seq: int = 0,
    approval_decision_seq: int = 0,
    **kw: Any,
) -> Event:
    """EVENT_TOOL_RESULT; ``output`` is a Struct, ``content`` parts for the model."""
    body = _fields(
        id=call_id,
        output=None if output is None else struct_value(output, path="output"),
        output_uri=output_uri,
        is_error=bool(is_error),
        error=error,
        output_digest=output_digest,
        content=[dict(p) for p in content] or None,
        code=_enum("code", code, TOOL_RESULT_CODES),
    )
    _put_int64(body, "approval_request_seq", approval_request_seq)
    _put_int64(body, "approval_decision_seq", approval_decision_seq)
    return event("EVENT_TOOL_RESULT", result=body, **kw)


def approval_request_event(tool_call_id: str, reason: str = "", **kw: Any) -> Event:
    """EVENT_APPROVAL_REQUEST (host-owned)."""
    return event(
        "EVENT_APPROVAL_REQUEST", approval=_fields(tool_call_id=tool_call_id, reason=reason), **kw
    )


def approval_result_event(
    tool_call_id: str, approved: bool, reason: str = "", request_seq: int = 0, **kw: Any
) -> Event:
    """EVENT_APPROVAL_RESULT (host-owned); ``request_seq`` is the request's journal seq."""
    body = _fields(tool_call_id=tool_call_id, approved=bool(approved), reason=reason)
    _put_int64(body, "request_seq", request_seq)
    return event("EVENT_APPROVAL_RESULT", approval_result=body, **kw)


def usage_event(
    model: str = "",
    input_tokens: int = 0,
    output_tokens: int = 0,
    reasoning_tokens: int = 0,
    **kw: Any,
) -> Event:
    """EVENT_USAGE: token counts for one model call."""
    body = _fields(model=model)
    _put_int64(body, "input_tokens", input_tokens)
    _put_int64(body, "output_tokens", output_tokens)
    _put_int64(body, "reasoning_tokens", reasoning_tokens)
    return event("EVENT_USAGE", usage=body, **kw)


def lifecycle_event(
    kind: str,
    detail: str = "",
    snapshot_local: str = "",
    snapshot_external_uri: str = "",
    snapshot_memory: bool = False,
    snapshot_sealed: bool = False,
    **kw: Any,
) -> Event:
    """EVENT_LIFECYCLE of ``kind`` (a LIFECYCLE_* name), e.g. FORK with detail "parent@7"."""
    body = _fields(
        kind=_enum("kind", kind, LIFECYCLE_KINDS),
        detail=detail,
        snapshot_local=snapshot_local,
        snapshot_external_uri=snapshot_external_uri,
        snapshot_memory=bool(snapshot_memory),
        snapshot_sealed=bool(snapshot_sealed),
    )
    return event("EVENT_LIFECYCLE", lifecycle=body, **kw)


def end_event(state: str = "COMPLETED", error: Error | None = None, **kw: Any) -> Event:
    """EVENT_END: the execution's terminal state ("COMPLETED", "FAILED", "CANCELED")."""
    body = _fields(state=state, error=None if error is None else dict(error))
    return event("EVENT_END", end=body, **kw)


def error_event(code: int, description: str, **kw: Any) -> Event:
    """EVENT_ERROR carrying a gRPC status code and description."""
    return event("EVENT_ERROR", error=rpc_error(code, description), **kw)


def execution_start(
    *,
    input_count: int | None,
    config: bytes = b"",
    resume_from_seq: int = 0,
    harness: str = "",
    harness_version: str = "",
    **kw: Any,
) -> Event:
    """EVENT_EXECUTION_START; ``input_count`` None is absent, 0 is present ("0")."""
    if not isinstance(config, bytes | bytearray | memoryview):
        raise InvalidArgumentError(f"config must be bytes, got {type(config).__name__}")
    body: dict[str, Any] = {"config": base64.b64encode(config).decode()} if config else {}
    _put_int64(body, "resume_from_seq", resume_from_seq)
    if input_count is not None:
        body["input_count"] = str(_int("input_count", input_count, _INT64))
    body.update(_fields(harness=harness, harness_version=harness_version))
    return event("EVENT_EXECUTION_START", execution_start=body, **kw)
