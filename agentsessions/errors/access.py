"""The server's access control: a bearer token that is missing, wrong or too narrow, a
request over the server's bounds, and the home's token file.

Exit codes 30-32 are a block apart from the journal's and the turn's, to grow without
renumbering.
"""

from __future__ import annotations

from agentsessions.errors.root import AgentSessionsError, NotFoundError
from agentsessions.errors.storage import JournalCorruptError


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
