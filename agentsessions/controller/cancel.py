"""Cancel: close a session's open execution with LIFECYCLE_CANCEL and END CANCELED.

Invariants: cancel appends only as the session's single writer (it takes the lock like
any turn), and appends both events in one commit group, so a reader sees either the open
execution or the canceled one, never half. Cancel of a session whose latest execution is
already CANCELED appends nothing and returns it (idempotent); cancel of a session with no
open execution (none yet, or the latest one COMPLETED or FAILED with its END) is
InvalidExecutionLogError (exit 17, FAILED_PRECONDITION): there is nothing to cancel.

Scope today: the open execution of a turn whose process is gone (an interrupted turn that
would otherwise block new input). A turn still running in a live process holds the lock,
so cancel fails fast with LockHeldError (exit 6); stopping a live turn at its next effect
boundary (a durable CANCEL request beside the journal that the running sink checks) is
not built yet. Replay never re-drives a CANCELED execution and resume never resumes it:
it has its END, and ``executions.replayable`` skips canceled runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsessions.errors import InvalidExecutionLogError
from agentsessions.journal.stores.store import SessionInfo
from agentsessions.v1 import model

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller

DEFAULT_DETAIL = "canceled by request"


def _end_state(controller: Controller, uid: str, info: SessionInfo) -> str | None:
    """The END state of the latest execution, or None while it is open (one turn's reads)."""
    for record in controller.store.read(uid, max(info.exec_seq, 1)):
        event = record.event
        if event.get("kind") == "EVENT_END" and event.get("execution_id", "") == info.exec_id:
            return str(event.get("end", {}).get("state", "COMPLETED"))
    return None


def cancel(controller: Controller, uid: str, detail: str = DEFAULT_DETAIL) -> SessionInfo:
    """Close ``uid``'s open execution as CANCELED (see the module docstring)."""
    info = controller.store.get(uid)
    if not info.exec_id:
        raise InvalidExecutionLogError(f"session {uid} has no execution to cancel", session=uid)
    state = _end_state(controller, uid, info)
    if state == "CANCELED":
        return info
    if state is not None:
        raise InvalidExecutionLogError(
            f"session {uid} has no running execution to cancel (the latest one ended {state})",
            session=uid,
        )
    events = [
        model.lifecycle_event("LIFECYCLE_CANCEL", detail=detail, execution_id=info.exec_id),
        model.end_event("CANCELED", execution_id=info.exec_id),
    ]
    with controller._writer(uid, 0.0) as writer:
        result = writer.append(events, expected_last_seq=writer.head[0])
    if controller.on_record is not None:
        for record in result.records:
            controller.on_record(record)
    return controller.store.get(uid)
