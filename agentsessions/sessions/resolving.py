"""The engine's side of unresolved tool calls: ``unresolved_call`` on the ``Session`` view
and ``Sessions.resolve``.

A call is unresolved when a resume found its outcome unknown and kept that finding in the
session's receipts (the protocol is in :mod:`agentsessions.controller.toolcalls`). Reading
it costs a read of the latest execution, and only while a turn is open (exec_state
EXEC_RUNNING or EXEC_AWAITING) in a store that keeps receipts. ``resolve`` appends the
person's answer as the call's receipt under the session's locks (engine lock, then the
store's writer lock, so no turn runs meanwhile), then resumes, which records TOOL_RESULT
from that receipt: the journal changes only through the ordinary resume path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.errors import AgentSessionsError, InvalidArgumentError, ToolNotUnresolvedError
from agentsessions.journal.stores.store import SessionInfo, Store
from agentsessions.v1.ids import check_uid

from .core import EngineCore
from .values import Frame, Resolution, SessionFrame

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller
    from agentsessions.journal.stores.capabilities import ToolReceipts
    from agentsessions.sessions.api import Sessions  # the Protocol: an annotation here
    from agentsessions.v1.results import UnresolvedCall

_OPEN = ("EXEC_RUNNING", "EXEC_AWAITING")


def unresolved_of(store: Store, info: SessionInfo) -> UnresolvedCall | None:
    """The session's unresolved tool call, or None (see the module docstring)."""
    if info.exec_state not in _OPEN or not info.exec_seq:
        return None
    from agentsessions.controller.toolcalls import receipts_of, unresolved_call

    receipts = receipts_of(store)
    if receipts is None:
        return None
    return unresolved_call(info.uid, list(store.read(info.uid, info.exec_seq)), receipts)


def check_not_unresolved(store: Store, info: SessionInfo) -> None:
    """Refuse new input while the session's open turn has an unresolved tool call
    (ToolOutcomeUnknownError, exit 19, naming the call and ``resolve``)."""
    call = unresolved_of(store, info)
    if call is None:
        return
    from agentsessions.controller.toolcalls import unknown_error

    raise unknown_error(
        info.uid,
        {"id": call.tool_call_id, "tool": call.tool, "idempotency_key": call.idempotency_key},
    )


def check_answer(result: Any, failed: str | None) -> None:
    """InvalidArgumentError unless exactly one of ``result`` (a JSON object) or ``failed``
    (a non-empty reason) is given."""
    if (result is None) == (failed is None):
        raise InvalidArgumentError(
            "resolve needs exactly one of a result (what the tool returned) or a failure "
            "reason; nothing was changed",
            param="resolve_answer",
        )
    if failed is not None and not str(failed).strip():
        raise InvalidArgumentError("a failure needs a reason; nothing was changed")
    if result is not None:
        if not isinstance(result, Mapping):
            raise InvalidArgumentError(
                f"a result must be a JSON object (the tool's output), not "
                f"{type(result).__name__}; nothing was changed"
            )
        try:
            json.dumps(dict(result), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(
                f"the result is not JSON: {exc}; nothing was changed"
            ) from None


class Resolver:
    """``Sessions.resolve`` over an engine's :class:`~.core.EngineCore`; ``sessions`` (the
    engine itself) views the session and resumes its turn, as any caller would."""

    def __init__(self, core: EngineCore, sessions: Sessions) -> None:
        self.core = core
        self.sessions = sessions

    def resolve(
        self,
        uid: str,
        *,
        call_id: str,
        result: Mapping[str, Any] | None = None,
        failed: str | None = None,
        actor: str = "",
        resume: bool = True,
    ) -> Resolution:
        """Keep a person's answer for ``uid``'s unresolved call, then resume (see
        :meth:`Sessions.resolve`)."""
        check_uid(uid)
        check_answer(result, failed)
        self.core.store.get(uid)  # NotFoundError first
        controller = self.core.controller(uid)
        lock = self.core.hold(uid, 0.0)
        try:
            receipt = _record(self.core.store, controller, uid, call_id, result, failed, actor)
        finally:
            lock.release()
        call, body = receipt
        session = self.sessions.get(uid)
        if not resume:
            return Resolution(session, call, body)
        last: Frame | None = None
        try:
            for frame in self.sessions.resume(uid):
                last = frame
        except AgentSessionsError as exc:
            exc.hint = exc.hint or f"agentsessions resume {uid}"
            exc.message = f"the resolution of call {call_id} was kept, but the resume failed: {exc}"
            exc.args = (exc.message,)
            raise
        turn = last.turn if isinstance(last, SessionFrame) else None
        return Resolution(self.sessions.get(uid), call, body, turn)


def _record(
    store: Store,
    controller: Controller,
    uid: str,
    call_id: str,
    result: Mapping[str, Any] | None,
    failed: str | None,
    actor: str,
) -> tuple[UnresolvedCall, dict[str, Any]]:
    """Append the resolution receipt; refuse a call that is not unresolved, changing
    nothing. Checked first from the store (a refusal opens no writer: no new fence), then
    again as the session's writer, which another process cannot hold meanwhile."""
    from agentsessions.controller.toolcalls import receipts_of, resolution_receipt

    receipts = receipts_of(store)
    call = unresolved_of(store, store.get(uid))
    if call is None or call.tool_call_id != call_id or receipts is None:
        raise _not_unresolved(uid, call_id, call)
    with controller.session_writer(uid, 0.0) as writer:
        info = writer.info()
        records = list(writer.read(max(info.exec_seq, 1))) if info.exec_seq else []
        call = _unresolved(uid, info, records, receipts)
        if call is None or call.tool_call_id != call_id:
            raise _not_unresolved(uid, call_id, call)
        at = [r for r in records if r.seq == call.call_seq]
        args = dict(at[0].event.get("tool", {}).get("args") or {}) if at else {}
        receipt = resolution_receipt(call, args, result=result, failed=failed, actor=actor)
        receipts.record_tool_receipt(uid, call.idempotency_key, receipt)
    return call, dict(receipt["result"])


def _unresolved(
    uid: str, info: SessionInfo, records: list[Any], receipts: ToolReceipts
) -> UnresolvedCall | None:
    from agentsessions.controller.toolcalls import unresolved_call

    if info.exec_state not in _OPEN:
        return None
    return unresolved_call(uid, records, receipts)


def _not_unresolved(uid: str, call_id: str, found: UnresolvedCall | None) -> ToolNotUnresolvedError:
    if found is None:
        why = "the session has no unresolved tool call"
    else:
        why = f"its unresolved call is {found.tool_call_id} ({found.tool})"
    return ToolNotUnresolvedError(
        f"session {uid}: tool call {call_id!r} is not unresolved ({why}); nothing was changed",
        hint=f"agentsessions get {uid}  (the 'unresolved' row names the call)",
        session=uid,
        call_id=call_id,
    )
