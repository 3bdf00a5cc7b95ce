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
from agentsessions.valueclass import value

from .session import Memory, Session, SessionPage  # (re-exported: list's own module)

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


@value(frozen=True)
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


@value(frozen=True)
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


@value(frozen=True)
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


@value(frozen=True)
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


@value(frozen=True)
class RecordFrame:
    """A record the turn just committed (durable when this frame is produced)."""

    uid: str
    record: LogRecord


@value(frozen=True)
class DeltaFrame:
    """Streamed assistant text, never journaled (the OUTPUT record carries the whole text)."""

    uid: str
    text: str


Frame = SessionFrame | RecordFrame | DeltaFrame
"""One item of a turn's stream (exec, resume)."""
