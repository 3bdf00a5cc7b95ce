"""The gRPC client's sessions by key: ``Sessions.ensure``, ``find`` and ``claim`` as the
``EnsureSession``, ``FindSession`` and ``ClaimSession`` RPCs (docs/WIRE.md). The server's
engine makes them atomic; the client only carries them, so a key means the same session to
every client and local caller of one store.

:class:`ByKey` is the client's collaborator for them: it is given the client's stub and
its call wrapper (which sends the token and maps a failed call to our exception tree), so
it needs nothing else of :class:`~.remote.RemoteSessions`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from os import PathLike
from typing import Any, Protocol, TypeVar

from agentsessions.client.workloads import tools_text
from agentsessions.sessions.values import Session
from agentsessions.v1.provenance import check_identity, check_origin, named_by
from agentsessions.v1.turn import TurnRequest
from agentsessions.wire import convert
from agentsessions.wire.gen import common_pb2, session_pb2

T = TypeVar("T")


class Call(Protocol):
    """A client's unary call: ``rpc`` (a stub's method) with ``request``, the token sent,
    a failure raised as our exception (:meth:`.RemoteSessions.unary`)."""

    def __call__(self, rpc: Callable[..., T], request: Any) -> T: ...


class ByKey:
    """EnsureSession, FindSession and ClaimSession over one client's stub and call."""

    def __init__(self, stub: Any, call: Call) -> None:
        self.stub = stub
        self.call = call

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
        """The session ``key`` (or ``origin``) names, created if there is none
        (EnsureSession)."""
        named_by(key, origin)  # one of them, well formed: refused before the call
        msg = template(
            project=project, name=name, harness=harness, model=model, labels=labels,
            annotations=annotations, origin=origin, identity=identity,
        )  # fmt: skip
        request = session_pb2.EnsureSessionRequest(
            key=key or "", session=msg, tools=tools_text(tools)
        )
        done = self.call(self.stub.EnsureSession, request)
        return convert.session_from_proto(done.session), done.created

    def find(
        self,
        key: str | None = None,
        *,
        origin: Mapping[str, Any] | None = None,
        project: str = "default",
    ) -> Session | None:
        """The live session ``key`` (or ``origin``) names, or None (FindSession)."""
        checked = named_by(key, origin)
        request = session_pb2.FindSessionRequest(key=key or "", project=project)
        if checked is not None:
            request.origin.CopyFrom(convert.to_proto(checked, common_pb2.Origin, "origin"))
        done = self.call(self.stub.FindSession, request)
        return convert.session_from_proto(done.session) if done.HasField("session") else None

    def claim(self, key: str, uid: str, *, project: str = "default") -> str:
        """Make ``key`` name session ``uid`` unless it names a live one (ClaimSession)."""
        request = session_pb2.ClaimSessionRequest(key=key, uid=uid, project=project)
        return str(self.call(self.stub.ClaimSession, request).uid)


def template(
    *,
    project: str,
    name: str,
    harness: str,
    model: str,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    origin: Mapping[str, Any] | None = None,
    identity: Mapping[str, str] | None = None,
) -> session_pb2.Session:
    """The Session message a CreateSession or EnsureSession sends: the new session's
    metadata (``origin`` and ``identity`` checked here, so a malformed one is refused
    before the call, as the local engine refuses it)."""
    msg = session_pb2.Session(
        harness=harness, model=model, labels=dict(labels or {}),
        annotations=dict(annotations or {}),
    )  # fmt: skip
    msg.metadata.project, msg.metadata.name = project, name
    if origin is not None:
        msg.origin.CopyFrom(convert.to_proto(check_origin(origin), common_pb2.Origin, "origin"))
    who = check_identity(identity)
    if who is not None:
        msg.identity.CopyFrom(convert.to_proto(who, common_pb2.IdentityRef, "identity"))
    return msg


def provenance(request: session_pb2.ExecRequest, turn: TurnRequest) -> None:
    """Set an ExecRequest's origin, identity and input authors from ``turn``'s."""
    if turn.origin is not None:
        request.origin.CopyFrom(convert.to_proto(turn.origin, common_pb2.Origin, "origin"))
    if turn.identity is not None:
        request.identity.CopyFrom(
            convert.to_proto(turn.identity, common_pb2.IdentityRef, "identity")
        )
    for actor in turn.actors:
        request.input_actors.append(convert.to_proto(actor, common_pb2.IdentityRef, "actor"))
