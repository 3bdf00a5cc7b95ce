"""The exception tree of agentsessions: every error the library raises on purpose.

This module is a leaf: it imports nothing from the package, so every layer may use it.
Each class carries an ``exit_code`` (the CLI's stable exit status) and a ``grpc_code``
(the status name the server maps it to, as ``spec/reference-digest.md`` lists).

    AgentSessionsError                      root; never raised itself
    +-- UsageError                          the caller asked for something malformed
    |   +-- InvalidArgumentError            bad id, project, page cursor, flag value  (exit 2)
    |   |   +-- MissingIdempotencyKeyError  a mediated tool call names no idempotency key
    |   |   +-- UnmediatedToolCallError     a tool call through the host with another tier
    |   |   +-- UnknownToolError            the session's workload has no such tool
    |   |   +-- WorkloadError               a ``--tools`` workload file is not valid
    |   |   +-- ApprovalUnavailableError    an approval-gated call from a harness that
    |   |   |                               cannot be resumed by replay
    |   |   +-- SessionExistsError          a create named a uid a session already has
    |   |   +-- StoreCapabilityError        the store lacks a capability the command needs
    |   +-- CommitTooLargeError             a commit over the store's limit            (exit 7)
    +-- NotFoundError                       no such session                            (exit 3)
    +-- ConflictError                       lost CAS: the journal end moved             (exit 4)
    |   +-- StateConflictError              lost CAS on a commit with working state (the
    |                                       journal end or the state version moved)
    +-- FencedError                         a newer writer superseded this one          (exit 5)
    +-- LockHeldError                       another writer holds the session            (exit 6)
    +-- SessionDeletedError                 writes to a deleted session are refused     (exit 11)
    +-- JournalError                        the stored bytes cannot be trusted
    |   +-- JournalCorruptError             damaged or truncated acknowledged data      (exit 8)
    |   |   +-- AcknowledgedDataMissingError  the journal ends before (or differs at) a
    |   |   |   |                           seq that durable evidence says was acknowledged
    |   |   |   +-- StreamReplacedError     a JetStream stream was recreated or lost messages
    |   |   +-- MetadataCorruptError        a session's session.json (or BASE) is damaged
    |   +-- ChainBrokenError                a hash link or content hash does not verify (exit 9)
    +-- FormatError                         input to import/verify is not a journal    (exit 10)
    +-- UnavailableError                    a needed capability is missing (zstd, disk) (exit 12)
    |   +-- ToolServerError                 a unix/mcp tool server did not start, answer or
    |   |                                   answered garbage
    |   +-- DeadlineExceededError           a request's deadline passed (ExecRequest.deadline_unix)
    +-- StorageError                        the OS refused an operation (ENOSPC, EIO)   (exit 13)
    +-- HarnessError                        a harness failed its run (ERROR recorded)   (exit 14)
    |   +-- ContextOverflowError            a model refused a request over its context window
    |   +-- HarnessProtocolError            a remote harness broke the Harness.Connect protocol
    +-- PlacementError                      this runtime cannot host that harness      (exit 15)
    +-- ReplayError                         a replay did not reproduce the journal      (exit 16)
    |   +-- ReplayDivergedError             I0/I5: a model input or effect differs
    |   +-- ReplayInvokedModelError         I1: replay called a model
    |   +-- HarnessMismatchError            recorded harness name or version differs
    +-- InvalidExecutionLogError            the journal's turns cannot be driven as is   (exit 17)
    |   +-- NothingToCompactError           no turn to compact before the kept ones
    |   +-- InheritedToolIntentError        a fork child's copied prefix ends in a tool intent
    +-- ToolOutcomeUnknownError             a cut tool call may have run; none can confirm (exit 19)
    +-- ToolNotUnresolvedError              resolve of a call that is not unresolved   (exit 22)
    +-- TurnCanceledError                   the running turn was canceled by request     (exit 18)
    +-- ApprovalParkedError                 the turn parked on an approval-gated call    (exit 20)
    +-- ApprovalError                       an approval request that cannot be decided   (exit 21)
        +-- ApprovalNotPendingError         no such open request (wrong seq, execution, call)
        +-- ApprovalDecidedError            the request was already decided otherwise
        +-- ApprovalInheritedError          the request was copied from a fork's parent
        +-- ApprovalBlockedError            new input while an approval is unreceipted
    +-- HarnessAckError                     a remote harness failed a park's ack        (exit 23)
    +-- HarnessRegistryError                a harness registration cannot change so     (exit 24)
        +-- HarnessExistsError              the name holds another spec, or is static
    +-- SessionKeyError                     a session's content key is unusable          (exit 26)
    |   +-- MasterKeyError                  no master key, or a key file of the wrong size or
    |   |                                   permissions, or a key that does not unwrap
    |   +-- KeyShreddedError                the session's key was shredded: gone for good
    +-- UnauthenticatedError                no, a wrong, expired or revoked bearer token (exit 30)
    +-- PermissionDeniedError               the token's projects do not cover the request (exit 31)
    +-- ResourceExhaustedError              a request over a server bound (streams, size) (exit 32)
    +-- TokenNotFoundError (NotFoundError)  ``token revoke`` of an unknown token id    (exit 3)
    +-- TokensCorruptError (JournalCorruptError)  the home's tokens.json is damaged    (exit 8)

Exit codes 30-32 (access control) are a block apart from 1-24, to grow without renumbering.
"""

from __future__ import annotations

from typing import Any, ClassVar


class AgentSessionsError(Exception):
    """Root of every error agentsessions raises on purpose.

    ``hint`` names the command or step that helps; ``fields`` carries structured context
    (session, seq, path, offset) for ``--json`` output and logs.
    """

    exit_code: ClassVar[int] = 1
    grpc_code: ClassVar[str] = "INTERNAL"
    kind: ClassVar[str] = "error"
    request_id: str = ""
    """The daemon's id of the call that failed (its ``x-request-id`` trailer), when the error
    came over the wire: the id its log lines name (docs/OPERATIONS.md)."""

    def __init__(self, message: str, *, hint: str = "", **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.fields = {k: v for k, v in fields.items() if v is not None}

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """The error as the CLI's ``--json`` error object."""
        out: dict[str, Any] = {"error": self.kind, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        out.update(self.fields)
        return out


class UsageError(AgentSessionsError):
    """The request itself is malformed; retrying it unchanged cannot succeed."""

    exit_code = 2
    grpc_code = "INVALID_ARGUMENT"
    kind = "invalid_argument"


class InvalidArgumentError(UsageError):
    """A malformed id, project name, cursor or option value."""


class SessionExistsError(InvalidArgumentError):
    """A store was asked to create a session under a uid that one already has: nothing
    was written. Every store raises it for the same uid created twice (two processes
    completing one claimed key race to it: the loser's create is this, and it is harmless)."""


class StoreCapabilityError(InvalidArgumentError):
    """The store lacks a capability (``journal/stores/capabilities.py``) a command needs."""


class CommitTooLargeError(UsageError):
    """A commit exceeds the store's size limit; it was refused whole, nothing written."""

    exit_code = 7
    kind = "commit_too_large"


class NotFoundError(AgentSessionsError):
    """No session with that uid exists in this store."""

    exit_code = 3
    grpc_code = "NOT_FOUND"
    kind = "not_found"


class ConflictError(AgentSessionsError):
    """Compare-and-swap lost: the journal end is not what the writer expected.

    ``head_seq`` and ``head_hash`` carry the current head so the writer can merge.
    """

    exit_code = 4
    grpc_code = "ABORTED"
    kind = "conflict"

    def __init__(self, message: str, *, head_seq: int, head_hash: str, **fields: Any) -> None:
        super().__init__(message, head_seq=head_seq, head_hash=head_hash, **fields)
        self.head_seq = head_seq
        self.head_hash = head_hash


class StateConflictError(ConflictError):
    """A commit with working state lost its compare-and-swap: the journal end or the state
    version is not what the writer last saw; nothing was written.

    ``snapshot`` is the store's current :class:`~agentsessions.journal.stores.store.Snapshot`
    (head and working state) for the writer to merge with; ``state_version`` its version.
    A ConflictError, so exit codes and gRPC mappings (ABORTED) stay those of a lost CAS.
    """

    def __init__(
        self, message: str, *, head_seq: int, head_hash: str, snapshot: Any, **fields: Any
    ) -> None:
        version = getattr(getattr(snapshot, "state", None), "version", 0)
        super().__init__(
            message, head_seq=head_seq, head_hash=head_hash, state_version=version, **fields
        )
        self.snapshot = snapshot
        self.state_version = version


class FencedError(AgentSessionsError):
    """The writer's fence is older than the session's current fence (a zombie writer)."""

    exit_code = 5
    grpc_code = "ABORTED"
    kind = "fenced"


class LockHeldError(AgentSessionsError):
    """Another writer holds the session's lock; ``holder`` says who."""

    exit_code = 6
    grpc_code = "ABORTED"
    kind = "busy"


class SessionDeletedError(AgentSessionsError):
    """The session was deleted; it can still be read and verified but never written."""

    exit_code = 11
    grpc_code = "FAILED_PRECONDITION"
    kind = "deleted"


class JournalError(AgentSessionsError):
    """Stored journal bytes that cannot be trusted."""

    exit_code = 8
    grpc_code = "DATA_LOSS"
    kind = "journal"


class JournalCorruptError(JournalError):
    """Acknowledged data is damaged or missing; nothing was changed on disk."""

    kind = "corrupt"


class AcknowledgedDataMissingError(JournalCorruptError):
    """The journal ends before, or differs at, a seq that durable evidence (the TAIL hint, a
    fork child's fork point) says was acknowledged; nothing was changed on disk.

    ``last_seq`` is where the journal ends, ``acked_seq`` the acknowledged seq, ``evidence``
    names the claim.
    """


class StreamReplacedError(AcknowledgedDataMissingError):
    """The JetStream stream no longer holds what was read from it: it was deleted and
    recreated (its genesis identity changed, or a session names another one), messages were
    removed from it (its first sequence is past 1, or some are deleted), or a journal subject
    ends before the head a writer, a follower or a tail checkpoint saw. Exit 8 like other
    missing acknowledged data; nothing is written (numbers would be reused).

    ``stream`` names the stream; ``expected`` and ``found`` its identities when they differ.
    """


class MetadataCorruptError(JournalCorruptError):
    """A session's stored metadata file (``session.json``, a fork's ``BASE``) is damaged.

    Exit 8 like other damaged store data, not 10: exit 10 means "the file you gave me is not
    a journal" (import/verify input); this is the store's own data. ``session`` and ``path``
    name the session and the file.
    """

    kind = "corrupt_metadata"


class ChainBrokenError(JournalError):
    """A record's content hash or its link to the previous record does not verify."""

    exit_code = 9
    kind = "chain_broken"


class FormatError(AgentSessionsError):
    """Input that is not a journal we can read (not UTF-8, not JSON, truncated, tampered)."""

    exit_code = 10
    grpc_code = "INVALID_ARGUMENT"
    kind = "format"


class UnavailableError(AgentSessionsError):
    """A capability this operation needs is missing here (for example a zstd codec)."""

    exit_code = 12
    grpc_code = "UNAVAILABLE"
    kind = "unavailable"


class DeadlineExceededError(UnavailableError):
    """A request's deadline (``ExecRequest.deadline_unix``) passed: before the turn started
    (nothing was written), or while it ran (it was canceled, END CANCELED, reason TIMEOUT)."""

    grpc_code = "DEADLINE_EXCEEDED"
    kind = "deadline_exceeded"


class ToolServerError(UnavailableError):
    """A tool server (``unix:`` socket process, ``mcp:`` server) is unreachable, did not
    start, timed out or answered garbage. Raised before a call's intent is recorded it
    changes nothing (exit 12); raised by the executor after it, the host records an
    EXECUTOR_ERROR result the model sees."""

    kind = "tool_server"


class StorageError(AgentSessionsError):
    """The operating system refused a storage operation (disk full, I/O error, permissions)."""

    exit_code = 13
    grpc_code = "UNAVAILABLE"
    kind = "storage"


class HarnessError(AgentSessionsError):
    """The harness failed its run; the controller records an ERROR event for it."""

    exit_code = 14
    grpc_code = "INTERNAL"
    kind = "harness"


class ContextOverflowError(HarnessError):
    """A model refused a request as longer than its context window (HTTP 400
    ``context_length_exceeded`` and its variants), a failed model call.

    Raised by the model provider and passed to the harness as itself, so the harness may
    compact and retry (the chat harness does, once); the journal keeps the call and the
    refusal (see ``agentsessions/controller/sinks.py``). Uncaught, it fails the turn."""

    kind = "context_overflow"


class PlacementError(AgentSessionsError):
    """The runtime cannot host this harness (e.g. it needs memory snapshots); nothing ran."""

    exit_code = 15
    grpc_code = "FAILED_PRECONDITION"
    kind = "placement"


class ReplayError(AgentSessionsError):
    """A replay did not reproduce the recorded journal."""

    exit_code = 16
    grpc_code = "FAILED_PRECONDITION"
    kind = "replay"


class ReplayDivergedError(ReplayError):
    """I0/I5: the harness asked for something other than what was recorded."""

    kind = "replay_diverged"


class ReplayInvokedModelError(ReplayError):
    """I1: a replay called a live model."""

    kind = "replay_invoked_model"


class HarnessMismatchError(ReplayError):
    """The journal was recorded by another harness name or version."""

    kind = "harness_mismatch"


class InvalidExecutionLogError(AgentSessionsError):
    """The journal's executions cannot be driven as they are (e.g. an incomplete invocation)."""

    exit_code = 17
    grpc_code = "FAILED_PRECONDITION"
    kind = "invalid_execution_log"


class NothingToCompactError(InvalidExecutionLogError):
    """A compaction was asked of a session with no turn before the kept ones (empty, fewer
    turns than kept, or none since the last compaction): nothing was written."""

    kind = "nothing_to_compact"


class TurnCanceledError(AgentSessionsError):
    """A cancel request named the running execution: the turn stops at this boundary.

    Raised by the live sink before an effect starts; the controller catches it, records
    LIFECYCLE_CANCEL and END CANCELED, and returns a normal (canceled) turn result.
    """

    exit_code = 18
    grpc_code = "CANCELLED"


class MissingIdempotencyKeyError(InvalidArgumentError):
    """A CONTROLLER_MEDIATED tool call without an idempotency key; nothing was recorded."""

    kind = "missing_idempotency_key"


class UnmediatedToolCallError(InvalidArgumentError):
    """A tool call handed to the host (``sink.tool``) with a tier the host does not run;
    nothing was recorded. A tool the harness runs itself is reported with ``sink.report``."""

    kind = "unmediated_tool_call"


class UnknownToolError(InvalidArgumentError):
    """The session's workload names no tool (or no executor) of that name."""

    kind = "unknown_tool"


class WorkloadError(InvalidArgumentError):
    """A workload file (``--tools FILE``) does not parse or names what does not exist;
    ``path``, ``table`` and ``key`` say where."""

    kind = "invalid_workload"


class InheritedToolIntentError(InvalidExecutionLogError):
    """A forked child's open turn ends in a tool intent copied from its parent: the child
    never re-drives it (the effect, if any, happened in the parent's session)."""

    kind = "inherited_tool_intent"


class ToolOutcomeUnknownError(AgentSessionsError):
    """A mediated tool call was cut between its intent (TOOL_CALL, durable) and its result,
    the host holds no receipt of its outcome, and its executor cannot confirm one by key: it
    may have run, so it is never repeated blindly. Nothing was written. ``call_id``,
    ``tool`` and ``idempotency_key`` name the call."""

    exit_code = 19
    grpc_code = "FAILED_PRECONDITION"
    kind = "tool_outcome_unknown"


class ToolNotUnresolvedError(AgentSessionsError):
    """``resolve`` named a tool call that is not unresolved (unknown id, not the latest
    execution's open call, already answered, or not marked unknown by a resume); nothing
    was changed. ``call_id`` names it."""

    exit_code = 22
    grpc_code = "FAILED_PRECONDITION"
    kind = "tool_not_unresolved"


class ApprovalUnavailableError(InvalidArgumentError):
    """An approval-gated (REQUIRES_APPROVAL) call from a harness that is not resumable by
    replay (a parked turn is continued by replaying it); nothing was recorded."""

    kind = "approval_unavailable"


class ApprovalParkedError(AgentSessionsError):
    """The turn parked on an approval-gated tool call: TOOL_CALL and APPROVAL_REQUEST are
    durable, no END or ERROR was written, and the turn waits for ``approve`` or ``deny``.

    ``execution_id``, ``tool_call_id`` and ``request_seq`` (the APPROVAL_REQUEST's seq) are
    the ApprovalRef a decision names; ``tool`` is the call's tool. Not a failure of the
    turn: the server answers it with a final session frame, the CLI with exit 20.
    """

    exit_code = 20
    grpc_code = "FAILED_PRECONDITION"
    kind = "approval_parked"

    def __init__(
        self,
        message: str,
        *,
        execution_id: str,
        tool_call_id: str,
        request_seq: int,
        tool: str = "",
        **fields: Any,
    ) -> None:
        super().__init__(
            message,
            execution_id=execution_id,
            tool_call_id=tool_call_id,
            request_seq=request_seq,
            tool=tool,
            **fields,
        )
        self.execution_id = execution_id
        self.tool_call_id = tool_call_id
        self.request_seq = request_seq
        self.tool = tool


class ApprovalError(AgentSessionsError):
    """An approval decision (or a turn) the session's approval state refuses; nothing was
    written."""

    exit_code = 21
    grpc_code = "FAILED_PRECONDITION"
    kind = "approval"


class ApprovalNotPendingError(ApprovalError):
    """No open approval request matches (not pending, wrong seq, execution or call)."""

    kind = "approval_not_pending"


class ApprovalDecidedError(ApprovalError):
    """The request already has a different decision (an identical retry is answered with
    the existing one instead)."""

    kind = "approval_decided"


class ApprovalInheritedError(ApprovalError):
    """The request is in a fork child's copied prefix: it belongs to the parent session."""

    kind = "approval_inherited"


class ApprovalBlockedError(ApprovalError):
    """New input while the session's own approval-gated call has no receipt yet."""

    kind = "approval_blocked"


class HarnessProtocolError(HarnessError):
    """A remote harness broke the Harness.Connect protocol (a frame out of order, another
    execution's id, an event the host writes, a second END): the host cancelled the stream
    and recorded the turn's ERROR, as for any failed harness; nothing committed is lost."""

    kind = "harness_protocol"


class HarnessAckError(AgentSessionsError):
    """A remote harness answered the host's approval park with a wrong or missing
    EVENT_PARKED acknowledgement. The host cancelled the stream; the approval request stays
    journaled and the turn stays parked (no END, no ERROR: nothing may follow an open
    approval intent). ``approve``/``deny`` then resume once the harness behaves."""

    exit_code = 23
    grpc_code = "INTERNAL"
    kind = "harness_ack"


class HarnessRegistryError(AgentSessionsError):
    """A harness registration cannot change so (a STATIC harness cannot be retired, or the
    host cannot serve that placement); nothing was changed."""

    exit_code = 24
    grpc_code = "FAILED_PRECONDITION"
    kind = "harness_registry"


class HarnessExistsError(HarnessRegistryError):
    """The name is registered with another spec, or is a static (built-in or
    command-line) harness; nothing was changed."""

    grpc_code = "ALREADY_EXISTS"
    kind = "harness_exists"


class SessionKeyError(AgentSessionsError):
    """An encrypted session's (or tool store's) data key cannot be had; nothing was read
    as plaintext and nothing was changed. ``session`` names it; ``verify`` without a key
    still checks the journal's structure."""

    exit_code = 26
    grpc_code = "FAILED_PRECONDITION"
    kind = "session_key"


class MasterKeyError(SessionKeyError):
    """No master key was given for an encrypted session, or the one given is malformed
    (wrong size, not base64, a key file others may read) or does not unwrap the data key."""

    kind = "master_key"


class KeyShreddedError(SessionKeyError):
    """The session's wrapped data key was destroyed (``shred``): its content is unreadable
    for good, with or without the master key."""

    kind = "key_shredded"


class UnauthenticatedError(AgentSessionsError):
    """The server refused the call: no bearer token, or a wrong, expired or revoked one."""

    exit_code = 30
    grpc_code = "UNAUTHENTICATED"
    kind = "unauthenticated"


class PermissionDeniedError(AgentSessionsError):
    """The caller is authenticated but its token does not cover the request (another
    project, an actor it may not name, a server path it may not choose)."""

    exit_code = 31
    grpc_code = "PERMISSION_DENIED"
    kind = "permission_denied"


class ResourceExhaustedError(AgentSessionsError):
    """A request over one of the server's bounds (streams, turns, rate); retry later."""

    exit_code = 32
    grpc_code = "RESOURCE_EXHAUSTED"
    kind = "resource_exhausted"


class TokenNotFoundError(NotFoundError):
    """No token with that id in the home's token file."""

    kind = "token_not_found"


class TokensCorruptError(JournalCorruptError):
    """The home's ``tokens.json`` cannot be read as a token file; nothing was changed."""

    kind = "tokens_corrupt"
