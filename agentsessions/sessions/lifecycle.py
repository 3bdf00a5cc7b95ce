"""The engine's lifecycle operations: ``Sessions.suspend``, ``cancel`` and ``fork``.

Each takes the session's engine lock (a turn of this engine is waited for, or refused
as busy), then calls the controller's operation; the engine's catalog lock guards a fork,
which creates sessions. :class:`Lifecycle` is the engine's collaborator for them.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence

from agentsessions.errors import LockHeldError
from agentsessions.journal.stores.capabilities import REMOTE_WRITERS
from agentsessions.v1.ids import check_uid

from .checks import check_fork
from .core import EngineCore
from .values import Session
from .views import view

DEFAULT_CANCEL_WAIT = 10.0
"""Seconds a cancel of a running turn waits for its END CANCELED."""


class Lifecycle:
    """Suspend, cancel and fork of an engine's sessions, over its :class:`~.core.EngineCore`."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def suspend(self, uid: str) -> Session:
        """Snapshot and free ``uid``'s compute (COLD); a cold session is returned as is."""
        from agentsessions.controller.lifecycle import suspend as suspend_session

        check_uid(uid)
        self.core.store.get(uid)
        controller = self.core.controller(uid)
        lock = self.core.hold(uid, 0.0)
        try:
            return view(suspend_session(controller, uid))
        finally:
            lock.release()

    def cancel(
        self,
        uid: str,
        *,
        wait: float = DEFAULT_CANCEL_WAIT,
        reason: str = "",
        execution_id: str = "",
    ) -> Session:
        """End ``uid``'s open execution as CANCELED (LIFECYCLE_CANCEL, then END CANCELED).

        An interrupted turn (its process gone) is closed here, as its writer. A turn still
        running (another process or thread holds the lock) is asked to stop with a durable
        cancel request; this waits up to ``wait`` seconds for its END CANCELED
        (UnavailableError, exit 12, if it runs out; the request stays). Idempotent on an
        already canceled execution; InvalidExecutionLogError (exit 17) when nothing is open, or
        when ``execution_id`` is given and is not the latest execution (nothing written).
        ``reason`` (USER, TIMEOUT or INTERNAL) is recorded in the LIFECYCLE_CANCEL detail.
        """
        from agentsessions.controller.cancel import REASONS, cancel_detail, request_and_wait
        from agentsessions.controller.cancel import cancel as cancel_execution
        from agentsessions.errors import InvalidArgumentError

        from .checks import check_wait

        check_uid(uid)
        check_wait(wait)
        if reason and reason not in REASONS:
            raise InvalidArgumentError(
                f"cancel reason {reason!r} is not one of {', '.join(REASONS)}; nothing was canceled"
            )
        self.core.store.get(uid)
        controller = self.core.controller(uid)
        asked = {"reason": reason, "execution_id": execution_id}
        store = self.core.store
        elsewhere = REMOTE_WRITERS.of(store)  # a store other hosts write too
        if elsewhere is not None and elsewhere.writer_elsewhere(
            uid
        ):  # live there: ask, never fence
            return view(request_and_wait(self.core.store, uid, wait, **asked))
        try:
            lock = self.core.hold(uid, 0.0)
        except LockHeldError:
            return view(request_and_wait(self.core.store, uid, wait, **asked))
        try:
            try:
                return view(cancel_execution(controller, uid, cancel_detail(reason), execution_id))
            except LockHeldError:  # a writer of this engine's controller runs the turn
                pass
        finally:
            lock.release()
        return view(request_and_wait(self.core.store, uid, wait, **asked))

    def fork(
        self,
        uid: str,
        *,
        at: int = 0,
        count: int = 1,
        names: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[Session]:
        """Branch ``uid`` after seq ``at`` (0 = head) into ``count`` children, all or nothing."""
        from agentsessions.controller.lifecycle import ForkRequest
        from agentsessions.controller.lifecycle import fork as fork_session

        check_uid(uid)
        check_fork(at, count, names)
        request = ForkRequest(at_seq=at, count=count, names=tuple(names), labels=dict(labels or {}))
        controller = self.core.controller(uid)
        lock = self.core.hold(uid, 0.0)
        try:
            with self.core.catalog_lock:
                children = fork_session(controller, uid, request)
        finally:
            lock.release()
        return [view(child) for child in children]
