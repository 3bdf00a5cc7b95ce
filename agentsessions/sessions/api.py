"""The ``Sessions`` contract: the reference's Sessions service (digest 1.2) as a Python API.

Every front end (the CLI, a library caller, the gRPC server of a later issue) reaches
sessions through this Protocol, so the semantics of a turn (waking a suspended session,
refusing a bad request before any write, new-session defaults, waiting on a busy session)
live once, in the implementation, and a second implementation (the gRPC client) passes the
same contract suite (``tests/contract/test_sessions_contract.py``).

Every type a method takes or returns is one of :mod:`.values` (the API's vocabulary: the
session, the frames a turn streams, the records, the reports), so this module is the
Protocol alone. Errors are the :mod:`agentsessions.errors` tree (NotFoundError,
InvalidArgumentError, LockHeldError for a busy session, HarnessError for a failed turn, ...).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Protocol, Unpack

from .values import (
    Approval,
    Frame,
    Input,
    LogRecord,
    ReplayReport,
    Resolution,
    Session,
    SessionFrame,
    SessionPage,
    ToolStoreEntry,
    TurnOptions,
    TurnRequest,
    VerifyReport,
)

__all__ = ["Sessions"]


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
