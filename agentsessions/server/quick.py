"""ExecQuick and ExecRest: a turn in one unary call when it ends quickly, streamed when not.

Why a unary call: grpc's sync server sends a stream's message and its status as two
batches of its core's work, the worker waiting on the serving thread for the first (each a
thread switch both ways); a unary reply is one batch with its status. Measured on loopback
with an echo handler (this project's 2-core machine, same client): a unary call 0.33 ms
and 0.18 ms of server CPU, a stream of one message 0.53 ms and 0.35 ms. A quick turn is one
message already (:mod:`.updates` batches it), so for one the unary call is that much less.

Why the turn still runs on the engine's thread, not the handler's: grpc's sync server sends
a unary reply only when the handler returns, so a handler running the turn itself could not
answer at the window's end with the turn still going (a model call cannot be paused and
moved to another thread). Measured anyway, the turn run on the handler's thread (same run,
7 rounds each, loaded 2-core machine): 2.4 fewer context switches a turn, the daemon's CPU
6% lower with one client, 32 clients' turns/s about 10% higher; not worth the window.

Invariants (besides :mod:`.updates`'s, which makes the messages):

- the reply holds every frame the turn made within its window (:data:`QUICK_WINDOW`
  seconds, stretched while the server is busy: :func:`window`), each record durable, as
  one ExecUpdate whose ``batch`` holds all but the first, in order;
- a turn that ended within the window is whole in the reply (its last session frame is
  there); one that goes on is paused and its rest held (:mod:`.rests`): the reply's
  ``rest`` names it and ExecRest streams the remaining frames exactly as Exec would have;
- an error of ours after the first frame (a harness that failed, a deadline that passed
  after the last frame) does not drop the frames: the reply is OK with them and its
  trailers name the error (:func:`~agentsessions.wire.status.ok_trailers`), as for a turn
  parked on an approval; an error before any frame is the call's status, as for Exec.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import grpc

from agentsessions.errors import AgentSessionsError
from agentsessions.server import deadline
from agentsessions.server.admission import keep_slot
from agentsessions.server.auth import current_principal
from agentsessions.server.rests import Rests
from agentsessions.server.updates import PAUSE, Seen, windowed
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import Frame
from agentsessions.wire import status
from agentsessions.wire.gen import session_pb2
from agentsessions.wire.intercept import note

QUICK_WINDOW = 0.025
"""Seconds the reply waits for the turn's end: above a local turn's two syncs on a busy
disk, about :data:`~agentsessions.sessions.turnstream.QUICK` (what a person watching frames
arrive cannot tell apart from at once); a longer turn's first frames wait this long
(stretched while the server is busy: :func:`window`)."""

MAX_STRETCH = 4.0
"""The most :func:`window` stretches :data:`QUICK_WINDOW` (0.1 s: still below what a person
perceives as a delay)."""

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def window(running: int) -> float:
    """Seconds a reply waits for its turn's end when ``running`` ExecQuick calls (this one
    among them) wait for theirs: :data:`QUICK_WINDOW`, stretched by the turns each core
    shares, up to :data:`MAX_STRETCH` times.

    Why: a quick turn's wall time grows with the turns sharing the daemon's cores (and its
    one interpreter lock), so a window fixed in wall time pauses more quick turns the
    busier the server is, and each pause costs another call (ExecRest), which makes it
    busier still. Measured with bench/grpc.py's 32 clients on this project's 2-core machine,
    loaded: a turn took 25-40 ms, so 10-30% of them were paused at 25 ms. Stretching keeps a
    quick turn one reply under load; a slow turn's first frames wait up to 0.1 s then."""
    return QUICK_WINDOW * min(MAX_STRETCH, max(1.0, running / CORES))


class Busy:
    """How many ExecQuick calls wait for their turns now (what :func:`window` scales by)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0

    @contextmanager
    def one(self) -> Iterator[int]:
        """Count this call while it waits; how many wait, this one among them."""
        with self._lock:
            self._running += 1
            running = self._running
        try:
            yield running
        finally:
            with self._lock:
                self._running -= 1


def reply(
    engine: Sessions,
    stream: Iterator[Frame],
    context: grpc.ServicerContext,
    timer: deadline.Deadline | None,
    rests: Rests,
    busy: Busy | None = None,
) -> session_pb2.ExecQuickResponse:
    """The ExecQuick reply of a started turn (``stream``, its frames): whole, or paused
    with its rest held in ``rests`` for this call's principal. ``busy``: the server's
    count of waiting replies, which stretches the window (:func:`window`)."""
    seen = Seen(context)
    out: list[session_pb2.ExecUpdate] = []
    paused = False
    try:
        with (busy or Busy()).one() as running:
            updates = windowed(engine, stream, seen, timer, window(running))
            for update in updates:
                if update is PAUSE:
                    paused = True
                    break
                out.append(update)
    except AgentSessionsError as exc:
        _close(timer)
        if not out:
            raise
        note(error=type(exc).__name__)
        context.set_trailing_metadata(status.ok_trailers(exc))
    except BaseException:
        _close(timer)
        raise
    done = session_pb2.ExecQuickResponse(update=joined(out))
    if paused:
        slot = keep_slot()  # the turn goes on: it stays counted until its rest is done
        done.rest = rests.park(current_principal(), updates, seen, timer, slot)
        rests.note(done.rest, session=seen.uid, project=done.update.session.metadata.project)
    elif timer is not None:
        timer.close()
    return done


def rest(
    request: session_pb2.ExecRestRequest, context: grpc.ServicerContext, rests: Rests
) -> Iterator[session_pb2.ExecUpdate]:
    """The rest of a paused turn, streamed (NotFoundError when ``request.rest`` names none
    of this principal's)."""
    held = rests.take(current_principal(), request.rest)
    note(**held.notes)  # this call's log line names the turn's session, as ExecQuick's did
    held.seen.context = context  # a turn that parks now sets this call's trailers
    try:
        for update in held.updates:
            if update is not None:
                yield update
    finally:
        try:
            _close(held.timer)
        finally:
            held.release()  # the slot ExecQuick kept: this turn's frames are all out


def joined(updates: list[session_pb2.ExecUpdate]) -> session_pb2.ExecUpdate:
    """``updates`` (each with the ones its ``batch`` carries) as one ExecUpdate: the first,
    every other one after it in its ``batch``, in order."""
    head = updates[0]
    for update in updates[1:]:
        carried = list(update.batch)
        update.ClearField("batch")
        head.batch.append(update)
        head.batch.extend(carried)
    return head


def _close(timer: deadline.Deadline | None) -> None:
    if timer is not None:
        timer.close()
