"""Fresh start: a memory harness whose memory is gone starts again empty, on the record.

A REQUIRES_MEMORY_SNAPSHOT harness's state is its process memory, which the journal cannot
rebuild (I4). When that memory is lost (its warm host was stopped, idled out, was killed,
or the machine rebooted) the session would be a dead end; :func:`fresh_start` is the
documented way forward (``exec --fresh-start``). It appends ONE event, a LIFECYCLE_RESUME
whose ``detail`` starts with :data:`DETAIL_PREFIX` and names its own seq, then starts the
harness with empty memory. No new event kind or field (spec decision 1): an older reader
sees an ordinary RESUME (compute LIVE), a reader of this module sees where memory reset.

Invariants:
- the marker is durable before the empty harness exists, so no execution can ever run on
  reset memory without a marker before it (a retry after a failed start adds another
  marker, which resets nothing more);
- memory that still exists is never thrown away silently: a live compute, or a suspended
  snapshot that still restores, refuses the fresh start (``compute stop`` discards it);
- replay honours every marker: :func:`reset_between` tells the in-order replay loop to
  continue on a new, empty instance after it (:class:`ReplayInstances`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from agentsessions.errors import (
    InvalidArgumentError,
    InvalidExecutionLogError,
    UnavailableError,
)
from agentsessions.journal.stores.store import SessionInfo
from agentsessions.v1 import construct

from .lifecycle import resume_compute
from .port import ControllerPort
from .registry import Registry
from .spi import REQUIRES_MEMORY_SNAPSHOT, Harness, HarnessDescriptor

DETAIL_PREFIX = "fresh start:"
Event = Mapping[str, Any]


def detail(seq: int) -> str:
    """The marker's ``Lifecycle.detail`` for a fresh start recorded at ``seq``."""
    return f"{DETAIL_PREFIX} harness memory lost; the harness restarts empty at seq {seq}"


def is_marker(event: Event) -> bool:
    """True for a fresh-start marker (a LIFECYCLE_RESUME whose detail says so)."""
    if event.get("kind") != "EVENT_LIFECYCLE":
        return False
    body = event.get("lifecycle") or {}
    return body.get("kind") == "LIFECYCLE_RESUME" and str(body.get("detail", "")).startswith(
        DETAIL_PREFIX
    )


def marker_seqs(events: Iterable[tuple[int, Event]]) -> list[int]:
    """The seqs of every fresh-start marker among ``(seq, event)`` pairs, ascending."""
    return sorted(seq for seq, event in events if is_marker(event))


def reset_between(markers: Iterable[int], after_seq: int, before_seq: int) -> bool:
    """True if a fresh start lies after ``after_seq`` and before ``before_seq``: the
    execution beginning at ``before_seq`` ran on empty memory, not on what came before."""
    return any(after_seq < seq < before_seq for seq in markers)


def needs_memory(descriptor: HarnessDescriptor) -> bool:
    """True for a harness whose memory is its state (REQUIRES_MEMORY_SNAPSHOT)."""
    return descriptor.capabilities.resumability == REQUIRES_MEMORY_SNAPSHOT


class ReplayInstances:
    """The harness instance each replayed execution runs on, as the live session did.

    A stateless harness gets a fresh instance per execution. A memory harness keeps ONE
    instance across executions in journal order (its memory carried from turn to turn, as
    on its warm host), replaced by an empty one at each fresh-start marker.
    """

    def __init__(
        self,
        harnesses: Registry[Harness],
        name: str,
        descriptor: HarnessDescriptor,
        events: Iterable[tuple[int, Event]],
        project: str = "",
    ) -> None:
        self._harnesses = harnesses
        self._project = project  # the session's: its project's registrations resolve
        self._name = name
        self._memory = needs_memory(descriptor)
        self._markers = marker_seqs(events) if self._memory else []
        self._current: Harness | None = None
        self._last_seq = 0

    def for_run(self, first_seq: int, last_seq: int) -> Harness:
        """The instance for the execution spanning ``first_seq``..``last_seq``."""
        fresh = self._current is None or not self._memory
        if fresh or reset_between(self._markers, self._last_seq, first_seq):
            self._current = self._harnesses.create(self._name, project=self._project)
        self._last_seq = last_seq
        assert self._current is not None
        return self._current


def fresh_start(
    controller: ControllerPort, uid: str, name: str, wait_seconds: float = 0.0
) -> SessionInfo:
    """Record a fresh start for ``uid`` and start harness ``name`` with empty memory.

    InvalidArgumentError (exit 2) for a stateless harness or when the memory still exists;
    InvalidExecutionLogError (exit 17) when a turn is interrupted (it began with the lost
    memory and cannot be finished without it).
    """
    info = controller.store.get(uid)
    _, descriptor = controller.describe_harness(name, info.meta.project)
    controller.place(descriptor)
    if not needs_memory(descriptor):
        raise InvalidArgumentError(
            f"harness {name!r} keeps no memory between turns (the journal is its state); "
            "a fresh start applies only to a harness whose memory is its state",
            param="fresh_start",
        )
    if info.exec_state in ("EXEC_RUNNING", "EXEC_AWAITING"):
        raise InvalidExecutionLogError(
            f"session {uid} has an interrupted turn, begun with the memory that is now gone; "
            "a fresh start cannot finish it",
            hint="start a new session for this harness",
        )
    _refuse_if_memory_exists(controller, uid, info)
    with controller.session_writer(uid, wait_seconds) as writer:
        head = writer.head[0]
        marker = construct.lifecycle_event("LIFECYCLE_RESUME", detail=detail(head + 1))
        result = writer.append([marker], expected_last_seq=head)
    if controller.on_record is not None:
        for record in result.records:
            controller.on_record(record)
    controller.runtime.create(uid, controller.harnesses.factory(name, project=info.meta.project))
    return controller.store.get(uid)


def _refuse_if_memory_exists(controller: ControllerPort, uid: str, info: SessionInfo) -> None:
    """Memory still held (live, or a suspended snapshot that restores) is not discarded."""
    restored = ""
    if info.compute_state == "COMPUTE_COLD":
        # A snapshot that still restores is memory (refused below); one that is gone is
        # exactly the case a fresh start is for.
        with contextlib.suppress(UnavailableError):
            resume_compute(controller, uid)
            restored = ", just restored from its snapshot"
    compute = controller.runtime.find(uid)
    if compute is not None:
        raise InvalidArgumentError(
            f"session {uid} still holds its harness memory (a live compute"
            f"{_pid(compute)}{restored}); a fresh start would throw it away",
            hint="start it without a fresh start, or stop its compute first",
            param="fresh_start_live",
            session=uid,
        )


def _pid(compute: object) -> str:
    pid = getattr(compute, "pid", None)
    return f", pid {pid}" if isinstance(pid, int) else ""
