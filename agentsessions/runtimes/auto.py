"""The default runtime: each harness where its resumability says it belongs.

A STATELESS_REPLAY harness keeps nothing between runs (the journal is its state), so it
runs in-process on ``local``; a REQUIRES_MEMORY_SNAPSHOT harness's memory *is* its state,
so it lives on ``warm``, whose hosts outlive the CLI process and can be snapshotted and
forked. Users then never have to name a runtime to keep a counter counting.

The warm runtime is made (and its module, with sockets and the host protocol, imported)
on the first call that needs a host: a turn of a stateless harness never does. Its idle
timeout is still checked here, when this runtime is made (:mod:`.warm_settings`), so a bad
``AGENTSESSIONS_WARM_IDLE_SECONDS`` is refused as early as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.controller.spi import (
    REQUIRES_MEMORY_SNAPSHOT,
    Compute,
    HarnessFactory,
    RuntimeCapabilities,
    SnapshotRef,
)
from agentsessions.runtimes.local import LocalCompute, LocalRuntime
from agentsessions.runtimes.warm_settings import idle_seconds, warm_capabilities

if TYPE_CHECKING:
    from agentsessions.runtimes.warm import WarmRuntime


class AutoRuntime:
    """Routes memory harnesses to :class:`WarmRuntime` and the rest to :class:`LocalRuntime`."""

    name = "auto"

    def __init__(self, home: Path) -> None:
        self.local = LocalRuntime()
        self._home = home
        self._idle_seconds = idle_seconds(None)
        self._warm: WarmRuntime | None = None

    @property
    def warm(self) -> WarmRuntime:
        """The warm runtime, made on first use (module docstring)."""
        if self._warm is None:
            from agentsessions.runtimes.warm import WarmRuntime

            self._warm = WarmRuntime(self._home, idle_seconds=self._idle_seconds)
        return self._warm

    def capabilities(self) -> RuntimeCapabilities:
        return warm_capabilities()  # the warm runtime's, asked without making it

    def create(self, session: str, factory: HarnessFactory) -> Compute:
        needs = factory().describe().capabilities.resumability == REQUIRES_MEMORY_SNAPSHOT
        return (self.warm if needs else self.local).create(session, factory)

    def find(self, session: str) -> Compute | None:
        return self.warm.find(session) or self.local.find(session)

    def snapshot(self, session: str, compute: Compute) -> SnapshotRef:
        if _is_warm(compute):
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
        if _is_warm(compute):
            self.warm.stop(session, compute)
        else:
            self.local.stop(session, compute)


def _is_warm(compute: Compute) -> bool:
    """Whether ``compute`` is a warm host's; a local one is told without the warm module."""
    if isinstance(compute, LocalCompute):
        return False
    from agentsessions.runtimes.warm import WarmCompute

    return isinstance(compute, WarmCompute)
