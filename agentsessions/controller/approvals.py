"""Human approval of tool calls: the gate, the decision and the receipt (digest 5.6).

The protocol of one REQUIRES_APPROVAL call, and what is durable at each step:

1. **Gate** (the live sink): the call is checked as a mediated one (id, tool, idempotency
   key; the harness must be STATELESS_REPLAY, since a parked turn is continued by replaying
   it), then TOOL_CALL and the host-owned APPROVAL_REQUEST{tool_call_id} are committed as
   **one synced commit**, and the run parks (:class:`ApprovalParkedError`, no END, no
   ERROR). One commit, not two as the reference appends them: a cut between the intent and
   the request cannot happen in a journal this host writes. A journal that has one anyway
   (written elsewhere) is handled: resume appends the missing request, then parks.
2. **Decision** (:func:`approve`): APPROVAL_RESULT{tool_call_id, approved, reason,
   request_seq} with ``Event.actor`` the deciding identity and ``ts`` now, synced. It never
   runs the tool. An identical retry returns the existing record; a different one is refused.
3. **Receipt** (resume, the sink again): the harness rebuilds the same call; the sink serves
   TOOL_CALL, APPROVAL_REQUEST and APPROVAL_RESULT from the record and writes the receipt
   TOOL_RESULT (both seqs set). A denial is an is_error result with code APPROVAL_DENIED and
   the executor never runs. An approval runs the executor at most once: a durable "started"
   mark is kept in the host's tool receipts (:mod:`.toolcalls`) before it runs, and its
   outcome after, so a resume cut in between answers from the outcome, re-drives an
   executor that dedups by key, or refuses (ToolOutcomeUnknownError), never repeating an
   effect blindly.

Journal validation (:func:`gates`): within an execution, after a gated TOOL_CALL the only
events allowed until its receipt are its APPROVAL_REQUEST (same tool call id), its
APPROVAL_RESULT (same id and request seq) and the receipt TOOL_RESULT (same id, both seqs,
an error exactly when denied). ERROR events are audit (a failed resume) and are allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from agentsessions.errors import (
    ApprovalDecidedError,
    ApprovalInheritedError,
    ApprovalNotPendingError,
    InvalidArgumentError,
    InvalidExecutionLogError,
)
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import SessionInfo
from agentsessions.v1 import construct
from agentsessions.v1.results import ApprovalRef
from agentsessions.valueclass import value

from . import executions
from .port import ControllerPort

REQUIRES_APPROVAL = "MEDIATION_REQUIRES_APPROVAL"
APPROVAL_DENIED = "APPROVAL_DENIED"
DENIED_MESSAGE = "Tool execution denied by approval decision."

Event = dict[str, Any]


@value
class Gate:
    """One approval-gated call of an execution and how far its protocol got."""

    execution_id: str
    call_seq: int
    call: dict[str, Any]
    request_seq: int = 0
    decision_seq: int = 0
    decision: Event | None = None  # the APPROVAL_RESULT event (with its actor)
    receipt_seq: int = 0

    @property
    def call_id(self) -> str:
        return str(self.call.get("id", ""))

    @property
    def approved(self) -> bool:
        return bool((self.decision or {}).get("approval_result", {}).get("approved", False))

    @property
    def pending(self) -> bool:
        """Requested, not yet decided."""
        return bool(self.request_seq) and not self.decision_seq

    @property
    def ref(self) -> ApprovalRef:
        return ApprovalRef(self.execution_id, self.call_id, self.request_seq)


def is_gated(call: Mapping[str, Any] | None) -> bool:
    """The TOOL_CALL body is an approval-gated call."""
    return bool(call) and str((call or {}).get("mediation", "")) == REQUIRES_APPROVAL


def gates(run: executions.Execution) -> list[Gate]:
    """The gated calls of ``run`` in order, validated (see the module docstring);
    InvalidExecutionLogError when the journal continues past an unresolved one."""
    found: list[Gate] = []
    open_: Gate | None = None
    for seq, event in run.effects:
        kind = str(event.get("kind", ""))
        if open_ is not None:
            if not _advance(open_, seq, kind, event):
                raise _invalid(run, open_, seq, kind)
            if open_.receipt_seq:
                open_ = None
            continue
        if kind == "EVENT_TOOL_CALL" and is_gated(event.get("tool")):
            open_ = Gate(run.id, seq, dict(event.get("tool", {})))
            found.append(open_)
        elif kind in ("EVENT_APPROVAL_REQUEST", "EVENT_APPROVAL_RESULT"):
            raise InvalidExecutionLogError(
                f"execution {run.id}: seq {seq} is an {kind} without its gated TOOL_CALL",
                execution_id=run.id,
                seq=seq,
            )
    if open_ is not None and run.end is not None:
        raise _invalid(run, open_, int(run.last_seq), "EVENT_END")
    return found


def _advance(gate: Gate, seq: int, kind: str, event: Event) -> bool:
    """Take the next step of ``gate``'s protocol from the event at ``seq``; False if it is
    not the step allowed next."""
    if kind == "EVENT_APPROVAL_REQUEST" and not gate.request_seq:
        if str(event.get("approval", {}).get("tool_call_id", "")) != gate.call_id:
            return False
        gate.request_seq = seq
        return True
    if kind == "EVENT_APPROVAL_RESULT" and gate.request_seq and not gate.decision_seq:
        body = event.get("approval_result", {})
        if str(body.get("tool_call_id", "")) != gate.call_id:
            return False
        if int(body.get("request_seq", 0) or 0) != gate.request_seq:
            return False
        gate.decision_seq, gate.decision = seq, event
        return True
    if kind == "EVENT_TOOL_RESULT" and gate.decision_seq:
        result = event.get("result", {})
        denied = str(result.get("code", "")) == APPROVAL_DENIED
        if (
            str(result.get("id", "")) != gate.call_id
            or int(result.get("approval_request_seq", 0) or 0) != gate.request_seq
            or int(result.get("approval_decision_seq", 0) or 0) != gate.decision_seq
            or denied == gate.approved
        ):
            return False
        gate.receipt_seq = seq
        return True
    return False


def _invalid(
    run: executions.Execution, gate: Gate, seq: int, kind: str
) -> InvalidExecutionLogError:
    return InvalidExecutionLogError(
        f"execution {run.id} continued past an unresolved approval call {gate.call_id} "
        f"(TOOL_CALL at seq {gate.call_seq}): seq {seq} is {kind}",
        execution_id=run.id,
        seq=seq,
    )


def latest_run(records: list[Record]) -> executions.Execution | None:
    """The last execution of ``records`` (read from where the latest one began)."""
    runs = executions.group((r.seq, r.event) for r in records)
    modern = [r for r in runs if not r.legacy]
    return modern[-1] if modern else None


def pending_approval(info: SessionInfo, records: list[Record]) -> ApprovalRef | None:
    """The latest execution's last gated call that was requested and not decided, read from
    ``records`` (the journal from ``info.exec_seq``); None when there is none."""
    if info.exec_state != "EXEC_AWAITING":
        return None  # the projection: an APPROVAL_REQUEST is the last event, or none waits
    run = latest_run(records)
    if run is None:
        return None
    waiting = [g for g in gates(run) if g.pending]
    return waiting[-1].ref if waiting else None


def owned_open_gate(info: SessionInfo, records: list[Record]) -> Gate | None:
    """The session's own gated call that has no receipt yet (one copied from a fork's parent
    does not count), or None."""
    if info.exec_state not in ("EXEC_RUNNING", "EXEC_AWAITING"):
        return None
    run = latest_run(records)
    if run is None or run.completed:
        return None
    for gate in reversed(gates(run)):
        if not gate.receipt_seq and not _inherited(info, gate.call_seq):
            return gate
    return None


def _inherited(info: SessionInfo, seq: int) -> bool:
    return bool(info.meta.parent_uid) and seq <= info.meta.fork_seq


def denial_body(gate: Gate) -> dict[str, Any]:
    """The receipt TOOL_RESULT of a denied call: an error the model reads."""
    event = construct.tool_result_event(
        gate.call_id,
        is_error=True,
        error=DENIED_MESSAGE,
        content=[{"text": {"text": DENIED_MESSAGE}}],
        code=APPROVAL_DENIED,
        approval_request_seq=gate.request_seq,
        approval_decision_seq=gate.decision_seq,
    )
    return dict(event["result"])


def with_seqs(body: Mapping[str, Any], gate: Gate) -> dict[str, Any]:
    """An executor's TOOL_RESULT body as the receipt of ``gate`` (both seqs set)."""
    out = {**dict(body), "id": gate.call_id}
    out["approval_request_seq"] = str(gate.request_seq)  # int64 is a string in proto3 JSON
    out["approval_decision_seq"] = str(gate.decision_seq)
    return out


# -- the decision ---------------------------------------------------------------------------
@value(frozen=True)
class Decision:
    """What ``approve``/``deny`` asks: the verdict, why, who, and (optionally) which request."""

    approved: bool
    reason: str = ""
    actor: str = ""
    execution_id: str | None = None
    tool_call_id: str | None = None
    request_seq: int | None = None

    @property
    def identity(self) -> dict[str, str] | None:
        return {"principal": self.actor} if self.actor else None


@value(frozen=True)
class Decided:
    """The APPROVAL_RESULT record of a decision, and whether it was already there."""

    record: Record
    ref: ApprovalRef
    existing: bool


def approve(controller: ControllerPort, uid: str, decision: Decision) -> Decided:
    """Commit ``decision`` for the session's open approval request (see the module
    docstring); the request is the pending one unless the decision names it."""
    if decision.request_seq is not None and decision.request_seq <= 0:
        raise InvalidArgumentError(f"request seq must be > 0, got {decision.request_seq}")
    # checked first from the store: a refused or repeated decision opens no writer (no
    # new fence, no lock taken), so it changes nothing at all
    store = controller.store
    info = store.get(uid)
    records = list(store.read(uid, info.exec_seq)) if info.exec_seq else []
    gate = _find(uid, info, latest_run(records), decision)
    if gate.decision is not None:
        return _existing(uid, gate, decision, records)
    with controller.session_writer(uid, 0.0) as writer:
        # again as the writer: another process may have decided or moved on since
        info = writer.info()
        records = list(writer.read(max(info.exec_seq, 1))) if info.exec_seq else []
        gate = _find(uid, info, latest_run(records), decision)
        if gate.decision is not None:
            return _existing(uid, gate, decision, records)
        event = construct.approval_result_event(
            gate.call_id,
            decision.approved,
            decision.reason,
            gate.request_seq,
            execution_id=gate.execution_id,
            actor=decision.identity,
            ts=datetime.now(UTC),
        )
        result = writer.append([event], expected_last_seq=writer.head[0])
    if controller.on_record is not None:
        for record in result.records:
            controller.on_record(record)
    return Decided(result.records[-1], gate.ref, existing=False)


def _find(
    uid: str, info: SessionInfo, run: executions.Execution | None, decision: Decision
) -> Gate:
    """The gate ``decision`` names in the latest execution, or the refusal."""
    if run is None:
        raise ApprovalNotPendingError(
            f"session {uid} has no approval request (no turn yet)", session=uid
        )
    if decision.execution_id and decision.execution_id != run.id:
        raise ApprovalNotPendingError(
            f"session {uid}: execution {decision.execution_id} has no open approval request "
            f"(the latest execution is {run.id})",
            hint=f"agentsessions get {uid}  (pending_approval names the open request)",
            session=uid,
        )
    found = [g for g in gates(run) if g.request_seq]
    if decision.request_seq is not None:
        found = [g for g in found if g.request_seq == decision.request_seq]
    if decision.tool_call_id:
        found = [g for g in found if g.call_id == decision.tool_call_id]
    if decision.request_seq is None and not decision.tool_call_id:
        # the pending one; else the last one decided, so a plain retry finds its decision
        found = [g for g in found if g.pending] or found[-1:]
    if not found:
        asked = _asked(decision)
        raise ApprovalNotPendingError(
            f"session {uid} has no approval request {asked}in execution {run.id} "
            f"(exec_state {info.exec_state}); nothing was written",
            hint=f"agentsessions get {uid}  (pending_approval names the open request)",
            session=uid,
        )
    gate = found[-1]
    if _inherited(info, gate.request_seq):
        raise ApprovalInheritedError(
            f"session {uid}: approval request at seq {gate.request_seq} (call {gate.call_id}) "
            f"was inherited from {info.meta.parent_uid} through a fork at seq "
            f"{info.meta.fork_seq}; a fork child cannot decide it; nothing was written",
            hint=f"decide it in the parent: agentsessions approve {info.meta.parent_uid}",
            session=uid,
        )
    return gate


def _asked(decision: Decision) -> str:
    parts = []
    if decision.tool_call_id:
        parts.append(f"for call {decision.tool_call_id}")
    if decision.request_seq is not None:
        parts.append(f"at seq {decision.request_seq}")
    return (" ".join(parts) + " ") if parts else "pending "


def _existing(uid: str, gate: Gate, decision: Decision, records: list[Record]) -> Decided:
    """An identical retry gets the recorded decision; a different one is refused."""
    event = gate.decision or {}
    body = event.get("approval_result", {})
    actor = dict(event.get("actor", {}) or {})
    same = (
        bool(body.get("approved", False)) == decision.approved
        and str(body.get("reason", "")) == decision.reason
        and actor == (construct.identity(**decision.identity) if decision.identity else {})
    )
    verdict = "approved" if body.get("approved") else "denied"
    if not same:
        raise ApprovalDecidedError(
            f"session {uid}: call {gate.call_id} (request seq {gate.request_seq}) was already "
            f"{verdict} at seq {gate.decision_seq} by {actor.get('principal') or '(no actor)'}"
            f" (reason {str(body.get('reason', ''))!r}); a different decision is refused",
            session=uid,
            decision_seq=gate.decision_seq,
        )
    record = next(r for r in records if r.seq == gate.decision_seq)
    return Decided(record, gate.ref, existing=True)
