"""The default runtime: each harness where its resumability says it belongs.

A STATELESS_REPLAY harness keeps nothing between runs (the journal is its state), so it
runs in-process on ``local``; a REQUIRES_MEMORY_SNAPSHOT harness's memory *is* its state,
so it lives on ``warm``, whose hosts outlive the CLI process and can be snapshotted and
forked. Users then never have to name a runtime to keep a counter counting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    Compute,
    HarnessFactory,
    RuntimeCapabilities,
    SnapshotRef,
)
from agentsessions.runtimes.local import LocalRuntime
from agentsessions.runtimes.warm import WarmCompute, WarmRuntime


class AutoRuntime:
    """Routes memory harnesses to :class:`WarmRuntime` and the rest to :class:`LocalRuntime`."""

    name = "auto"

    def __init__(self, home: Path) -> None:
        self.local = LocalRuntime()
        self.warm = WarmRuntime(home)

    def capabilities(self) -> RuntimeCapabilities:
        return self.warm.capabilities()

    def create(self, session: str, factory: HarnessFactory) -> Compute:
        needs = factory().describe().capabilities.resumability == REQUIRES_MEMORY_SNAPSHOT
        return (self.warm if needs else self.local).create(session, factory)

    def find(self, session: str) -> Compute | None:
        return self.warm.find(session) or self.local.find(session)

    def snapshot(self, session: str, compute: Compute) -> SnapshotRef:
        if isinstance(compute, WarmCompute):
            return self.warm.snapshot(session, compute)
        return self.local.snapshot(session, compute)

    def restore(self, session: str, snapshot: SnapshotRef) -> Compute:
        if snapshot.memory:
            return self.warm.restore(session, snapshot)
        return self.local.restore(session, snapshot)

    def clone(self, snapshot: SnapshotRef, sessions: Sequence[str]) -> list[SnapshotRef]:
        if snapshot.memory:
            return self.warm.clone(snapshot, sessions)
        return self.local.clone(snapshot, sessions)

    def stop(self, session: str, compute: Compute) -> None:
        if isinstance(compute, WarmCompute):
            self.warm.stop(session, compute)
        else:
            self.local.stop(session, compute)
