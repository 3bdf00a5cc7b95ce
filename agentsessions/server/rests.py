"""The rest of a turn that ExecQuick began and ExecRest streams.

ExecQuick answers a turn that ends within the server's quick window in one unary reply.
A turn still going at the window's end is paused (:func:`~.updates.windowed`): its updates
generator is held here under a random id (128 bits, :func:`secrets.token_urlsafe`) and the
caller that got that id in its reply takes it back with ExecRest, which streams the rest.

Invariants:

- a rest is taken at most once, and only by the principal whose call parked it (the id is
  NOT_FOUND to anyone else, as an unknown id is: no oracle of other callers' turns);
- the turn never depends on its rest being read: it runs on the engine's thread and commits
  its END whatever becomes of the rest (as when a streaming caller goes away);
- a paused turn stays counted against its caller's admission bounds: ExecQuick keeps its
  call's slot (:func:`~.admission.keep_slot`) and the rest gives it back once its ExecRest
  has streamed it or it is dropped, so a caller that never reads its rests cannot run more
  turns at once than ``--max-turns-per-token`` allows;
- a rest not taken within :data:`REST_TTL` seconds is dropped: its generator is closed on a
  thread of its own (closing a turn's frames waits for the turn's end), found on the next
  park or take, or by the sweeper when it holds an admission slot (a caller refused for want
  of that slot never parks or takes again), so nothing is held for a caller that never
  comes back beyond that;
- one sweeper thread a :class:`Rests`, started with its first rest that holds a slot and
  sleeping until the earliest such rest is due: not a timer thread a parked turn (under
  load, when turns outlast the quick window, each park started a thread that lived
  :data:`REST_TTL` seconds: measured with 32 clients, the daemon's threads grew by about
  a hundred a round of 480 turns, each start a hand-over between threads);
- the deadline timer of a request that set one goes with its rest and is closed with it.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from agentsessions.errors import NotFoundError
from agentsessions.server import deadline
from agentsessions.server.updates import Seen
from agentsessions.wire.gen import session_pb2

REST_TTL = 60.0
"""Seconds a paused turn's rest waits for its ExecRest (a client of ours calls at once)."""

Updates = Generator[session_pb2.ExecUpdate | None, None, None]


@dataclass
class Rest:
    """A paused turn's updates, the state they carry, and whose they are."""

    owner: Any  # the principal of the call that parked it (None without auth)
    updates: Updates
    seen: Seen
    timer: deadline.Deadline | None
    expires: float
    notes: dict[str, str] = field(default_factory=dict)  # for the log line of its ExecRest
    slot: Callable[[], None] | None = None
    """Gives back the admission slot its ExecQuick kept (None: a server without admission)."""

    def close(self) -> None:
        """Drop the rest: its frames are closed (waiting for the turn's end), its timer
        too, then its slot is given back."""
        try:
            self.updates.close()
        finally:
            try:
                if self.timer is not None:
                    self.timer.close()
            finally:
                self.release()

    def release(self) -> None:
        """Give the kept admission slot back (idempotent)."""
        if self.slot is not None:
            self.slot()


class Rests:
    """Paused turns by id. Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._held: dict[str, Rest] = {}
        self._due = threading.Condition(self._lock)  # the sweeper waits on it
        self._sweeper: threading.Thread | None = None
        self._closed = False
        self._idle = False  # the sweeper sleeps with nothing due (only a park wakes it)

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    def park(
        self,
        owner: Any,
        updates: Updates,
        seen: Seen,
        timer: deadline.Deadline | None,
        slot: Callable[[], None] | None = None,
    ) -> str:
        """Hold a paused turn's rest for ``owner`` (with the admission ``slot`` its call
        kept, given back when the rest is streamed or dropped); its id."""
        key = secrets.token_urlsafe(16)
        now = self._clock()
        start = False
        with self._lock:
            self._held[key] = Rest(owner, updates, seen, timer, now + REST_TTL, slot=slot)
            stale = self._expired(now)
            if slot is not None:  # its slot must come back even if nobody calls again
                start = self._sweeper is None
                if start:
                    self._sweeper = threading.Thread(
                        target=self._sweep_forever, name="agentsessions rests sweep", daemon=True
                    )
                if self._idle:  # a sweeper with nothing due sleeps until this
                    self._idle = False
                    self._due.notify()
        _drop(stale)
        if start:
            assert self._sweeper is not None
            self._sweeper.start()
        return key

    def sweep(self) -> None:
        """Drop the rests past their time now (a held slot is given back with each)."""
        with self._lock:
            stale = self._expired(self._clock())
        _drop(stale)

    def _sweep_forever(self) -> None:
        """The sweeper: drop each rest that holds a slot once it is due (then any other
        rest past its time with it), until :meth:`close`."""
        with self._lock:
            while not self._closed:
                now = self._clock()
                due = min((r.expires for r in self._held.values() if r.slot), default=None)
                if due is None or due > now:
                    # every rest parked later is due later (one TTL): none can come first
                    self._idle = due is None
                    self._due.wait(None if due is None else due - now)
                    continue
                stale = self._expired(now)
                self._lock.release()  # dropping starts a thread: not under the lock
                try:
                    _drop(stale)
                finally:
                    self._lock.acquire()

    def note(self, key: str, **fields: str) -> None:
        """Note what rest ``key``'s turn acts on (session, project) for its ExecRest's log
        line (:func:`~agentsessions.wire.intercept.note`): names and ids only."""
        with self._lock:
            rest = self._held.get(key)
            if rest is not None:
                rest.notes.update(fields)

    def take(self, owner: Any, key: str) -> Rest:
        """The rest ``key`` names, removed; NotFoundError when there is none for ``owner``
        (unknown, taken, expired or another principal's)."""
        now = self._clock()
        with self._lock:
            rest = self._held.get(key)
            mine = rest is not None and rest.owner == owner and rest.expires > now
            if mine:
                del self._held[key]
            stale = self._expired(now)
        _drop(stale)
        if not mine or rest is None:
            raise NotFoundError(
                "no turn to continue under that rest id: it was read, expired or is not yours",
                hint="read the session's records with Replay, its state with GetSession",
            )
        return rest

    def close(self) -> None:
        """Drop every held rest (the server is stopping), and end the sweeper."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
            self._closed = True
            self._due.notify()  # the sweeper ends
        _drop(held)

    def _expired(self, now: float) -> list[Rest]:
        """The rests past their time, removed (under the lock)."""
        stale = [k for k, r in self._held.items() if r.expires <= now]
        return [self._held.pop(k) for k in stale]


def _drop(rests: list[Rest]) -> None:
    """Close ``rests`` on a thread of their own: closing waits for each turn's end."""
    if not rests:
        return

    def close_all() -> None:
        for rest in rests:
            rest.close()

    threading.Thread(target=close_all, name="agentsessions rests", daemon=True).start()
