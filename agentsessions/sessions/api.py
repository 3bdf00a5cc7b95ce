"""The ``Sessions`` contract: the reference's Sessions service (digest 1.2) as a Python API.

Every front end (the CLI, a library caller, the gRPC server of a later issue) reaches
sessions through this Protocol, so the semantics of a turn (waking a suspended session,
refusing a bad request before any write, new-session defaults, waiting on a busy session)
live once, in the implementation, and a second implementation (the gRPC client) passes the
same contract suite (``tests/contract/test_sessions_contract.py``).

This module is the API's vocabulary: every type a ``Sessions`` method takes or returns is
defined here or in :mod:`agentsessions.v1.results` (the values the layers below build, each
an ``agentsessions.v1`` message: ApprovalRef, UnresolvedCall, ToolStoreEntry, VerifyReport,
ReplayReport), and named by this module, so a front end (the server, the client, the CLI)
needs no import from the controller or the journal. A :class:`LogRecord` is what any record
the API hands out is: the engine's are the journal's own, never copied
(:class:`agentsessions.v1.model.LogRecord` is its proto3-JSON form, as ``to_wire`` gives).

The types here are plain frozen values that carry the session ``uid``; none of them holds
a file, a lock or a controller, so they can cross threads and the wire.
Errors are the :mod:`agentsessions.errors` tree (NotFoundError, InvalidArgumentError,
LockHeldError for a busy session, HarnessError for a failed turn, ...).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Protocol, Unpack

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
from agentsessions.v1.turn import TurnOptions, TurnRequest

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
    "SessionPage",
    "Sessions",
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


class Sessions(Protocol):
    """The one way in to sessions; the local engine and (later) the gRPC client implement it.

    Thread-safe: any method may be called from any thread. Writes to one session are
    serialised (a busy session waits up to ``wait`` seconds, else LockHeldError, exit 6, as
    for another process); different sessions run in parallel. A context manager: leaving
    it waits for running turns and closes what the engine opened.
    """

    def create(
        self,
        *,
        project: str = "default",
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
        origin: Mapping[str, Any] | None = None,
        identity: Mapping[str, str] | None = None,
    ) -> Session:
        """Create an empty session (metadata only, no event); ``tools`` names a workload
        TOML file (validated first) recorded with the session for its turns. ``origin``
        (an :class:`Origin`) ties it to something outside whose ``source`` and ``subject``
        then name it (:meth:`find`; SessionExistsError if they name a live session);
        ``identity`` (an :class:`IdentityRef`) is who made it. Neither ever changes."""
        ...

    def ensure(
        self,
        key: str | None = None,
        *,
        origin: Mapping[str, Any] | None = None,
        identity: Mapping[str, str] | None = None,
        project: str = "default",
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
    ) -> tuple[Session, bool]:
        """The live session that ``key`` (any non-empty string of the caller's, up to 4 KiB)
        names in ``project``, created as :meth:`create` would if there is none:
        ``(session, created)``. Atomic across processes and hosts: every caller racing on
        one new key gets one session, and exactly one of them ``created``; a caller killed
        midway leaves nothing the next call does not complete. The store keeps only the
        key's SHA-256 (with the project); the created session's annotation
        ``agentsessions.claim`` names it, and :meth:`delete` releases the key. An
        ``origin`` may name the session instead (its source and subject, apart from keys)."""
        ...

    def find(
        self, key: str | None = None, *, origin: Mapping[str, Any] | None = None,
        project: str = "default",
    ) -> Session | None:  # fmt: skip
        """The live session ``key`` (or ``origin``'s ``source`` and ``subject``: one of
        them) names in ``project``, or None: one indexed lookup, never a listing."""
        ...

    def claim(self, key: str, uid: str, *, project: str = "default") -> str:
        """Make ``key`` name existing session ``uid`` of ``project`` (a fork's child, say)
        unless it names a live session already: the uid it names afterwards (``uid``, or
        the other's). Deleting ``uid`` frees the key again."""
        ...

    def get(self, uid: str) -> Session:
        """The session (deleted ones too), with where its harness memory lives."""
        ...

    def list(
        self, *, project: str = "default", page_size: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """One page of a project's sessions, newest first; deleted ones hidden."""
        ...

    def delete(self, uid: str) -> Session:
        """Soft-delete: hidden from list, never written again; reads still work."""
        ...

    def exec(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> Iterator[Frame]:
        """Run one turn: frames are the Session, each record and delta, the Session last.

        The turn is ``exec(uid, inputs, harness=..., model=..., ...)`` with the options of
        :class:`~agentsessions.v1.turn.TurnOptions`, or ``exec(request)`` with a
        :class:`~agentsessions.v1.turn.TurnRequest` built already (what front ends pass on).
        ``tools`` names a workload TOML file, validated before anything is written and
        recorded with the session (it replaces the earlier one for this and later turns).
        ``expected_last_seq``: the turn runs only if the session's head is that seq (0: a
        new session), else ConflictError (exit 4, ABORTED) and nothing is written.

        Without ``uid`` a session is created (as ``project``, ``name``, ``labels``,
        ``identity`` say), or the one an ``origin`` names (made if none, as :meth:`ensure`).
        An :class:`Authored` input's INPUT records its author as ``actor``. A request
        that cannot run is refused before anything is written. A failed
        turn yields its frames up to the ERROR record, then raises (HarnessError, exit 14).
        A record is yielded once it is durable. Streamed text comes as DeltaFrames, in
        order and between the records it came between; text streamed while the consumer
        had not yet taken the previous delta rides in one frame with it.
        """
        ...

    def run(
        self,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> SessionFrame:
        """Run one turn as :meth:`exec` does, without streaming: its last frame (the session
        as the turn left it, and the turn). Raises as :meth:`exec`'s iterator would.

        For callers that want the outcome, not the stream (as ``Runner.run`` is to
        ``run_streamed`` and ``invoke`` to ``stream`` elsewhere); the same journal results.
        """
        ...

    def resume(self, uid: str, *, harness: str | None = None, wait: float = 0.0) -> Iterator[Frame]:
        """Bring a session back: wake suspended compute, complete an open turn; frames."""
        ...

    def compact(self, uid: str, *, keep_turns: int = 2, model: str | None = None) -> SessionFrame:
        """Summarise the turns before the last ``keep_turns`` in one recorded chat execution
        (the summary is model output; the entries stay); its last frame. A session with
        nothing to compact raises NothingToCompactError (exit 17), nothing written."""
        ...

    def suspend(self, uid: str) -> Session:
        """Snapshot and free the session's compute (COLD); idempotent."""
        ...

    def approve(
        self,
        uid: str,
        *,
        approved: bool,
        reason: str = "",
        actor: str = "",
        execution_id: str | None = None,
        tool_call_id: str | None = None,
        request_seq: int | None = None,
    ) -> Approval:
        """Decide ``uid``'s approval request (``approved=False`` denies it): commit
        APPROVAL_RESULT with ``actor`` as Event.actor; never runs the tool (``resume`` then
        writes the receipt and continues the turn). The request is the pending one unless
        the ids name it. An identical retry returns the recorded decision; a different one
        (ApprovalDecidedError), a request not pending (ApprovalNotPendingError) or one a
        fork inherited (ApprovalInheritedError) is refused, exit 21, nothing written."""
        ...

    def resolve(
        self,
        uid: str,
        *,
        call_id: str,
        result: Mapping[str, Any] | None = None,
        failed: str | None = None,
        actor: str = "",
        resume: bool = True,
    ) -> Resolution:
        """Say what really happened to ``uid``'s unresolved tool call ``call_id``: exactly
        one of ``result`` (a JSON object: the tool's output) or ``failed`` (a reason). Keeps
        it as the call's receipt, then (``resume``) resumes: TOOL_RESULT is recorded from the
        receipt and the turn goes on. A call that is not unresolved is refused
        (ToolNotUnresolvedError, exit 22), both or neither of result/failed or a result that
        is not an object (InvalidArgumentError, exit 2); nothing is changed then."""
        ...

    def fork(
        self,
        uid: str,
        *,
        at: int = 0,
        count: int = 1,
        names: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[Session]:
        """Branch ``uid`` after seq ``at`` (0 = head) into ``count`` children, all or nothing."""
        ...

    def replay(self, uid: str, *, from_seq: int = 1) -> Iterator[LogRecord]:
        """The stored records from ``from_seq`` on, as they were journaled."""
        ...

    def rerun(self, uid: str, *, harness: str | None = None) -> ReplayReport:
        """Re-drive every completed turn of ``uid`` with effects served from the journal
        (zero model calls, nothing written) and report whether it was identical; ``harness``
        drives a session that names none (an imported journal)."""
        ...

    def cancel(
        self, uid: str, *, wait: float = 10.0, reason: str = "", execution_id: str = ""
    ) -> Session:
        """End ``uid``'s open execution as CANCELED; idempotent once canceled.

        A turn running elsewhere is asked to stop at its next effect boundary; this waits
        up to ``wait`` seconds for its END CANCELED. ``reason`` (USER, TIMEOUT, INTERNAL;
        "" = none) is recorded in the LIFECYCLE_CANCEL detail; an ``execution_id`` that is
        not the latest execution is refused (InvalidExecutionLogError), nothing written."""
        ...

    def follow(
        self, uid: str, *, from_seq: int = 1, idle_timeout: float | None = None
    ) -> Iterator[LogRecord]:
        """Every record from ``from_seq``, then each new one as any process commits it.

        Runs until closed, or until ``idle_timeout`` seconds pass without a new record
        (None = never). Never yields a record twice or skips one; a forked child's follow
        starts in its parent's prefix; a ``from_seq`` beyond the head waits for it.
        """
        ...

    def read(self, uid: str, *, from_seq: int = 1, to_seq: int = 0) -> Iterator[LogRecord]:
        """The stored records ``from_seq..to_seq`` (0 = head); NotFoundError first if unknown."""
        ...

    def verify(self, uid: str, *, strict: bool = False, progress: Any = None) -> VerifyReport:
        """Walk the session's chain (and its metadata); the report says the first bad seq."""
        ...

    def tool_store(
        self, uid: str, tool: str, *, from_seq: int = 1
    ) -> builtins.list[ToolStoreEntry]:
        """The entries of tool ``tool``'s own store in session ``uid`` (each: seq, the
        author and time the host stamped, the data); NotFoundError for an unknown session
        or a tool without a store there. Reads only."""
        ...

    def export(
        self, uid: str, path: Path, *, compress: bool = True, progress: Any = None
    ) -> dict[str, Any]:
        """Write the session to one portable, self-verifying file; a summary of it."""
        ...

    def import_(
        self,
        path: Path,
        *,
        project: str | None = None,
        name: str | None = None,
        progress: Any = None,
    ) -> Session:
        """Recreate a session from a file with identical seqs and hashes."""
        ...

    def close(self) -> None:
        """Wait for running turns, then close the stores and writers the engine opened."""
        ...

    def __enter__(self) -> Sessions: ...

    def __exit__(self, *exc: object) -> None: ...
