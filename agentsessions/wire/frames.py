"""Conversions of the engine's composite results (turn frames, reports, tool-store entries)
to and from the additive ``agentsessions.v1`` messages; :mod:`.convert` does events,
records and sessions.

Invariant: ``from_x(to_x(v)) == v`` for every value the engine returns, so a client over the
wire hands its caller the same values the local engine does (the contract suite checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

from agentsessions.errors import FormatError
from agentsessions.sessions.values import (
    DeltaFrame,
    Frame,
    RecordFrame,
    Session,
    SessionFrame,
    Turn,
)
from agentsessions.v1.numbers import json_number
from agentsessions.v1.results import (
    ApprovalRef,
    ReplayReport,
    ToolStoreEntry,
    UnresolvedCall,
    VerifyReport,
)
from agentsessions.wire import convert
from agentsessions.wire.gen import common_pb2, session_pb2


def struct(obj: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON object as a Struct."""
    out = struct_pb2.Struct()
    out.update(dict(obj))
    return out


def unstruct(msg: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct as the JSON object it was (whole numbers back from doubles)."""
    return _numbers(json_format.MessageToDict(msg))  # type: ignore[no-any-return]


def _numbers(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _numbers(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_numbers(x) for x in v]
    if isinstance(v, float):
        return json_number(v)
    return v


# --------------------------------------------------------------------------- turns, frames


def turn_to_proto(t: Turn) -> session_pb2.Turn:
    """The ``Turn`` message of a turn."""
    return session_pb2.Turn(
        uid=t.uid,
        execution_id=t.execution_id,
        first_seq=t.first_seq,
        last_seq=t.last_seq,
        outputs=list(t.outputs),
        model_calls=t.model_calls,
        created=t.created,
        resumed=t.resumed,
        canceled=t.canceled,
        duplicate=t.duplicate,
    )


def turn_from_proto(m: session_pb2.Turn) -> Turn:
    """The turn of a ``Turn`` message."""
    return Turn(
        uid=m.uid,
        execution_id=m.execution_id,
        first_seq=m.first_seq,
        last_seq=m.last_seq,
        outputs=tuple(m.outputs),
        model_calls=m.model_calls,
        created=m.created,
        resumed=m.resumed,
        canceled=m.canceled,
        duplicate=m.duplicate,
    )


def frame_to_update(
    frame: Frame, execution_id: str = "", *, committed: bool = False
) -> session_pb2.ExecUpdate:
    """One frame of a turn's stream as an ``ExecUpdate``; a delta names ``execution_id``
    (the execution whose records the stream carried last). ``committed``: a record as its
    committed bytes (``CommittedRecord``, for a caller that asked for batches), else as a
    ``LogRecord``."""
    if isinstance(frame, RecordFrame):
        if committed:
            return session_pb2.ExecUpdate(committed=convert.committed_to_proto(frame.record))
        return session_pb2.ExecUpdate(record=convert.record_to_proto(frame.record))
    if isinstance(frame, DeltaFrame):
        delta = session_pb2.Delta(execution_id=execution_id, chunk=frame.text)
        return session_pb2.ExecUpdate(delta=delta)
    info = session_pb2.FrameInfo(
        created=frame.created, last=frame.last, compute_resumed=frame.compute_resumed
    )
    if frame.turn is not None:
        info.turn.CopyFrom(turn_to_proto(frame.turn))
    return session_pb2.ExecUpdate(session=convert.session_to_proto(frame.session), frame=info)


def update_to_frame(
    msg: session_pb2.ExecUpdate,
    uid: str,
    session_of: Callable[[session_pb2.Session], Session] = convert.session_from_proto,
) -> Frame:
    """The frame an ``ExecUpdate`` carries; ``uid`` is the stream's session (from its first
    frame), which records and deltas do not repeat. ``session_of`` converts a session frame's
    Session (a client passes one that remembers the last it converted)."""
    which = msg.WhichOneof("update")
    if which == "committed":
        return RecordFrame(uid, convert.record_from_committed(msg.committed))
    if which == "record":
        return RecordFrame(uid, convert.record_from_proto(msg.record))
    if which == "delta":
        return DeltaFrame(uid, msg.delta.chunk)
    if which != "session":
        raise FormatError("an ExecUpdate carries neither a session, record nor delta")
    info = msg.frame
    return SessionFrame(
        session_of(msg.session),
        turn=turn_from_proto(info.turn) if info.HasField("turn") else None,
        compute_resumed=info.compute_resumed,
        created=info.created,
        last=info.last,
    )


# --------------------------------------------------------------------------- reports


def replay_report_to_proto(r: ReplayReport) -> session_pb2.ReplayReport:
    """The ``ReplayReport`` message of a rerun's report."""
    return session_pb2.ReplayReport(
        uid=r.uid,
        harness=r.harness,
        executions=r.executions,
        replayed=r.replayed,
        model_calls=r.model_calls,
        identical=r.identical,
        outputs=list(r.outputs),
        divergence=r.divergence,
        diverged_execution=r.diverged_execution,
        last_seq=r.last_seq,
    )


def replay_report_from_proto(m: session_pb2.ReplayReport) -> ReplayReport:
    """The rerun's report of a ``ReplayReport`` message."""
    return ReplayReport(
        uid=m.uid,
        harness=m.harness,
        executions=m.executions,
        replayed=m.replayed,
        model_calls=m.model_calls,
        identical=m.identical,
        outputs=tuple(m.outputs),
        divergence=m.divergence,
        diverged_execution=m.diverged_execution,
        last_seq=m.last_seq,
    )


def verify_to_proto(r: VerifyReport) -> session_pb2.VerifyReport:
    """The ``VerifyReport`` message of a verify report (its tool stores' reports in it)."""
    m = session_pb2.VerifyReport(
        source=r.source,
        uid=r.uid,
        records=r.records,
        last_seq=r.last_seq,
        last_hash=r.last_hash,
        reason=r.reason,
        torn_tail=r.torn_tail,
        strict=r.strict,
        notes=list(r.notes),
        kind=r.kind,
        torn_detail=r.torn_detail,
    )
    if r.first_bad_seq is not None:
        m.first_bad_seq = r.first_bad_seq
    if r.expected_last_seq is not None:
        m.expected_last_seq = r.expected_last_seq
    if r.expected_last_hash is not None:
        m.expected_last_hash = r.expected_last_hash
    for name, sub in r.components:
        m.components.add(name=name, report=verify_to_proto(sub))
    return m


def verify_from_proto(m: session_pb2.VerifyReport) -> VerifyReport:
    """The verify report of a ``VerifyReport`` message."""
    return VerifyReport(
        source=m.source,
        uid=m.uid,
        records=m.records,
        last_seq=m.last_seq,
        last_hash=m.last_hash,
        first_bad_seq=m.first_bad_seq if m.HasField("first_bad_seq") else None,
        reason=m.reason,
        torn_tail=m.torn_tail,
        strict=m.strict,
        expected_last_seq=m.expected_last_seq if m.HasField("expected_last_seq") else None,
        expected_last_hash=m.expected_last_hash if m.HasField("expected_last_hash") else None,
        notes=list(m.notes),
        kind=m.kind,
        torn_detail=m.torn_detail,
        components=[(c.name, verify_from_proto(c.report)) for c in m.components],
    )


def entry_to_proto(e: ToolStoreEntry) -> session_pb2.ToolStoreEntry:
    """The ``ToolStoreEntry`` message of a tool-store entry."""
    return session_pb2.ToolStoreEntry(
        seq=e.seq, author=e.author, time_ns=e.time_ns, data=struct(e.data)
    )


def entry_from_proto(m: session_pb2.ToolStoreEntry) -> ToolStoreEntry:
    """The tool-store entry of a ``ToolStoreEntry`` message."""
    return ToolStoreEntry(seq=m.seq, author=m.author, time_ns=m.time_ns, data=unstruct(m.data))


def ref_to_proto(r: ApprovalRef) -> common_pb2.ApprovalRef:
    """The ``ApprovalRef`` message of an approval request's reference."""
    return common_pb2.ApprovalRef(
        execution_id=r.execution_id, tool_call_id=r.tool_call_id, request_seq=r.request_seq
    )


def ref_from_proto(m: common_pb2.ApprovalRef) -> ApprovalRef:
    """The approval request's reference of an ``ApprovalRef`` message."""
    return ApprovalRef(m.execution_id, m.tool_call_id, m.request_seq)


def call_to_proto(u: UnresolvedCall) -> session_pb2.UnresolvedCall:
    """The ``UnresolvedCall`` message of an unresolved tool call."""
    return session_pb2.UnresolvedCall(
        execution_id=u.execution_id,
        tool_call_id=u.tool_call_id,
        tool=u.tool,
        idempotency_key=u.idempotency_key,
        call_seq=u.call_seq,
    )


def call_from_proto(m: session_pb2.UnresolvedCall) -> UnresolvedCall:
    """The unresolved tool call of an ``UnresolvedCall`` message."""
    return UnresolvedCall(m.execution_id, m.tool_call_id, m.tool, m.idempotency_key, m.call_seq)
