"""Projections over a session's journal, folded one event at a time at append time.

``compute_state`` follows the reference's storage projection (digest 4.2): any
non-LIFECYCLE event means LIVE, LIFECYCLE SUSPEND or FORK means COLD, RESUME means LIVE,
other lifecycle kinds leave it unchanged. ``exec_state`` is what the log implies about the
latest execution, read from the last non-LIFECYCLE event: END gives its state, ERROR gives
FAILED, an APPROVAL_REQUEST leaves the run AWAITING a decision, anything else is RUNNING,
and a log with no execution event at all is PENDING.

It also remembers where the latest execution began (``exec_seq``, ``exec_id``) and the
snapshot reference of the latest SUSPEND, so that resuming a turn or a compute reads only
from there instead of scanning the log.

Nothing here ever reads the whole log: the store keeps a :class:`Projection` beside the
tail and applies each committed event to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentsessions.valueclass import value

_END_STATES = {
    "COMPLETED": "EXEC_COMPLETED",
    "FAILED": "EXEC_FAILED",
    "CANCELED": "EXEC_CANCELED",
}
_CLOSED = frozenset({"EXEC_COMPLETED", "EXEC_FAILED", "EXEC_CANCELED"})
_LIFECYCLE_COMPUTE = {
    "LIFECYCLE_SUSPEND": "COMPUTE_COLD",
    "LIFECYCLE_FORK": "COMPUTE_COLD",
    "LIFECYCLE_RESUME": "COMPUTE_LIVE",
}


@value
class Projection:
    """The session states derived from the log, updated incrementally."""

    compute_state: str = "COMPUTE_NONE"
    exec_state: str = "EXEC_PENDING"
    exec_seq: int = 0  # seq where the latest execution began (its EXECUTION_START or INPUT)
    exec_id: str = ""  # its execution id ("" for a legacy ID-less run)
    snapshot: dict[str, Any] | None = None  # the latest SUSPEND's snapshot fields

    def apply(self, event: Mapping[str, Any], seq: int = 0) -> None:
        """Fold one committed event (proto3-JSON) at ``seq`` into the projection."""
        kind = event.get("kind", "")
        if kind == "EVENT_LIFECYCLE":
            lifecycle = event.get("lifecycle") or {}
            lkind = lifecycle.get("kind", "")
            self.compute_state = _LIFECYCLE_COMPUTE.get(lkind, self.compute_state)
            if lkind == "LIFECYCLE_SUSPEND":
                self.snapshot = {k: v for k, v in lifecycle.items() if k.startswith("snapshot_")}
            return
        self._track_execution(kind, str(event.get("execution_id", "")), seq)
        self.compute_state = "COMPUTE_LIVE"
        if kind == "EVENT_END":
            state = (event.get("end") or {}).get("state", "")
            self.exec_state = _END_STATES.get(state, "EXEC_FAILED")
        elif kind == "EVENT_ERROR":
            self.exec_state = "EXEC_FAILED"
        elif kind == "EVENT_APPROVAL_REQUEST":
            self.exec_state = "EXEC_AWAITING"
        else:
            self.exec_state = "EXEC_RUNNING"

    def _track_execution(self, kind: str, exec_id: str, seq: int) -> None:
        """Note where a new execution begins: a START, or the first event of a new id.

        A legacy (ID-less) run begins at the first INPUT after a closed execution.
        """
        closed = self.exec_state in _CLOSED
        if (
            kind == "EVENT_EXECUTION_START"
            or (exec_id and exec_id != self.exec_id)
            or (
                not exec_id
                and kind == "EVENT_INPUT"
                and (closed or self.exec_id or not self.exec_seq)
            )
        ):
            self.exec_seq, self.exec_id = seq, exec_id

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"compute_state": self.compute_state, "exec_state": self.exec_state}
        if self.exec_seq:
            out.update(exec_seq=self.exec_seq, exec_id=self.exec_id)
        if self.snapshot is not None:
            out["snapshot"] = self.snapshot
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> Projection:
        if not obj:
            return cls()
        snapshot = obj.get("snapshot")
        return cls(
            compute_state=str(obj.get("compute_state", "COMPUTE_NONE")),
            exec_state=str(obj.get("exec_state", "EXEC_PENDING")),
            exec_seq=int(obj.get("exec_seq", 0)),
            exec_id=str(obj.get("exec_id", "")),
            snapshot=dict(snapshot) if isinstance(snapshot, dict) else None,
        )
