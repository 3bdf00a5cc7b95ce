"""``ExecRequest.deadline_unix``: a turn still running at its deadline is canceled.

The reference declares the field (Unix seconds; 0 = none: proto3 cannot tell 0 from unset)
and the digest gives it no more semantics, so ours are: a deadline already past when Exec
is asked (a negative one too) is DEADLINE_EXCEEDED before anything is read or written;
otherwise a timer fires at the deadline and cancels the turn's execution through the
engine's own cancel path (``Sessions.cancel(reason="TIMEOUT", execution_id=...)``: a
durable request the running turn honours at its next effect boundary, LIFECYCLE_CANCEL
with the reason, then END CANCELED). The stream then carries the turn's records and its
last session frame as usual and ends DEADLINE_EXCEEDED. A turn that ends (completes,
parks, fails) before the deadline, or that commits its END before the request lands, is
answered as without a deadline. A deadline past year 9999 is INVALID_ARGUMENT on the wire
(.wirecheck): no timer could wait that long.

The cancel runs on the timer's own thread, never on the stream's: the engine's cancel
waits for the turn, and the turn's frames are what the stream is draining.
"""

from __future__ import annotations

import logging
import threading
import time

from agentsessions.errors import AgentSessionsError, DeadlineExceededError
from agentsessions.sessions.api import Sessions

LOG = logging.getLogger("agentsessions.server")
REASON = "TIMEOUT"


def check_admission(deadline_unix: int, now: float | None = None) -> float | None:
    """Seconds left before ``deadline_unix`` (None: no deadline, 0 being proto3's unset
    value); DeadlineExceededError when it has already passed, a negative one included
    (nothing is run or written). Its upper bound is the wire checks' (.wirecheck)."""
    if deadline_unix == 0:
        return None
    left = deadline_unix - (time.time() if now is None else now)
    if left <= 0:
        raise DeadlineExceededError(
            f"the request's deadline (unix {deadline_unix}) passed before the turn started; "
            "nothing was run",
            hint="send a deadline in the future (Unix seconds), or 0 for none",
        )
    return left


class Deadline:
    """Cancels one turn's execution when ``seconds`` pass (see the module docstring).

    The stream tells it the session and execution as they appear (:meth:`saw`); the timer
    cancels as soon as it has fired and knows the execution. :meth:`close` stops it."""

    def __init__(self, engine: Sessions, seconds: float) -> None:
        self.engine = engine
        self.uid = ""
        self.execution_id = ""
        self.fired = False
        self._asked = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def saw(self, uid: str, execution_id: str) -> None:
        """The stream saw ``uid`` and (once the turn started) its ``execution_id``."""
        with self._lock:
            self.uid = uid or self.uid
            self.execution_id = execution_id or self.execution_id
            due = self.fired and self._take()
        if due:
            self._cancel_async()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            due = self._take()
        if due:
            self._cancel()

    def _take(self) -> bool:
        """True once: the cancel is due and not asked yet (called under the lock)."""
        if self._asked or not (self.uid and self.execution_id):
            return False
        self._asked = True
        return True

    def _cancel_async(self) -> None:
        threading.Thread(target=self._cancel, daemon=True).start()

    def _cancel(self) -> None:
        # wait=0: the request is durable at once; the turn honours it at its next boundary
        try:
            self.engine.cancel(self.uid, wait=0.0, reason=REASON, execution_id=self.execution_id)
        except AgentSessionsError as exc:  # the turn ended first, or is still stopping
            LOG.debug("deadline cancel of %s: %s", self.uid, exc)

    def close(self) -> None:
        """Stop the timer (the stream ended)."""
        self._timer.cancel()

    def exceeded(self, canceled: bool) -> DeadlineExceededError | None:
        """The error to end the stream with: the deadline fired and the turn was canceled."""
        if not (self.fired and canceled):
            return None
        return DeadlineExceededError(
            f"session {self.uid}: the request's deadline passed while execution "
            f"{self.execution_id} ran; it was canceled (END CANCELED, reason {REASON})",
            hint=f"agentsessions log {self.uid}",
            session=self.uid,
            execution_id=self.execution_id,
        )
