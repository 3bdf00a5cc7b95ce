"""The gRPC client's sessions by key: ``Sessions.ensure``, ``find`` and ``claim`` as the
``EnsureSession``, ``FindSession`` and ``ClaimSession`` RPCs (docs/WIRE.md). The server's
engine makes them atomic; the client only carries them, so a key means the same session to
every client and local caller of one store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from os import PathLike
from typing import Any, Protocol, TypeVar

from agentsessions.client.workloads import tools_text
from agentsessions.sessions.api import Session
from agentsessions.wire import convert
from agentsessions.wire.gen import session_pb2

T = TypeVar("T")


class _Client(Protocol):
    """What these methods use of :class:`~.remote.RemoteSessions`: its stub, and its call
    wrapper (which maps a failed call to our exception tree)."""

    _stub: Any

    def _call(self, rpc: Callable[..., T], request: Any) -> T: ...


class ByKey:
    """The three methods over the wire, mixed into :class:`~.remote.RemoteSessions`."""

    def ensure(
        self: _Client,
        key: str,
        *,
        project: str = "default",
        name: str = "",
        harness: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        tools: str | PathLike[str] | None = None,
    ) -> tuple[Session, bool]:
        """The session ``key`` names, created if there is none (EnsureSession)."""
        msg = session_pb2.Session(
            harness=harness, model=model, labels=dict(labels or {}),
            annotations=dict(annotations or {}),
        )  # fmt: skip
        msg.metadata.project, msg.metadata.name = project, name
        request = session_pb2.EnsureSessionRequest(key=key, session=msg, tools=tools_text(tools))
        done = self._call(self._stub.EnsureSession, request)
        return convert.session_from_proto(done.session), done.created

    def find(self: _Client, key: str, *, project: str = "default") -> Session | None:
        """The live session ``key`` names, or None (FindSession)."""
        request = session_pb2.FindSessionRequest(key=key, project=project)
        done = self._call(self._stub.FindSession, request)
        return convert.session_from_proto(done.session) if done.HasField("session") else None

    def claim(self: _Client, key: str, uid: str, *, project: str = "default") -> str:
        """Make ``key`` name session ``uid`` unless it names a live one (ClaimSession)."""
        request = session_pb2.ClaimSessionRequest(key=key, uid=uid, project=project)
        return str(self._call(self._stub.ClaimSession, request).uid)
