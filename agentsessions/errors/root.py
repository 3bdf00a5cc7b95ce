"""The root of the tree and the errors any layer raises about a request or its environment.

:class:`AgentSessionsError` carries what every error carries (a message, a hint naming the
command that helps, structured fields for ``--json``) and the two numbers the front ends map
it to: ``exit_code`` for the CLI, ``grpc_code`` for the server. The classes here are the
generic answers (malformed, not found, unreadable input, missing capability, the OS refused)
that the other modules of :mod:`agentsessions.errors` refine.
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


class NotFoundError(AgentSessionsError):
    """No session with that uid exists in this store."""

    exit_code = 3
    grpc_code = "NOT_FOUND"
    kind = "not_found"


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


class StorageError(AgentSessionsError):
    """The operating system refused a storage operation (disk full, I/O error, permissions)."""

    exit_code = 13
    grpc_code = "UNAVAILABLE"
    kind = "storage"
