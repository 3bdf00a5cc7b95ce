"""Projections over a session's journal, folded one event at a time at append time.

``compute_state`` follows the reference's storage projection (digest 4.2): any
non-LIFECYCLE event means LIVE, LIFECYCLE SUSPEND or FORK means COLD, RESUME means LIVE,
other lifecycle kinds leave it unchanged. ``exec_state`` is what the log implies about the
latest execution, read from the last non-LIFECYCLE event: END gives its state, ERROR gives
FAILED, an APPROVAL_REQUEST leaves the run AWAITING a decision, anything else is RUNNING,
and a log with no execution event at all is PENDING.

Nothing here ever reads the whole log: the store keeps a :class:`Projection` beside the
tail and applies each committed event to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_END_STATES = {
    "COMPLETED": "EXEC_COMPLETED",
    "FAILED": "EXEC_FAILED",
    "CANCELED": "EXEC_CANCELED",
}
_LIFECYCLE_COMPUTE = {
    "LIFECYCLE_SUSPEND": "COMPUTE_COLD",
    "LIFECYCLE_FORK": "COMPUTE_COLD",
    "LIFECYCLE_RESUME": "COMPUTE_LIVE",
}


@dataclass
class Projection:
    """The session states derived from the log, updated incrementally."""

    compute_state: str = "COMPUTE_NONE"
    exec_state: str = "EXEC_PENDING"

    def apply(self, event: Mapping[str, Any]) -> None:
        """Fold one committed event (proto3-JSON) into the projection."""
        kind = event.get("kind", "")
        if kind == "EVENT_LIFECYCLE":
            lifecycle = event.get("lifecycle") or {}
            self.compute_state = _LIFECYCLE_COMPUTE.get(
                lifecycle.get("kind", ""), self.compute_state
            )
            return
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

    def to_json(self) -> dict[str, str]:
        return {"compute_state": self.compute_state, "exec_state": self.exec_state}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> Projection:
        if not obj:
            return cls()
        return cls(
            compute_state=str(obj.get("compute_state", "COMPUTE_NONE")),
            exec_state=str(obj.get("exec_state", "EXEC_PENDING")),
        )
