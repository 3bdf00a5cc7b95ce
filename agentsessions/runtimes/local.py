"""The local runtime: the harness runs in the calling process; nothing of memory survives.

``create`` builds a fresh instance from the factory. Suspend is cold: ``snapshot`` returns
an empty ``SnapshotRef`` because the state is rebuilt by replaying the journal, and
``restore`` builds a fresh instance from the factory this runtime saw in ``create``. A
memory snapshot can neither be restored nor cloned here (PlacementError), which is why
``can_place`` refuses a REQUIRES_MEMORY_SNAPSHOT harness on this runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentsessions.controller.spi import (
    Compute,
    Harness,
    HarnessFactory,
    RuntimeCapabilities,
    SnapshotRef,
)
from agentsessions.errors import PlacementError, UnavailableError

_CAPABILITIES = RuntimeCapabilities()  # none: nothing of memory survives


class LocalCompute:
    """One in-process harness instance; ``stop`` drops it."""

    def __init__(self, session: str, harness: Harness) -> None:
        self.session = session
        self._harness: Harness | None = harness

    @property
    def harness(self) -> Harness:
        """The instance; UnavailableError once the compute was stopped."""
        if self._harness is None:
            raise UnavailableError(
                f"the local compute of session {self.session} was stopped", session=self.session
            )
        return self._harness

    def drop(self) -> None:
        """Forget the instance (its memory goes with it)."""
        self._harness = None


class LocalRuntime:
    """In-process compute without memory snapshots or copy-on-write forks."""

    name = "local"

    def __init__(self) -> None:
        self._factories: dict[str, HarnessFactory] = {}
        self._computes: dict[str, LocalCompute] = {}

    def capabilities(self) -> RuntimeCapabilities:
        """Nothing of memory survives: no memory snapshot, no cow fork."""
        return _CAPABILITIES  # frozen: asked twice a turn, built once

    def create(self, session: str, factory: HarnessFactory) -> LocalCompute:
        """A fresh instance from ``factory``."""
        self._factories[session] = factory
        compute = LocalCompute(session, factory())
        self._computes[session] = compute
        return compute

    def find(self, session: str) -> LocalCompute | None:
        """The session's live instance if this runtime (this process) still holds it."""
        return self._computes.get(session)

    def snapshot(self, session: str, compute: Compute) -> SnapshotRef:
        """An empty (cold) ref: state is rebuilt by replay, memory does not survive."""
        return SnapshotRef()

    def restore(self, session: str, snapshot: SnapshotRef) -> LocalCompute:
        """A fresh instance from the session's factory (cold: the caller replays)."""
        if snapshot.memory:
            raise _no_memory(snapshot, session)
        factory = self._factories.get(session)
        if factory is None:
            raise UnavailableError(
                f"the local runtime has no harness factory for session {session}",
                session=session,
                hint="create the compute with its harness factory and replay the journal",
            )
        return self.create(session, factory)

    def clone(self, snapshot: SnapshotRef, sessions: Sequence[str]) -> list[SnapshotRef]:
        """Cold refs for the children (rebuilt by replay); a memory snapshot is refused."""
        if snapshot.memory:
            raise _no_memory(snapshot, ", ".join(sessions))
        return [SnapshotRef() for _ in sessions]

    def stop(self, session: str, compute: Compute) -> None:
        """Drop the instance."""
        known = self._computes.pop(session, None)
        for each in (known, compute):
            if isinstance(each, LocalCompute):
                each.drop()


def _no_memory(snapshot: SnapshotRef, session: str) -> PlacementError:
    return PlacementError(
        f"the local runtime keeps no memory snapshots; cannot use {snapshot.local or 'it'!r}",
        session=session,
        hint="use a runtime with memory_snapshot (warm), or resume cold by replay",
    )
