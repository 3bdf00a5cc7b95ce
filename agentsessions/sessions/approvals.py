"""The engine's side of human approval: ``Sessions.approve``, ``pending_approval`` on the
``Session`` view, and the refusal of new input while an approval is open.

The protocol itself (gate, decision, receipt, journal validation) lives in
:mod:`agentsessions.controller.approvals`; here it is bound to the engine's session locks
and views. Reading what is pending costs a read of the latest execution only, and only when
the projection says a request is waiting (exec_state EXEC_AWAITING).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsessions.errors import ApprovalBlockedError
from agentsessions.journal.stores.store import SessionInfo, Store
from agentsessions.v1.ids import check_uid

from .core import EngineCore
from .values import Approval
from .views import view

if TYPE_CHECKING:
    from agentsessions.v1.results import ApprovalRef

_OPEN = ("EXEC_RUNNING", "EXEC_AWAITING")


def pending_of(store: Store, info: SessionInfo) -> ApprovalRef | None:
    """The session's pending approval request (execution, call, request seq), or None."""
    if info.exec_state != "EXEC_AWAITING" or not info.exec_seq:
        return None
    from agentsessions.controller.approvals import pending_approval

    return pending_approval(info, list(store.read(info.uid, info.exec_seq)))


def check_no_open_approval(store: Store, info: SessionInfo) -> None:
    """Refuse new input while the session's own approval-gated call has no receipt."""
    if info.exec_state not in _OPEN or not info.exec_seq:
        return
    from agentsessions.controller.approvals import owned_open_gate

    gate = owned_open_gate(info, list(store.read(info.uid, info.exec_seq)))
    if gate is None:
        return
    step = "decided, resume it" if gate.decision_seq else "waiting for a decision"
    how = (
        f"agentsessions resume {info.uid}"
        if gate.decision_seq
        else (f"agentsessions approve {info.uid}  (or: agentsessions deny {info.uid})")
    )
    raise ApprovalBlockedError(
        f"session {info.uid}: tool call {gate.call_id} ({gate.call.get('tool', '')}) is "
        f"{step} (execution {gate.execution_id}); new input is refused until its receipt is "
        "written; nothing was written",
        hint=how,
        session=info.uid,
        tool_call_id=gate.call_id,
    )


class Approvals:
    """``Sessions.approve`` over an engine's :class:`~.core.EngineCore`."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def approve(
        self,
        uid: str,
        *,
        approved: bool,
        reason: str = "",
        actor: str = "",
        execution_id: str | None = None,
        tool_call_id: str | None = None,
        request_seq: int | None = None,
    ) -> Approval:
        """Commit a decision on ``uid``'s approval request (see :meth:`Sessions.approve`)."""
        from agentsessions.controller.approvals import Decision
        from agentsessions.controller.approvals import approve as commit

        check_uid(uid)
        self.core.store.get(uid)  # NotFoundError first
        decision = Decision(
            approved=bool(approved),
            reason=reason,
            actor=actor,
            execution_id=execution_id or None,
            tool_call_id=tool_call_id or None,
            request_seq=request_seq,
        )
        controller = self.core.controller(uid)
        lock = self.core.hold(uid, 0.0)
        try:
            decided = commit(controller, uid, decision)
            info = controller.info(uid)
        finally:
            lock.release()
        session = view(info, pending=pending_of(self.core.store, info))
        return Approval(session, decided.record, decided.ref, decided.existing)
