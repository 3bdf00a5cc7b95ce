"""agentsessions.client: the ``Sessions`` API over the wire, to an ``agentsessions serve``.

``dial(address)`` returns a :class:`~agentsessions.client.remote.RemoteSessions`, which
implements the :class:`~agentsessions.sessions.api.Sessions` Protocol with the same values
and the same exception classes as the local engine (the one contract suite runs against
both). With :mod:`agentsessions.server`, the only packages that import grpc and protobuf;
a front end on the top line of the layer map (:mod:`agentsessions`).
"""

from __future__ import annotations

from agentsessions.client.remote import TLS, RemoteSessions, dial

__all__ = ["TLS", "RemoteSessions", "dial"]
