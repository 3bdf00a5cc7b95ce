"""The ``Sessions`` gRPC service over one long-lived engine: each RPC is one call of the
:class:`~agentsessions.sessions.api.Sessions` API, so the server is one more veneer.

Mapped so far: CreateSession, GetSession, ListSessions. The other RPCs answer UNIMPLEMENTED
(the generated base class) until they are mapped. Every error leaves through
:func:`.status.abort`: the status the digest lists for its class, its message, and the
trailers our client turns back into the same exception. A foreign exception is logged here
and answered INTERNAL without its text.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from agentsessions.errors import InvalidArgumentError
from agentsessions.server import convert, status
from agentsessions.server.gen import session_pb2, session_pb2_grpc
from agentsessions.sessions.api import Sessions

LOG = logging.getLogger("agentsessions.server")
DEFAULT_PROJECT = "default"

R = TypeVar("R")
Handler = Callable[[Any, Any, grpc.ServicerContext], R]


def _rpc(method: Handler[R]) -> Handler[R]:
    """Run a unary handler; map what it raises to the RPC's status."""

    @functools.wraps(method)
    def handler(self: Any, request: Any, context: grpc.ServicerContext) -> R:
        try:
            return method(self, request, context)
        except Exception as exc:
            if status.status_code(exc) == grpc.StatusCode.INTERNAL:
                LOG.exception("%s failed", method.__name__)
            status.abort(context, exc)
            raise  # not reached: abort raises

    return handler


class SessionsService(session_pb2_grpc.SessionsServicer):
    """``agentsessions.v1.Sessions`` over ``engine`` (which the caller opens and closes)."""

    def __init__(self, engine: Sessions) -> None:
        self.engine = engine

    @_rpc
    def CreateSession(
        self, request: session_pb2.CreateSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """Create an empty session from the request's metadata, harness, model and labels."""
        s = request.session
        if s.metadata.uid:
            raise InvalidArgumentError(
                "session.metadata.uid is assigned by the server", hint="leave it empty"
            )
        for name in ("identity", "origin", "compute"):
            if s.HasField(name):
                raise InvalidArgumentError(f"session.{name} cannot be set by CreateSession")
        created = self.engine.create(
            project=s.metadata.project or DEFAULT_PROJECT,
            name=s.metadata.name,
            harness=s.harness,
            model=s.model,
            labels=dict(s.labels),
            annotations=dict(s.annotations),
        )
        return convert.session_to_proto(created)

    @_rpc
    def GetSession(
        self, request: session_pb2.GetSessionRequest, context: grpc.ServicerContext
    ) -> session_pb2.Session:
        """The session (deleted ones too): empty uid INVALID_ARGUMENT, unknown NOT_FOUND."""
        if not request.uid:
            raise InvalidArgumentError("uid must not be empty")
        return convert.session_to_proto(self.engine.get(request.uid))

    @_rpc
    def ListSessions(
        self, request: session_pb2.ListSessionsRequest, context: grpc.ServicerContext
    ) -> session_pb2.ListSessionsResponse:
        """One page of a project's sessions, newest first (page_size 0 = the default)."""
        page = self.engine.list(
            project=request.project or DEFAULT_PROJECT,
            page_size=request.page_size,
            cursor=request.page_token or None,
        )
        return session_pb2.ListSessionsResponse(
            sessions=[convert.session_to_proto(s) for s in page.sessions],
            next_page_token=page.next_cursor,
        )


def add_to_server(server: grpc.Server, engine: Sessions) -> SessionsService:
    """Serve ``engine`` as ``agentsessions.v1.Sessions`` on ``server``."""
    service = SessionsService(engine)
    session_pb2_grpc.add_SessionsServicer_to_server(service, server)  # type: ignore[no-untyped-call]
    return service
