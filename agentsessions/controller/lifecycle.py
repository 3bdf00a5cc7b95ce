"""Compute lifecycle: suspend and resume a session's compute, and fork sessions.

Suspend is cold only: the runtime snapshots the compute (a memory snapshot where the
runtime can take one, nothing otherwise) and frees it; LIFECYCLE_SUSPEND records the
snapshot reference, so compute_state goes COLD. Resume restores from that reference and
records LIFECYCLE_RESUME (LIVE). For a STATELESS_REPLAY harness nothing of memory matters:
the journal is the state. For a REQUIRES_MEMORY_SNAPSHOT harness the snapshot *is* the
state, so resume restores it and its next turn continues in that memory (I4: it never
rebuilds from history).

Fork makes 1-128 children all or nothing. Each child's chain is the parent's up to
``at_seq`` (referred to, not copied) followed by a LIFECYCLE_FORK marker ``parent@N``.
A REQUIRES_MEMORY_SNAPSHOT harness forks only at the head, from a snapshot of the parent:
the parent is suspended first and each child gets its own copy of that snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentsessions.errors import InvalidArgumentError, PlacementError, UnavailableError
from agentsessions.journal.stores.store import SessionInfo, SessionMeta, new_uid
from agentsessions.v1 import construct
from agentsessions.v1.limits import MAX_FORK_CHILDREN

from .port import ControllerPort
from .rules import DEFAULT_HARNESS, fresh_start_hint
from .spi import REQUIRES_MEMORY_SNAPSHOT, SnapshotRef


@dataclass(frozen=True)
class ForkRequest:
    """What ``fork`` was asked for (validated before anything is written)."""

    at_seq: int = 0
    count: int = 1
    names: Sequence[str] = ()
    labels: Mapping[str, str] | None = None

    def check(self) -> None:
        if not 1 <= self.count <= MAX_FORK_CHILDREN:
            raise InvalidArgumentError(
                f"fork count must be 1..{MAX_FORK_CHILDREN}, got {self.count}"
            )
        if self.names and len(self.names) != self.count:
            raise InvalidArgumentError(
                f"give no child names or exactly {self.count}, got {len(self.names)}"
            )
        if self.at_seq < 0:
            raise InvalidArgumentError(f"fork seq must be >= 0 (0 = head), got {self.at_seq}")


def suspend(controller: ControllerPort, uid: str) -> SessionInfo:
    """Snapshot and free the session's compute; record LIFECYCLE_SUSPEND (COLD)."""
    info = controller.store.get(uid)
    if info.compute_state == "COMPUTE_COLD":
        return info
    ref = _snapshot(controller, uid, info)
    _append(controller, uid, construct.lifecycle_event("LIFECYCLE_SUSPEND", **_fields(ref)))
    return controller.store.get(uid)


def resume_compute(controller: ControllerPort, uid: str) -> SessionInfo:
    """Bring compute back from the latest snapshot; record LIFECYCLE_RESUME (LIVE)."""
    info = controller.store.get(uid)
    if info.compute_state != "COMPUTE_COLD":
        return info
    ref = _ref(info.snapshot)
    if ref.memory:
        name = info.meta.harness or DEFAULT_HARNESS
        controller.place(controller.harnesses.create(name, project=info.meta.project).describe())
        try:
            controller.runtime.restore(uid, ref)
        except UnavailableError as exc:  # the snapshot's memory is gone: name the way on
            raise UnavailableError(
                exc.message, hint=fresh_start_hint(uid), **{**exc.fields, "session": uid}
            ) from None
    _append(controller, uid, construct.lifecycle_event("LIFECYCLE_RESUME"))
    return controller.store.get(uid)


def fork(controller: ControllerPort, uid: str, request: ForkRequest) -> list[SessionInfo]:
    """Create ``request.count`` children of ``uid`` at ``request.at_seq`` (0 = head)."""
    request.check()
    parent = controller.store.get(uid)
    at = request.at_seq or parent.last_seq
    if at > parent.last_seq:
        raise InvalidArgumentError(
            f"session {uid} ends at seq {parent.last_seq}; cannot fork at {at}"
        )
    metas = [
        SessionMeta(
            uid=new_uid(),
            project=parent.meta.project,
            name=request.names[i] if request.names else "",
            harness=parent.meta.harness,
            model=parent.meta.model,
            labels=dict(request.labels or {}),
            annotations=dict(parent.meta.annotations),
            origin=parent.meta.origin,
            parent_uid=uid,
            fork_seq=at,
        )
        for i in range(request.count)
    ]
    if _needs_memory(controller, parent):
        return _fork_memory(controller, parent, at, metas)
    return controller.store.fork(uid, at, metas)


def _fork_memory(
    controller: ControllerPort, parent: SessionInfo, at: int, metas: list[SessionMeta]
) -> list[SessionInfo]:
    if not controller.runtime.capabilities().cow_fork:
        raise PlacementError(
            f"runtime {controller.runtime.name!r} cannot copy a memory snapshot; "
            "a REQUIRES_MEMORY_SNAPSHOT harness cannot fork here"
        )
    if at != parent.last_seq:
        raise PlacementError(
            f"a REQUIRES_MEMORY_SNAPSHOT harness forks only at the head (seq {parent.last_seq})"
        )
    suspended = suspend(controller, parent.uid)
    refs = controller.runtime.clone(_ref(suspended.snapshot), [m.uid for m in metas])
    children = controller.store.fork(parent.uid, suspended.last_seq, metas)
    for child, ref in zip(children, refs, strict=True):
        _append(
            controller, child.uid, construct.lifecycle_event("LIFECYCLE_SUSPEND", **_fields(ref))
        )
    return [controller.store.get(c.uid) for c in children]


def _needs_memory(controller: ControllerPort, info: SessionInfo) -> bool:
    name = info.meta.harness or DEFAULT_HARNESS
    descriptor = controller.harnesses.create(name, project=info.meta.project).describe()
    return descriptor.capabilities.resumability == REQUIRES_MEMORY_SNAPSHOT


def _snapshot(controller: ControllerPort, uid: str, info: SessionInfo) -> SnapshotRef:
    if not _needs_memory(controller, info):
        return SnapshotRef()  # the journal is the state: nothing of memory to keep
    compute = controller.runtime.find(uid)
    if compute is None:
        raise UnavailableError(f"session {uid} has no live compute to snapshot")
    ref = controller.runtime.snapshot(uid, compute)
    controller.runtime.stop(uid, compute)
    return ref


def _append(controller: ControllerPort, uid: str, event: Mapping[str, Any]) -> None:
    with controller.session_writer(uid, 0.0) as writer:
        result = writer.append([event], expected_last_seq=writer.head[0])
    if controller.on_record is not None:
        for record in result.records:
            controller.on_record(record)


def _fields(ref: SnapshotRef) -> dict[str, Any]:
    return {
        "snapshot_local": ref.local,
        "snapshot_external_uri": ref.external_uri,
        "snapshot_memory": ref.memory,
        "snapshot_sealed": ref.sealed,
    }


def _ref(snapshot: Mapping[str, Any] | None) -> SnapshotRef:
    s = snapshot or {}
    return SnapshotRef(
        local=str(s.get("snapshot_local", "")),
        external_uri=str(s.get("snapshot_external_uri", "")),
        memory=bool(s.get("snapshot_memory", False)),
        sealed=bool(s.get("snapshot_sealed", False)),
    )
