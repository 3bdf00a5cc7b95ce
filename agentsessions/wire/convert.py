"""Conversions between the engine's values and the generated ``agentsessions.v1`` messages.

The engine speaks proto3-JSON dicts (:mod:`agentsessions.v1.model`: an Event in memory *is*
its canonical proto3-JSON) and the typed values of :mod:`agentsessions.sessions.values`; the
wire speaks protobuf. Invariants:

- ``event_from_proto(event_to_proto(e)) == e`` for every canonical event ``e``, so its
  content hash is unchanged by a trip over the wire (tests/unit/test_wire_convert.py checks
  this on the golden vectors, the Go fixture and Hypothesis events);
- a received message that carries fields this schema does not know is refused (FormatError):
  proto3-JSON would silently drop them and the event would hash differently;
- :func:`record_from_proto` recomputes the record's payload and refuses a record whose
  content hash does not match its event as received (ChainBrokenError);
- foreign errors (``json_format.ParseError``, protobuf's ``ValueError``/``TypeError``) become
  ours where they enter: a dict that is not valid proto3-JSON is InvalidArgumentError.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from agentsessions.errors import ChainBrokenError, FormatError, InvalidArgumentError
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record
from agentsessions.sessions.values import LogRecord, Memory, Session
from agentsessions.v1.normalize import normalize_message
from agentsessions.v1.numbers import json_number
from agentsessions.v1.results import ApprovalRef, UnresolvedCall
from agentsessions.wire import fastconv
from agentsessions.wire.gen import common_pb2, session_pb2

M = TypeVar("M", bound=ProtoMessage)


# --------------------------------------------------------------------------- generic


def to_proto(obj: Mapping[str, Any], cls: type[M], what: str = "message") -> M:
    """Parse the proto3-JSON dict ``obj`` into a new ``cls``; InvalidArgumentError if invalid."""
    fast: M | None = fastconv.to_proto(cls, obj)  # the same message, for the plain dicts
    if fast is not None:  # most are (a turn's text input: 2.4 us against ParseDict's 9.8)
        return fast
    try:
        return json_format.ParseDict(dict(obj), cls())
    except (json_format.ParseError, ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"{what} is not valid proto3-JSON: {exc}") from None


def check_known(msg: ProtoMessage, what: str) -> None:
    """Raise FormatError if ``msg`` (or any message in it) carries unknown fields."""
    known = type(msg)()
    known.CopyFrom(msg)
    known.DiscardUnknownFields()
    if known.ByteSize() != msg.ByteSize():
        raise FormatError(
            f"{what} carries fields this agentsessions.v1 schema does not know",
            hint="upgrade agentsessions: a record must be read with every field its writer used",
        )


def from_proto(msg: ProtoMessage, message: str, what: str) -> dict[str, Any]:
    """The canonical proto3-JSON dict of ``msg`` (schema ``message`` of agentsessions.v1)."""
    check_known(msg, what)
    fast = fastconv.to_dict(msg)  # the same dict, for the plain messages most are
    if fast is not None:
        return fast
    try:
        loose = json_format.MessageToDict(msg, preserving_proto_field_name=True)
    except ValueError as exc:  # a NaN or infinity in a Struct has no JSON form
        raise FormatError(f"{what} has no proto3-JSON form: {exc}") from None
    # MessageToDict is a proto3-JSON printer: canonical but for Struct numbers, which it
    # gives as floats (2.0); the normaliser spells them as decoding JCS text would (2)
    return normalize_message(loose, message, what)


# --------------------------------------------------------------------------- events, records


def event_to_proto(event: Mapping[str, Any]) -> common_pb2.Event:
    """The ``Event`` message of a proto3-JSON event dict."""
    return to_proto(event, common_pb2.Event, "event")


def event_from_proto(msg: common_pb2.Event) -> dict[str, Any]:
    """The canonical proto3-JSON dict of an ``Event`` message (what is hashed)."""
    return from_proto(msg, "Event", "event")


def message_to_proto(message: Mapping[str, Any]) -> common_pb2.Message:
    """The ``Message`` of a proto3-JSON message dict (a turn input)."""
    return to_proto(message, common_pb2.Message, "message")


def message_from_proto(msg: common_pb2.Message) -> dict[str, Any]:
    """The canonical proto3-JSON dict of a ``Message``."""
    return from_proto(msg, "Message", "message")


def record_to_proto(record: LogRecord) -> common_pb2.LogRecord:
    """The ``LogRecord`` of a committed record (its stored hash, its fence)."""
    return common_pb2.LogRecord(
        seq=record.seq,
        prev_hash=record.prev_hash,
        content_hash=record.content_hash,
        fence=record.fence,
        event=event_to_proto(record.event),
    )


def record_from_proto(msg: common_pb2.LogRecord) -> Record:
    """The committed record a ``LogRecord`` carries, its payload rebuilt from the event.

    The received content hash must be the hash of the rebuilt payload, so what crossed the
    wire is exactly what was committed; otherwise ChainBrokenError naming the seq.
    """
    if msg.seq < 0 or msg.fence < 0:
        raise FormatError(f"record {msg.seq}: seq and fence must not be negative")
    event = event_from_proto(msg.event)
    try:
        record = Record.seal(
            canonical.canonical_json(event), seq=msg.seq, prev_hash=msg.prev_hash, fence=msg.fence
        )
    except InvalidArgumentError as exc:
        raise FormatError(f"record {msg.seq}: {exc}") from None
    if record.content_hash != msg.content_hash:
        raise ChainBrokenError(
            f"record {msg.seq}: content_hash does not match its event as received",
            seq=msg.seq,
        )
    return record


def committed_to_proto(record: LogRecord) -> session_pb2.CommittedRecord:
    """The ``CommittedRecord`` of a committed record: its event's canonical bytes as hashed,
    sliced out of the payload (no conversion: a ``LogRecord`` parses the event into its
    message field by field)."""
    return session_pb2.CommittedRecord(
        seq=record.seq,
        prev_hash=record.prev_hash,
        content_hash=record.content_hash,
        fence=record.fence,
        event_json=record.event_json,
    )


def record_from_committed(msg: session_pb2.CommittedRecord) -> Record:
    """The committed record a ``CommittedRecord`` carries: its payload rebuilt from the
    event's bytes, which must be a JSON object whose content hash is the one received
    (ChainBrokenError naming the seq otherwise), as :func:`record_from_proto` checks.

    The bytes as received are hashed (nothing re-encoded) and decoded once, to prove them
    JSON."""
    seq, prev_hash, fence, event_json = msg.seq, msg.prev_hash, msg.fence, msg.event_json
    if seq < 0 or fence < 0:
        raise FormatError(f"record {seq}: seq and fence must not be negative")
    try:
        record = Record.seal(event_json, seq=seq, prev_hash=prev_hash, fence=fence)
        event = canonical.loads_bytes(event_json)
    except (InvalidArgumentError, FormatError) as exc:
        raise FormatError(f"record {seq}: its event is not canonical JSON: {exc}") from None
    if record.content_hash != msg.content_hash:
        raise ChainBrokenError(
            f"record {seq}: content_hash does not match its event as received", seq=seq
        )
    if type(event) is not dict:
        raise FormatError(f"record {seq}: its event is not a JSON object")
    return record


# --------------------------------------------------------------------------- sessions


def _json_value(v: Any) -> Any:
    """A Struct value as the engine wrote it: numbers back from doubles (2.0 is 2)."""
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    if isinstance(v, float):
        return json_number(v)
    return v


def _enum_name(enum: Any, number: int) -> str:
    """The value's name; a number this schema does not name (a newer peer's) as its digits,
    as proto3-JSON writes it."""
    try:
        return str(enum.Name(number))
    except ValueError:
        return str(number)


def _names(enum: Any) -> dict[int, str]:
    """An enum's names by number, read once: a session's two states are looked up in these
    on every frame a client reads (``enum.Name`` is a Python call each)."""
    return {v.number: v.name for v in enum.DESCRIPTOR.values}


_EXEC_STATES = _names(session_pb2.ExecState)
_COMPUTE_STATES = _names(session_pb2.ComputeState)


def session_to_proto(s: Session) -> session_pb2.Session:
    """The ``Session`` message of the engine's Session (reference fields and our additions)."""
    msg = session_pb2.Session(
        harness=s.harness,
        model=s.model,
        last_seq=s.last_seq,
        parent_uid=s.parent_uid,
        fork_seq=s.fork_seq,
        labels=dict(s.labels),
        annotations=dict(s.annotations),
        exec_state=s.exec_state,
        compute_state=s.compute_state,
        last_hash=s.last_hash,
        fence=s.fence,
        deleted=s.deleted,
        damaged=s.damaged,
    )
    meta = msg.metadata
    meta.project, meta.name, meta.uid = s.project, s.name, s.uid
    if s.create_time_ns:
        meta.create_time.FromNanoseconds(s.create_time_ns)
    if s.update_time_ns:
        meta.update_time.FromNanoseconds(s.update_time_ns)
    if s.identity is not None:
        msg.identity.CopyFrom(to_proto(s.identity, common_pb2.IdentityRef, "identity"))
    if s.origin is not None:
        msg.origin.CopyFrom(to_proto(s.origin, common_pb2.Origin, "origin"))
    if s.pending_approval is not None:
        p = s.pending_approval
        msg.pending_approval.CopyFrom(
            common_pb2.ApprovalRef(
                execution_id=p.execution_id, tool_call_id=p.tool_call_id, request_seq=p.request_seq
            )
        )
    if s.unresolved_call is not None:
        u = s.unresolved_call
        msg.unresolved_call.CopyFrom(
            session_pb2.UnresolvedCall(
                execution_id=u.execution_id,
                tool_call_id=u.tool_call_id,
                tool=u.tool,
                idempotency_key=u.idempotency_key,
                call_seq=u.call_seq,
            )
        )
    if s.memory is not None:
        msg.memory.where, msg.memory.text = s.memory.where, s.memory.text
        msg.memory.detail.update(dict(s.memory.detail))
        msg.memory.detail_json = json.dumps(dict(s.memory.detail), default=str)
    if s.state_version or s.state_size or s.state_covers != (0, 0):
        w = msg.working_state
        w.version, w.size = s.state_version, s.state_size
        w.covers_from, w.covers_to = s.state_covers
    return msg


def session_from_proto(msg: session_pb2.Session) -> Session:
    """The engine's Session of a ``Session`` message (a reference server's too).

    A client reads two a turn (its first and last frames), so the common case is kept lean:
    an empty map is not copied, a timestamp is read as its two fields (an unset one reads 0,
    as ``ToNanoseconds`` gives), the states' names come from tables, and the rarer parts are
    converted only when present."""
    check_known(msg, "session")
    meta = msg.metadata
    labels, annotations = msg.labels, msg.annotations
    created, updated, working = meta.create_time, meta.update_time, msg.working_state
    compute, state = msg.compute_state, msg.exec_state
    return Session(
        uid=meta.uid,
        project=meta.project,
        name=meta.name,
        harness=msg.harness,
        model=msg.model,
        labels=dict(labels) if labels else {},
        annotations=dict(annotations) if annotations else {},
        origin=from_proto(msg.origin, "Origin", "origin") if msg.HasField("origin") else None,
        identity=(
            from_proto(msg.identity, "IdentityRef", "identity")
            if msg.HasField("identity")
            else None
        ),
        parent_uid=msg.parent_uid,
        fork_seq=msg.fork_seq,
        create_time_ns=created.seconds * _NANOS + created.nanos,
        last_seq=msg.last_seq,
        last_hash=msg.last_hash,
        compute_state=_COMPUTE_STATES.get(compute) or _enum_name(session_pb2.ComputeState, compute),
        exec_state=_EXEC_STATES.get(state) or _enum_name(session_pb2.ExecState, state),
        update_time_ns=updated.seconds * _NANOS + updated.nanos,
        fence=msg.fence,
        deleted=msg.deleted,
        damaged=msg.damaged,
        memory=_memory(msg.memory) if msg.HasField("memory") else None,
        pending_approval=(
            _pending(msg.pending_approval) if msg.HasField("pending_approval") else None
        ),
        unresolved_call=(
            _unresolved(msg.unresolved_call) if msg.HasField("unresolved_call") else None
        ),
        state_version=working.version,
        state_covers=(working.covers_from, working.covers_to),
        state_size=working.size,
    )


_NANOS = 1_000_000_000


def _pending(p: common_pb2.ApprovalRef) -> ApprovalRef:
    return ApprovalRef(p.execution_id, p.tool_call_id, p.request_seq)


def _unresolved(u: session_pb2.UnresolvedCall) -> UnresolvedCall:
    return UnresolvedCall(u.execution_id, u.tool_call_id, u.tool, u.idempotency_key, u.call_seq)


def _memory(m: session_pb2.SessionMemory) -> Memory:
    if m.detail_json:  # the same detail, its keys in the engine's order
        detail = json.loads(m.detail_json)
    else:  # a reference server's: the Struct alone (read only then: ~7 us a session)
        detail = _json_value(json_format.MessageToDict(m.detail))
    return Memory(m.where, m.text, detail)
