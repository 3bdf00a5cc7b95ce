"""Cancel: close a session's open execution with LIFECYCLE_CANCEL and END CANCELED.

Invariants: cancel appends only as the session's single writer (it takes the lock like
any turn), and appends both events in one commit group, so a reader sees either the open
execution or the canceled one, never half. Cancel of a session whose latest execution is
already CANCELED appends nothing and returns it (idempotent); cancel of a session with no
open execution (none yet, or the latest one COMPLETED or FAILED with its END) is
InvalidExecutionLogError (exit 17, FAILED_PRECONDITION): there is nothing to cancel.

A turn still running in a live process holds the lock, so the canceller cannot append:
it writes a durable cancel request beside the journal naming the execution
(``store.request_cancel``; a ``CANCEL`` file for the file store) and waits, bounded, for
END CANCELED. The running turn's live sink asks :func:`check_request` at every effect
boundary: before each model call, output, tool result and usage (one ``stat`` each), and
once more before END; when its execution is named it raises TurnCanceledError, and the
controller appends the same two events (:func:`cancel_events`) as the writer, then clears
the request. So no model or tool call starts after the cancel is recorded.

A model call in flight when the cancel lands is abandoned at its next streamed delta
(:func:`checked_stream`, at most one ``stat`` per :data:`STREAM_CHECK_SECONDS`): the
provider's stream is closed, its MODEL_CALL is journaled without an OUTPUT (the call was
made: audit), then LIFECYCLE CANCEL + END CANCELED. A call that does not stream (no delta
callback) runs to its end, its answer is journaled, and the turn stops at the next boundary.

A cancel racing the turn's end has one of two outcomes, both consistent: the turn sees the
request before END (END CANCELED; ``cancel`` exits 0), or it committed END COMPLETED first
(``cancel`` exits 17 "ended before the cancel" and removes its request). A request naming
an execution that is not running (it ended meanwhile) is removed and ignored. The checks
that decide whether an interrupted turn may be closed here are made again under the lock,
so a turn completed by another process meanwhile (``resume``) never gets a second END.
Resume never resumes a CANCELED execution: it has its END. Replay re-drives it like any
other with its recorded effects, up to where the record ends, and stops it there as the
live turn was stopped (a MODEL_CALL recorded without its answer is that point, never a call
to make; see :mod:`.replay`). The cases, one per boundary, are
``tests/e2e/test_cancel_boundaries.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentsessions.controller.port import ControllerPort
from agentsessions.errors import InvalidExecutionLogError, TurnCanceledError, UnavailableError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.capabilities import CANCEL_REQUESTS, CancelRequests
from agentsessions.journal.stores.store import SessionInfo, Store
from agentsessions.v1 import construct

DEFAULT_DETAIL = "canceled by request"
REASONS = ("USER", "TIMEOUT", "INTERNAL")
"""The reasons a cancel may give (CancelRequest.reason, spec digest 1.2); "" says none."""
DEFAULT_WAIT_SECONDS = 10.0
"""How long a cancel of a live turn waits for its END CANCELED by default."""
STREAM_CHECK_SECONDS = 0.05
"""How often a streaming model call looks for a cancel request (a ``stat`` per look)."""


def requests_of(store: object) -> CancelRequests | None:
    """``store`` as a keeper of cancel requests (the capability it declares), or None.

    ``reason`` (USER, TIMEOUT, INTERNAL) is kept with the request for the turn to record;
    it is passed only when given."""
    return CANCEL_REQUESTS.of(store)


def cancel_detail(reason: str = "") -> str:
    """The LIFECYCLE_CANCEL detail of a cancel that gives ``reason`` ("" gives none)."""
    return f"{DEFAULT_DETAIL} (reason {reason})" if reason else DEFAULT_DETAIL


def requested_detail(store: object, uid: str) -> str:
    """The detail for the pending cancel request of ``uid``: its reason, if it gives one."""
    requests = requests_of(store)
    return cancel_detail(requests.cancel_reason(uid) if requests is not None else "")


def check_execution(uid: str, open_id: str, named: str) -> None:
    """Refuse a cancel that names another execution than ``uid``'s latest (nothing written)."""
    if named and named != open_id:
        raise InvalidExecutionLogError(
            f"session {uid}: the cancel names execution {named}, but its latest execution "
            f"is {open_id or '(none)'}; nothing was canceled",
            hint=f"agentsessions get {uid}",
            session=uid,
        )


def cancel_events(execution_id: str, detail: str = DEFAULT_DETAIL) -> list[Mapping[str, Any]]:
    """The one commit that ends ``execution_id`` as canceled."""
    return [
        construct.lifecycle_event("LIFECYCLE_CANCEL", detail=detail, execution_id=execution_id),
        construct.end_event("CANCELED", execution_id=execution_id),
    ]


def check_request(store: object, uid: str, execution_id: str) -> None:
    """Raise TurnCanceledError if a cancel request names ``execution_id``; a request that
    names another execution (one that ended) is stale and removed."""
    requests = requests_of(store)
    if requests is not None:
        request_check(requests, uid, execution_id)()


def request_check(requests: CancelRequests, uid: str, execution_id: str) -> Callable[[], None]:
    """:func:`check_request` for one running execution, its store's requests found once: a
    turn asks before every effect, so each ask is the store's one ``stat`` and no more."""

    def check() -> None:
        named = requests.cancel_requested(uid)
        if named is None:
            return
        if named != execution_id:
            requests.clear_cancel(uid)
            return
        raise TurnCanceledError(f"execution {execution_id} was canceled", session=uid)

    return check


def checked_stream(
    on_delta: Callable[[str], None], check: Callable[[], None]
) -> Callable[[str], None]:
    """``on_delta`` that first runs ``check`` (which raises TurnCanceledError on a cancel),
    at most once per :data:`STREAM_CHECK_SECONDS`: a slow call is abandoned within a delta of
    the request, and a fast stream of many small deltas pays for a few ``stat`` calls only."""
    last = time.monotonic()

    def deliver(text: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= STREAM_CHECK_SECONDS:
            last = now
            check()
        on_delta(text)

    return deliver


def request_and_wait(
    store: Store, uid: str, wait_seconds: float, *, reason: str = "", execution_id: str = ""
) -> SessionInfo:
    """Ask the live turn of ``uid`` to stop, then wait up to ``wait_seconds`` for its END.

    The request stays if the wait runs out: the turn stops at its next effect boundary.
    ``reason`` goes with the request (the turn records it); an ``execution_id`` that is
    not the running one is refused, nothing requested.
    """
    info = store.get(uid)
    requests = requests_of(store)
    check_execution(uid, info.exec_id, execution_id)
    if requests is None or not info.exec_id or info.exec_state not in _OPEN:
        raise InvalidExecutionLogError(
            f"session {uid} has no running execution to cancel (exec={info.exec_state})",
            session=uid,
        )
    exec_id = info.exec_id
    if reason:
        requests.request_cancel(uid, exec_id, reason)
    else:
        requests.request_cancel(uid, exec_id)
    deadline = time.monotonic() + max(wait_seconds, 0.0)
    delay = 0.01
    while True:
        info = store.get(uid)
        if info.exec_id != exec_id or info.exec_state not in _OPEN:
            break
        if time.monotonic() >= deadline:
            raise UnavailableError(
                f"session {uid}: execution {exec_id} did not stop within {wait_seconds:g}s; "
                "the cancel request stays and the turn stops at its next effect boundary",
                hint="cancel it again with a longer wait",
                param="cancel_wait",
                session=uid,
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
    if info.exec_id == exec_id and info.exec_state == "EXEC_CANCELED":
        return info
    if requests.cancel_requested(uid) == exec_id:
        requests.clear_cancel(uid)
    raise InvalidExecutionLogError(
        f"session {uid}: execution {exec_id} ended ({info.exec_state}) before the cancel",
        session=uid,
    )


_OPEN = ("EXEC_RUNNING", "EXEC_AWAITING")


def _end_state(records: Iterable[Record], exec_id: str) -> str | None:
    """The END state of execution ``exec_id`` in ``records`` (read from where it began), or
    None while it is open."""
    for record in records:
        event = record.event
        if event.get("kind") == "EVENT_END" and event.get("execution_id", "") == exec_id:
            return str(event.get("end", {}).get("state", "COMPLETED"))
    return None


def _cancelable(uid: str, info: SessionInfo, records: Iterable[Record]) -> bool:
    """True if ``info``'s latest execution is open, False if it is already CANCELED;
    InvalidExecutionLogError (exit 17) when there is none or it ended otherwise."""
    if not info.exec_id:
        raise InvalidExecutionLogError(f"session {uid} has no execution to cancel", session=uid)
    state = _end_state(records, info.exec_id)
    if state == "CANCELED":
        return False
    if state is not None:
        raise InvalidExecutionLogError(
            f"session {uid} has no running execution to cancel (the latest one ended {state})",
            session=uid,
        )
    return True


def cancel(
    controller: ControllerPort, uid: str, detail: str = DEFAULT_DETAIL, execution_id: str = ""
) -> SessionInfo:
    """Close ``uid``'s open execution as CANCELED (see the module docstring); one that is
    not ``execution_id`` (when given) is refused, nothing written."""
    info = controller.store.get(uid)
    check_execution(uid, info.exec_id, execution_id)
    # answered without the lock when it can be: an idle or already canceled session
    if not _cancelable(uid, info, controller.store.read(uid, max(info.exec_seq, 1))):
        return info
    with controller.session_writer(uid, 0.0) as writer:
        # again under the lock: another process may have ended the turn since (resume)
        held = writer.info()
        check_execution(uid, held.exec_id, execution_id)
        if not _cancelable(uid, held, writer.read(max(held.exec_seq, 1))):
            return held
        events = cancel_events(held.exec_id, detail)
        result = writer.append(events, expected_last_seq=writer.head[0])
    requests = requests_of(controller.store)
    if requests is not None:  # a request left by a cancel whose live turn died first
        requests.clear_cancel(uid)
    if controller.on_record is not None:
        for record in result.records:
            controller.on_record(record)
    return controller.store.get(uid)
