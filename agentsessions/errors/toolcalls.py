"""What a tool call or an approval can be refused with: a call the host cannot run as asked,
a tool server that does not answer, an outcome nobody can confirm, a parked turn and the
decisions the session's approval state refuses.
"""

from __future__ import annotations

from typing import Any

from agentsessions.errors.root import AgentSessionsError, InvalidArgumentError, UnavailableError


class ToolServerError(UnavailableError):
    """A tool server (``unix:`` socket process, ``mcp:`` server) is unreachable, did not
    start, timed out or answered garbage. Raised before a call's intent is recorded it
    changes nothing (exit 12); raised by the executor after it, the host records an
    EXECUTOR_ERROR result the model sees."""

    kind = "tool_server"


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
