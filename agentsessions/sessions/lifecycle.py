"""The engine's lifecycle operations: ``Sessions.suspend``, ``cancel`` and ``fork``.

Each takes the session's engine lock (a turn of this engine is waited for, or refused
as busy), then calls the controller's operation; the engine's catalog lock guards a fork,
which creates sessions.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from agentsessions.errors import LockHeldError
from agentsessions.journal.stores.store import Store
from agentsessions.v1.ids import check_uid

from .api import Session
from .views import view

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller

DEFAULT_CANCEL_WAIT = 10.0
"""Seconds a cancel of a running turn waits for its END CANCELED."""


class Engine(Protocol):
    """What these operations use of the local engine (named so, not imported: the engine
    imports this module)."""

    store: Store
    _lock: threading.Lock

    def controller(self, uid: str = "") -> Controller:
        """The controller of session ``uid``."""
        ...

    def _hold(self, uid: str, wait: float) -> threading.Lock:
        """The session's engine lock, held (LockHeldError when busy past ``wait``)."""
        ...

    def check_fork(self, at: int, count: int, names: Sequence[str]) -> None:
        """Refuse a malformed fork request before anything is written."""
        ...


def suspend(self: Engine, uid: str) -> Session:
    """Snapshot and free ``uid``'s compute (COLD); a cold session is returned as is."""
    from agentsessions.controller.lifecycle import suspend as suspend_session

    check_uid(uid)
    self.store.get(uid)
    controller = self.controller(uid)
    lock = self._hold(uid, 0.0)
    try:
        return view(suspend_session(controller, uid))
    finally:
        lock.release()


def cancel(
    self: Engine,
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
    self.store.get(uid)
    controller = self.controller(uid)
    asked = {"reason": reason, "execution_id": execution_id}
    elsewhere = getattr(self.store, "writer_elsewhere", None)  # a distributed store's probe
    if elsewhere is not None and elsewhere(uid):  # live on another host: ask, never fence
        return view(request_and_wait(self.store, uid, wait, **asked))
    try:
        lock = self._hold(uid, 0.0)
    except LockHeldError:
        return view(request_and_wait(self.store, uid, wait, **asked))
    try:
        try:
            return view(cancel_execution(controller, uid, cancel_detail(reason), execution_id))
        except LockHeldError:  # a writer of this engine's controller runs the turn
            pass
    finally:
        lock.release()
    return view(request_and_wait(self.store, uid, wait, **asked))


def fork(
    self: Engine,
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
    self.check_fork(at, count, names)
    request = ForkRequest(at_seq=at, count=count, names=tuple(names), labels=dict(labels or {}))
    controller = self.controller(uid)
    lock = self._hold(uid, 0.0)
    try:
        with self._lock:
            children = fork_session(controller, uid, request)
    finally:
        lock.release()
    return [view(child) for child in children]
