"""agentsessions.client: the ``Sessions`` API over the wire, to an ``agentsessions serve``.

``dial(address)`` (:mod:`.dial`) returns a :class:`~agentsessions.client.remote.RemoteSessions`,
which implements the :class:`~agentsessions.sessions.api.Sessions` Protocol with the same values
and the same exception classes as the local engine (the one contract suite runs against
both). It stands on :mod:`agentsessions.wire`, as the server does; it never imports the
server. A front end on the top line of the layer map (:mod:`agentsessions`).
"""

from __future__ import annotations

from agentsessions.client.dial import TLS, dial
from agentsessions.client.remote import RemoteSessions

__all__ = ["TLS", "RemoteSessions", "dial"]
