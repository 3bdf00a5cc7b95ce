"""The gRPC client's sessions by key (``Sessions.ensure``, ``find``, ``claim``): not served
yet. The ``agentsessions.v1.Sessions`` service has no RPC for them, so the client refuses
each with one UnavailableError naming the method, rather than emulating them with a listing
(which would not be atomic: two clients racing on one new key would make two sessions).
When the service gains them, this mixin gives way to the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike

from agentsessions.errors import UnavailableError
from agentsessions.sessions.api import Session


class ByKeyNotServed:
    """The three methods of the ``Sessions`` Protocol that the wire does not carry yet."""

    def ensure(
        self,
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
        """Not served over gRPC yet: UnavailableError (the local engine has it)."""
        raise _not_served("ensure")

    def find(self, key: str, *, project: str = "default") -> Session | None:
        """Not served over gRPC yet: UnavailableError (the local engine has it)."""
        raise _not_served("find")

    def claim(self, key: str, uid: str, *, project: str = "default") -> str:
        """Not served over gRPC yet: UnavailableError (the local engine has it)."""
        raise _not_served("claim")


def _not_served(method: str) -> UnavailableError:
    return UnavailableError(
        f"Sessions.{method} (sessions by key) is not served over gRPC yet",
        hint="open the store with the local engine (agentsessions.open) to use it",
    )
