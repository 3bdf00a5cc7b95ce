"""The remote runtime: harness compute someone else runs, reached over Harness.Connect.

A remote harness is a process at an address (``host:port`` or ``unix:///path``; for example
``agentsessions harness serve chat --listen unix:///run/chat.sock``). The host never starts
or stops it: it attaches for each execution, one Connect stream per execution, and every
effect crosses back to the host's sink (:mod:`agentsessions.wire.harnessclient`), so the
journal, its recording-before-effect, idempotency, approvals and replay are the host's.

A session selects a remote harness by name: a name registered in the home's harness
registry (``agentsessions harness register NAME --address ADDRESS``, or the HarnessRegistry
service) or given to ``agentsessions serve --harness NAME=ADDRESS`` resolves to
:func:`remote_harness`'s factory. Nothing of the remote process's memory is the host's, so
this runtime takes no memory snapshot: only a STATELESS_REPLAY harness is placed on it
(``can_place``), and suspend is cold. ``create`` refuses a harness that is not remote.
"""

from __future__ import annotations

from collections.abc import Callable

from agentsessions.controller.spi import Compute, Harness, HarnessFactory, SnapshotRef
from agentsessions.errors import PlacementError
from agentsessions.runtimes.local import LocalCompute, LocalRuntime


def remote_harness(address: str, name: str = "") -> Callable[[], Harness]:
    """The factory of the harness served at ``address`` (each call: a fresh proxy; the
    gRPC channel to the address is shared)."""

    def create() -> Harness:
        from agentsessions.wire.harnessclient import RemoteHarness

        return RemoteHarness(address, name)

    return create


def is_remote(harness: Harness) -> bool:
    """True for a proxy of a harness at an address."""
    return isinstance(getattr(harness, "address", None), str)


class RemoteRuntime(LocalRuntime):
    """Attaches to remote harnesses; holds no memory of them (cold suspend only)."""

    name = "remote"

    def create(self, session: str, factory: HarnessFactory) -> LocalCompute:
        """A proxy of the remote harness ``factory`` names; PlacementError for a harness
        that runs in process."""
        compute = super().create(session, factory)
        if not is_remote(compute.harness):
            self.stop(session, compute)
            raise PlacementError(
                f"session {session}: the remote runtime hosts only harnesses at an address",
                hint="register one: agentsessions harness register NAME --address ADDRESS",
                session=session,
            )
        return compute

    def snapshot(self, session: str, compute: Compute) -> SnapshotRef:
        """Cold: the harness's state is rebuilt by replay, over the wire."""
        return SnapshotRef()
