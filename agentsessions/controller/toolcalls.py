"""Mediated tool calls: the host runs a harness's CONTROLLER_MEDIATED call at most once.

The order of one live call (digest 5.2, spec decision 11):

1. Checks, before anything is recorded: the tier is CONTROLLER_MEDIATED
   (UnmediatedToolCallError otherwise), the call has an id, a tool name and an idempotency key
   (MissingIdempotencyKeyError), and the session's workload has the tool (UnknownToolError).
2. The cancel boundary: no executor starts after a recorded cancel.
3. TOOL_CALL is committed **synced** (it carries any earlier unsynced commit with it): the
   intent is durable before the executor can have any effect.
4. The executor runs. An exception it raises, or a ``ToolOutcome.error``, becomes an
   ``is_error`` result with code EXECUTOR_ERROR (the model sees it; the turn goes on).
5. The outcome is kept in the host's **receipt** for (session uid, idempotency key), durably.
6. TOOL_RESULT (id = the call's id) is committed unsynced: the next sync covers it, and a
   receipt already holds the outcome should a power loss take it.

Where the receipts live: beside the journal, in a per-session file the store writes with the
journal's durable primitives (``TOOLRECEIPTS``, one JSON line per outcome, for the file store;
a dict for the memory store), not in the journal. The journal is the conversation, hashed and
replayed: a receipt written before its TOOL_RESULT would be a second record of one fact inside
the chain, and a record outside the chain inside a segment would break the rule that a segment
is exactly its chain. The receipt is the executor's dedup state the host keeps for executors
that have none (digest 5.8: "its dedup/receipt state must be durable across host restarts"),
so it sits with the other host-kept per-session files (LOCK, FENCE, CANCEL) and goes with the
session. Its namespace is (session uid, key): a fork child has receipts of its own.

After a crash (resume of a turn whose last recorded effect is a TOOL_CALL without its
TOOL_RESULT), the call is re-driven once with the same key, through the receipts:

- a receipt for the key holds the outcome: TOOL_RESULT is recorded from it, the executor is
  not run again;
- no receipt, and the executor dedups by key itself (``idempotent = True``): it is called once
  more with the same key and returns the first outcome without a second effect;
- no receipt and an executor that cannot confirm: the outcome is **unknown** (the intent was
  durable before the executor started, so it may have run, and nothing says whether): resume
  raises ToolOutcomeUnknownError naming the call and writes nothing to the journal. The call
  is never repeated blindly. (No "started" marker is written before the executor: the
  TOOL_CALL sync just before it is that marker, and one more sync would only narrow a window
  that stays.)

**Unresolved for a person.** The resume that finds an unknown outcome keeps that finding in
the receipts file, durably: an ``"unknown": true`` line under the call's key. ``get`` (in any
process, without running or probing the executor, which may be a server that is down or a
side effect that cannot be asked) then reports the call as unresolved by reading that line
(:func:`unresolved_call`): whether an executor "can confirm" is only learnt by trying, and
the try is the resume's. A person then says what happened (``agentsessions resolve``): that
is a receipt like any other (:func:`resolution_receipt`), a later line of the key that wins,
and the next resume records TOOL_RESULT from it and the turn goes on. Nothing in the journal
changes until that TOOL_RESULT, so the chain is the conversation as it really happened.

A fork child never re-drives an open intent inherited in its copied prefix
(InheritedToolIntentError, FAILED_PRECONDITION; checked by the controller before the harness
runs). Replay serves TOOL_CALL and TOOL_RESULT from the record and never calls an executor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import agentsessions.telemetry as telemetry
from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    MissingIdempotencyKeyError,
    ToolOutcomeUnknownError,
    UnknownToolError,
    UnmediatedToolCallError,
)
from agentsessions.journal.format import canonical
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.capabilities import TOOL_RECEIPTS, ToolReceipts
from agentsessions.v1 import construct, model
from agentsessions.v1.results import UnresolvedCall
from agentsessions.valueclass import field, value

from .approvals import REQUIRES_APPROVAL, latest_run
from .spi import CONTROLLER_MEDIATED, BoundTool, ToolOutcome, ToolRequest, ToolResolver

EXECUTOR_ERROR = "EXECUTOR_ERROR"


def receipts_of(store: object) -> ToolReceipts | None:
    """``store`` as a keeper of tool receipts (the capability it declares), or None."""
    return TOOL_RECEIPTS.of(store)


def check_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """The call as its TOOL_CALL body (args a normalised Struct), or the refusal; raised
    before anything is recorded."""
    if not isinstance(call, Mapping):
        raise InvalidArgumentError("a tool call must be an agentsessions.v1 ToolCall object")
    mediation = str(call.get("mediation") or "MEDIATION_UNSPECIFIED")
    tool, call_id = str(call.get("tool") or ""), str(call.get("id") or "")
    if mediation not in (CONTROLLER_MEDIATED, REQUIRES_APPROVAL):
        raise UnmediatedToolCallError(
            f"tool call {call_id or '(no id)'} ({tool or 'no tool'}): the host runs only "
            f"{CONTROLLER_MEDIATED} and {REQUIRES_APPROVAL} calls, not {mediation}; "
            "nothing was recorded",
            hint="set mediation MEDIATION_CONTROLLER_MEDIATED, or run it in the harness and "
            "report its result",
        )
    if not call_id or not tool:
        raise InvalidArgumentError(
            "a mediated tool call needs an id and a tool name; nothing was recorded"
        )
    key = str(call.get("idempotency_key") or "")
    if not key:
        raise MissingIdempotencyKeyError(
            f"mediated tool call {call_id} ({tool}) has no idempotency key; nothing was recorded",
            hint="the harness sets idempotency_key, unique within the session",
        )
    args = call.get("args")
    event = construct.tool_call_event(
        call_id,
        tool,
        {} if args is None else args,
        mediation=mediation,
        idempotency_key=key,
    )
    return dict(event["tool"])


def same_call(recorded: Mapping[str, Any] | None, call: Mapping[str, Any]) -> bool:
    """The re-emitted call equals the recorded one by id, tool, mediation, key and args
    (JSON-equal args match regardless of key order or int-vs-float)."""
    if recorded is None:
        return False
    for name in ("id", "tool", "mediation", "idempotency_key"):
        if str(recorded.get(name) or "") != str(call.get(name) or ""):
            return False
    return _same_json(recorded.get("args") or {}, call.get("args") or {})


def _same_json(a: Any, b: Any) -> bool:
    try:
        return bool(canonical.canonical_json(a) == canonical.canonical_json(b))
    except Exception:
        return False


def result_body(call_id: str, outcome: ToolOutcome) -> dict[str, Any]:
    """The TOOL_RESULT body for an executor's outcome (a malformed outcome is an error)."""
    try:
        if outcome.error:
            event = construct.tool_result_event(
                call_id, is_error=True, error=outcome.error, code=EXECUTOR_ERROR
            )
        else:
            event = construct.tool_result_event(
                call_id,
                output=None if outcome.output is None else dict(outcome.output),
                content=[cast(model.Part, dict(p)) for p in outcome.content],
            )
    except InvalidArgumentError as exc:
        return error_body(call_id, f"the executor returned an invalid outcome: {exc}")
    return dict(event["result"])


def error_body(call_id: str, why: str) -> dict[str, Any]:
    """An is_error TOOL_RESULT body with code EXECUTOR_ERROR."""
    event = construct.tool_result_event(call_id, is_error=True, error=why, code=EXECUTOR_ERROR)
    return dict(event["result"])


@value
class ToolHost:
    """The host side of one session's mediated calls: its tools, receipts and counts."""

    session_uid: str
    resolve: ToolResolver | None
    receipts: ToolReceipts | None
    calls: list[str] = field(default_factory=list)  # executor calls made (evidence)

    def bind(self, tool: str) -> BoundTool:
        """The session's tool named ``tool``, or UnknownToolError."""
        if self.resolve is None:
            raise UnknownToolError(
                f"session {self.session_uid} has no tools; tool {tool!r} cannot run",
                hint="give the session a workload (its tools)",
                param="tools",
            )
        return self.resolve(self.session_uid, tool)

    def receipt(self, call: Mapping[str, Any]) -> dict[str, Any] | None:
        """The kept result for the call's key, re-addressed to its id; None when there is
        none; InvalidArgumentError if the key was used by a different call."""
        if self.receipts is None:
            return None
        kept = self.receipts.tool_receipt(self.session_uid, str(call["idempotency_key"]))
        if kept is None:
            return None
        self._same_key(call, kept)
        if "result" not in kept:
            return None  # a "started" mark only (an approved call cut while it ran)
        return {**dict(kept.get("result") or {}), "id": call["id"]}

    def started(self, call: Mapping[str, Any]) -> bool:
        """An approved call's executor was started under this key (a "started" mark, or
        its outcome, is kept)."""
        if self.receipts is None:
            return False
        key = str(call["idempotency_key"])
        return self.receipts.tool_receipt(self.session_uid, key) is not None

    def mark_started(self, call: Mapping[str, Any]) -> None:
        """Keep, durably, that the executor of ``call`` is about to run: an approved call
        has no TOOL_CALL written just before its executor (that sync is the mediated
        call's mark), so a resume cut while it ran must learn it from here."""
        if self.receipts is None:
            return
        mark = {"call_id": call["id"], "tool": call["tool"], "args": call.get("args") or {}}
        self.receipts.record_tool_receipt(
            self.session_uid, str(call["idempotency_key"]), {**mark, "started": True}
        )

    def _same_key(self, call: Mapping[str, Any], kept: Mapping[str, Any]) -> None:
        """InvalidArgumentError if the call's key was kept for a different call."""
        if kept.get("tool") != call["tool"] or not _same_json(
            kept.get("args") or {}, call.get("args") or {}
        ):
            raise InvalidArgumentError(
                f"tool call {call['id']}: idempotency key {call['idempotency_key']!r} was "
                f"already used in session {self.session_uid} by call {kept.get('call_id')} "
                f"({kept.get('tool')}) with other arguments; nothing was recorded",
                hint="a key names one effect: use a new key for a new call",
            )

    def execute(self, bound: BoundTool, call: Mapping[str, Any]) -> dict[str, Any]:
        """Run the executor once and keep its outcome's receipt; the TOOL_RESULT body."""
        request = ToolRequest(
            session_uid=self.session_uid,
            call_id=str(call["id"]),
            tool=str(call["tool"]),
            args=dict(call.get("args") or {}),
            idempotency_key=str(call["idempotency_key"]),
            config=dict(bound.config),
            store=bound.store,
        )
        self.calls.append(request.tool)
        with telemetry.current().tool_call(request.tool, request.call_id) as span:
            try:
                outcome = bound.executor.call(request)
                if not isinstance(outcome, ToolOutcome):
                    raise TypeError(f"returned {type(outcome).__name__}, not a ToolOutcome")
                body = result_body(request.call_id, outcome)
            except Exception as exc:  # the model sees the failure; the turn goes on
                body = error_body(request.call_id, _why(exc))
            span.set("agentsessions.tool.failed", bool(body.get("is_error")))
        if self.receipts is not None:
            receipt = {
                "call_id": request.call_id,
                "tool": request.tool,
                "args": call.get("args") or {},
                "result": body,
            }
            self.receipts.record_tool_receipt(self.session_uid, request.idempotency_key, receipt)
        return body

    def redrive(self, call: Mapping[str, Any]) -> dict[str, Any]:
        """The outcome of a call cut after its intent: from the receipt, or from an executor
        that dedups by key; else ToolOutcomeUnknownError (see the module docstring)."""
        kept = self.receipt(call)
        if kept is not None:
            return kept
        bound = self.bind(str(call["tool"]))
        if getattr(bound.executor, "idempotent", False) is True:
            return self.execute(bound, call)
        self.mark_unknown(call)
        raise unknown_error(self.session_uid, call)

    def mark_unknown(self, call: Mapping[str, Any]) -> None:
        """Keep, durably, that this call's outcome is unknown (it is unresolved until a
        person resolves it); once only: a repeated resume finds the mark and keeps it."""
        if self.receipts is None:
            return
        key = str(call["idempotency_key"])
        kept = self.receipts.tool_receipt(self.session_uid, key)
        if kept is not None and kept.get("unknown") is True:
            return
        mark = {"call_id": call["id"], "tool": call["tool"], "args": call.get("args") or {}}
        self.receipts.record_tool_receipt(self.session_uid, key, {**mark, "unknown": True})


def unknown_error(uid: str, call: Mapping[str, Any]) -> ToolOutcomeUnknownError:
    """The refusal of a call whose outcome is unknown: it names the call and ``resolve``."""
    return ToolOutcomeUnknownError(
        f"session {uid}: tool call {call['id']} ({call['tool']}, key "
        f"{call['idempotency_key']!r}) was cut after its intent was recorded; its executor "
        "may have run, keeps no receipt and cannot confirm it by key, so it is not run again; "
        "it is unresolved and nothing was written to the journal",
        hint=f"check the tool's effect by hand, then: agentsessions resolve {uid} --call "
        f"{call['id']} --result JSON  (or: --failed REASON)",
        session=uid,
        call_id=str(call["id"]),
        tool=str(call["tool"]),
        idempotency_key=str(call["idempotency_key"]),
    )


def unresolved_call(
    uid: str, records: list[Record], receipts: ToolReceipts | None
) -> UnresolvedCall | None:
    """The latest execution's last TOOL_CALL without its TOOL_RESULT whose key holds an
    "unknown" mark (see the module docstring), from ``records`` (read from where the latest
    execution began); None when there is none."""
    run = latest_run(records)
    if run is None or run.completed or receipts is None:
        return None
    answered = {
        str(e.get("result", {}).get("id", ""))
        for _, e in run.effects
        if e.get("kind") == "EVENT_TOOL_RESULT"
    }
    for seq, event in reversed(run.effects):
        if event.get("kind") != "EVENT_TOOL_CALL":
            continue
        call = event.get("tool", {})
        call_id, key = str(call.get("id", "")), str(call.get("idempotency_key", ""))
        if call_id in answered or not key:
            return None
        kept = receipts.tool_receipt(uid, key)
        if kept is None or kept.get("unknown") is not True or "result" in kept:
            return None
        return UnresolvedCall(run.id, call_id, str(call.get("tool", "")), key, seq)
    return None


def resolution_receipt(
    call: UnresolvedCall,
    args: Mapping[str, Any],
    *,
    result: Mapping[str, Any] | None,
    failed: str | None,
    actor: str,
) -> dict[str, Any]:
    """The receipt a person's resolution keeps for ``call``: the tool's output, or an
    error result (code EXECUTOR_ERROR) whose text says who resolved it."""
    if failed is not None:
        body = error_body(call.tool_call_id, f"{failed} (resolved by {actor or 'a person'})")
    else:
        event = construct.tool_result_event(call.tool_call_id, output=dict(result or {}))
        body = dict(event["result"])
    return {
        "call_id": call.tool_call_id,
        "tool": call.tool,
        "args": dict(args),
        "result": body,
        "resolved_by": actor,
    }


def _why(exc: Exception) -> str:
    """An executor failure as the model reads it."""
    return str(exc) if isinstance(exc, AgentSessionsError) else f"{type(exc).__name__}: {exc}"
