"""What the local engine's collaborators share: :class:`EngineCore`.

The engine (:class:`~.local.LocalSessions`) owns one core and hands it to each collaborator
(:class:`~.turning.TurnRunner`, :class:`~.lifecycle.Lifecycle`, :class:`~.approvals.Approvals`,
:class:`~.resolving.Resolver`, :class:`~.claims.SessionClaims`, :class:`~.keys.MasterKeys`):
the store and home, the runtime (made on first use), one controller per session (holding
that session's writer across turns), the session locks, the engine's catalog lock, and
where a session's tools are kept (:meth:`record_workload`). Each collaborator uses these
public methods only, so what one of them needs of the engine is this class, read in one
place.

Invariants: one controller per session, so per-turn observers and model-call counts never
mix between threads; ``catalog_lock`` serialises the store calls that touch the shared
catalog (create, list, fork, delete, import); a session's lock (:meth:`hold`) is held from
a turn's checks to its end.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.controller.heldlimit import HeldLimit
from agentsessions.journal.stores.capabilities import WORKLOADS
from agentsessions.journal.stores.store import SessionInfo, Store
from agentsessions.v1.ids import check_uid

from . import checks
from .defaults import DEFAULT_MODEL, DEFAULT_RUNTIME
from .turnstream import Turns
from .wiring import build_controller, close_tools

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller
    from agentsessions.controller.spi import Runtime
    from agentsessions.tools.workload import Workload


class EngineCore:
    """The store, runtime, controllers and locks one engine's collaborators share."""

    def __init__(
        self,
        home: Path,
        store: Store,
        *,
        runtime: str = DEFAULT_RUNTIME,
        model: str | None = None,
        models: Mapping[str, str] | None = None,
    ) -> None:
        self.home = home
        self.models = checks.catalog(models)  # the operator's model names (see open_local)
        self.store = store
        self.runtime_name = runtime or DEFAULT_RUNTIME
        self.default_model = model or DEFAULT_MODEL
        self.catalog_lock = threading.Lock()  # guards the fields below and the store's catalog
        self.turns = Turns()  # the session locks, the running turns and their workers
        self.model_checks = checks.ModelChecks(self.models)
        self.durability = ""  # the turns' durability mode unless a turn names one ("": step)
        self._controllers: dict[str, Controller] = {}
        # the writers held across turns, bounded over all sessions (descriptors, memory)
        self.held = HeldLimit()
        self._runtime: Runtime | None = None

    def runtime(self) -> Runtime:
        """The engine's runtime, made on first use (an unknown name fails here, exit 2)."""
        with self.catalog_lock:
            if self._runtime is None:
                from agentsessions.runtimes import create_runtime

                self._runtime = create_runtime(self.runtime_name, home=self.home)
                from .harnessbook import load_registered

                load_registered(self.store)  # registered remote harnesses resolve by name
            return self._runtime

    def controller(self, uid: str = "") -> Controller:
        """The controller of session ``uid`` ("" for checks that concern no session)."""
        runtime = self.runtime()
        with self.catalog_lock:
            found = self._controllers.get(uid)
            if found is None:
                # one controller per session, holding that session's writer across turns
                found = build_controller(
                    self.store,
                    self.home,
                    runtime=runtime,
                    default_model=self.default_model,
                    keep_writers=1,
                    catalog=self.models,
                    held_limit=self.held,
                )
                found.durability = self.durability  # a turn naming no mode runs in this one
                self._controllers[uid] = found
            return found

    def hold(self, uid: str, wait: float) -> threading.Lock:
        """Take ``uid``'s engine lock, waiting up to ``wait`` seconds; LockHeldError if busy."""
        return self.turns.hold(uid, wait)

    def record_workload(self, uid: str, workload: Workload) -> None:
        """Keep the session's tools with it (a store without a place for them refuses)."""
        WORKLOADS.need(self.store, "--tools", session=uid).set_workload(uid, workload.source)

    def release_writer(self, uid: str) -> None:
        """Close the writer held for ``uid`` between turns, so a store operation that takes
        the session's lock itself (delete) or another process can have it."""
        with self.catalog_lock:
            controller = self._controllers.get(uid)
        if controller is not None:
            controller.release(uid)

    def state(self, uid: str) -> SessionInfo:
        """``uid``'s state around a turn of this engine: from the writer the engine holds,
        without asking the store, when there is one (its metadata never changes mid-turn;
        its head is current once the caller holds the session's lock)."""
        with self.catalog_lock:
            controller = self._controllers.get(uid)
        return controller.info(uid) if controller is not None else self.store.get(check_uid(uid))

    def close(self) -> bool:
        """Wait for running turns (their END is durable then), close the writers the engine
        held across turns (each leaves a fresh TAIL hint and frees its lock) and the
        workers; False when closed already."""
        if not self.turns.drain():
            return False
        with self.catalog_lock:
            controllers = list(self._controllers.values())
            self._controllers.clear()
        for controller in controllers:
            controller.close()
            close_tools(controller)  # ends the mcp server processes its tools started
        self.turns.close()
        return True
