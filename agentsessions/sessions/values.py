"""The values of the ``Sessions`` API: every type its methods take, return or stream.

A :class:`Session` (with its :class:`Memory`) and a :class:`SessionPage` of them; the
:class:`Turn` one exec or resume ran and the :data:`Frame` items a turn streams
(:class:`SessionFrame`, :class:`RecordFrame`, :class:`DeltaFrame`); what ``approve`` and
``resolve`` did (:class:`Approval`, :class:`Resolution`). The rest are defined in
:mod:`agentsessions.v1` (the values the layers below build, each an ``agentsessions.v1``
message: ApprovalRef, UnresolvedCall, ToolStoreEntry, VerifyReport, ReplayReport; a turn's
Input, TurnOptions and TurnRequest; a new session's SessionOptions; Origin, IdentityRef and
Authored) and named here, so a front end (the server, the client, the CLI) needs no import
from the controller or the journal. A :class:`LogRecord` is what any record the API hands
out is: the engine's are the journal's own, never copied
(:class:`agentsessions.v1.model.LogRecord` is its proto3-JSON form, as ``to_wire`` gives).

These are plain frozen values that carry the session ``uid``; none of them holds a file, a
lock or a controller, so they can cross threads and the wire. The ``to_json`` of each is
the CLI's ``--json`` object for it, a contract whose keys only grow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentsessions.v1.model import IdentityRef, Origin
from agentsessions.v1.provenance import Authored
from agentsessions.v1.results import (
    ApprovalRef,
    ReplayReport,
    ToolStoreEntry,
    UnresolvedCall,
    VerifyReport,
)
from agentsessions.v1.turn import Input as _Input
from agentsessions.v1.turn import SessionOptions, TurnOptions, TurnRequest

__all__ = [
    "Approval",
    "ApprovalRef",
    "Authored",
    "DeltaFrame",
    "Frame",
    "IdentityRef",
    "Input",
    "LogRecord",
    "Memory",
    "Origin",
    "RecordFrame",
    "ReplayReport",
    "Resolution",
    "Session",
    "SessionFrame",
    "SessionOptions",
    "SessionPage",
    "ToolStoreEntry",
    "Turn",
    "TurnOptions",
    "TurnRequest",
    "UnresolvedCall",
    "VerifyReport",
]


class LogRecord(Protocol):
    """A committed record as the API hands it out (``agentsessions.v1.LogRecord``): its seq,
    chain link, hash and writer fence, the exact hashed ``payload`` and the event in it.

    The engine hands out the journal's own records and the client the ones it rebuilt from
    the wire (each checked against its hash); both are this, and neither is copied into
    another type on the way (a record is built once per event on the hot read path).
    """

    @property
    def seq(self) -> int: ...

    @property
    def prev_hash(self) -> str: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def fence(self) -> int: ...

    @property
    def payload(self) -> bytes:
        """``JCS({"event": ..., "prev_hash": ..., "seq": "N"})``: the bytes hashed."""
        ...

    @property
    def event(self) -> dict[str, Any]:
        """The ``agentsessions.v1.Event`` in proto3-JSON form."""
        ...

    @property
    def event_json(self) -> bytes:
        """The canonical bytes of the event alone."""
        ...

    def to_wire(self) -> dict[str, Any]:
        """The record in proto3-JSON (int64 as strings, defaults omitted)."""
        ...

    def to_wire_json(self) -> bytes:
        """The record in proto3-JSON, as compact bytes."""
        ...


Input = _Input
"""A turn input: a user text, or an ``agentsessions.v1`` Message dict (``role``, ``parts``)."""


@dataclass(frozen=True)
class Memory:
    """Where a session's harness memory lives and until when (warm compute, issue 7)."""

    where: str  # "none", "unknown", "not started", "live", "snapshot" or "gone"
    text: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``memory`` object of ``get --json``."""
        return dict(self.detail)


@dataclass(frozen=True)
class Session:
    """A session as the engine knows it: metadata plus the projections kept at append time.

    ``exec_state`` is the reference's ExecState name: EXEC_PENDING (no turn yet),
    EXEC_RUNNING / EXEC_AWAITING (a turn is open: running now, or interrupted and waiting
    for resume), EXEC_COMPLETED, EXEC_FAILED (the last turn ended in ERROR). ``memory`` is
    filled in by :meth:`Sessions.get` only (it costs a bounded probe of warm hosts), and so
    is ``pending_approval`` (and by :meth:`Sessions.approve`): the approval request an
    EXEC_AWAITING session waits for (execution id, tool call id, request seq), and
    ``unresolved_call``: the tool call a resume found with an unknown outcome, waiting for
    :meth:`Sessions.resolve` (execution id, tool call id, tool, key, TOOL_CALL seq).
    """

    uid: str
    project: str = "default"
    name: str = ""
    harness: str = ""
    model: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    origin: Mapping[str, Any] | None = None
    identity: Mapping[str, str] | None = None
    parent_uid: str = ""
    fork_seq: int = 0
    create_time_ns: int = 0
    last_seq: int = 0
    last_hash: str = ""
    compute_state: str = "COMPUTE_NONE"
    exec_state: str = "EXEC_PENDING"
    update_time_ns: int = 0
    fence: int = 0
    deleted: bool = False
    damaged: str = ""  # why a listed session cannot be read; list only
    memory: Memory | None = None
    pending_approval: ApprovalRef | None = None
    unresolved_call: UnresolvedCall | None = None
    state_version: int = 0
    """The harness's working state: its version (0: none), the journal range it covers and
    its size in bytes (``working_state`` in ``--json``; its bytes are the harness's own)."""
    state_covers: tuple[int, int] = (0, 0)
    state_size: int = 0

    @property
    def busy(self) -> bool:
        """A turn is open (running, or cut off and waiting for resume)."""
        return self.exec_state in ("EXEC_RUNNING", "EXEC_AWAITING")

    def to_json(self) -> dict[str, Any]:
        """The session as the CLI's ``--json`` object (a contract: keys only grow)."""
        out: dict[str, Any] = {
            "uid": self.uid,
            "project": self.project,
            "name": self.name,
            "harness": self.harness,
            "model": self.model,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "origin": dict(self.origin) if self.origin is not None else None,
            "identity": dict(self.identity) if self.identity is not None else None,
            "parent_uid": self.parent_uid,
            "fork_seq": self.fork_seq,
            "create_time_ns": self.create_time_ns,
            "last_seq": self.last_seq,
            "last_hash": self.last_hash,
            "compute_state": self.compute_state,
            "exec_state": self.exec_state,
            "update_time_ns": self.update_time_ns,
            "fence": self.fence,
            "deleted": self.deleted,
            "working_state": {
                "version": self.state_version,
                "covers_from": self.state_covers[0],
                "covers_to": self.state_covers[1],
                "size": self.state_size,
            },
        }
        if self.pending_approval is not None:  # present only while a request waits
            out["pending_approval"] = self.pending_approval.to_json()
        if self.unresolved_call is not None:  # present only while a call is unresolved
            out["unresolved_call"] = self.unresolved_call.to_json()
        if self.damaged:  # only on a damaged listing row: the key's presence is the signal
            out["damaged"] = self.damaged
        return out


@dataclass(frozen=True)
class Approval:
    """What ``approve``/``deny`` did: the session after it, the APPROVAL_RESULT record, the
    request it decided, and whether that decision was already recorded (an identical retry)."""

    session: Session
    decision: LogRecord
    ref: ApprovalRef
    existing: bool = False

    @property
    def approved(self) -> bool:
        return bool(self.decision.event.get("approval_result", {}).get("approved", False))

    def to_json(self) -> dict[str, Any]:
        """The ``approve --json`` / ``deny --json`` object (before the resume's turn)."""
        body = self.decision.event.get("approval_result", {})
        return {
            "uid": self.session.uid,
            "approved": self.approved,
            "reason": str(body.get("reason", "")),
            "actor": dict(self.decision.event.get("actor", {}) or {}),
            "decision_seq": self.decision.seq,
            "existing": self.existing,
            **self.ref.to_json(),
        }


@dataclass(frozen=True)
class Resolution:
    """What ``resolve`` did: the session after it, the call it resolved, the TOOL_RESULT
    body its receipt holds, and the turn the resume continued (None when not resumed)."""

    session: Session
    call: UnresolvedCall
    result: Mapping[str, Any]
    turn: Turn | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``resolve --json`` object."""
        return {
            "uid": self.session.uid,
            **self.call.to_json(),
            "result": dict(self.result),
            "turn": self.turn.to_json() if self.turn is not None else None,
        }


@dataclass(frozen=True)
class SessionPage:
    """One page of :meth:`Sessions.list`; ``next_cursor`` is empty on the last page."""

    sessions: tuple[Session, ...]
    next_cursor: str = ""


@dataclass(frozen=True)
class Turn:
    """What one exec or resume did: its execution, its seqs, its outputs, its model calls.

    ``duplicate``: the request's commit id had landed already, so this is that turn (its
    execution, seqs and outputs; finished now if it had been cut off, else nothing written
    and ``model_calls`` 0).
    """

    uid: str
    execution_id: str
    first_seq: int
    last_seq: int
    outputs: tuple[str, ...] = ()
    model_calls: int = 0
    created: bool = False
    resumed: bool = False
    canceled: bool = False
    duplicate: bool = False

    def to_json(self) -> dict[str, Any]:
        """The ``exec --json`` object."""
        return {
            "uid": self.uid,
            "execution_id": self.execution_id,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "outputs": list(self.outputs),
            "model_calls": self.model_calls,
            "created": self.created,
            "resumed": self.resumed,
            "canceled": self.canceled,
            "duplicate": self.duplicate,
        }


@dataclass(frozen=True)
class SessionFrame:
    """The session, first and last in a turn's stream.

    The last frame carries ``turn`` (None when nothing was run, e.g. a resume with no open
    turn) and ``compute_resumed`` (the turn first woke suspended compute).
    """

    session: Session
    turn: Turn | None = None
    compute_resumed: bool = False
    created: bool = False  # the first frame of an exec that created the session
    last: bool = False

    @property
    def uid(self) -> str:
        return self.session.uid


@dataclass(frozen=True)
class RecordFrame:
    """A record the turn just committed (durable when this frame is produced)."""

    uid: str
    record: LogRecord


@dataclass(frozen=True)
class DeltaFrame:
    """Streamed assistant text, never journaled (the OUTPUT record carries the whole text)."""

    uid: str
    text: str


Frame = SessionFrame | RecordFrame | DeltaFrame
"""One item of a turn's stream (exec, resume)."""
