"""How a turn's frames reach its consumer: reused daemon worker threads run the turns, and
an unbounded queue carries each turn's frames, so a consumer that stops, raises or is slow
never blocks, fails or truncates the turn; closing the frame iterator waits for its end.
Frames cross threads in batches (:class:`TurnFrames`): a turn's first :data:`QUICK` seconds
in one hand-over, then a batch per wake of the consumer, never a frame later than it asks.

:class:`Turns` is an engine's side of it: one lock per session (a busy session is waited
for, then LockHeldError), the running turns' done signals (closing the engine waits for
them), and the workers."""

from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar, cast

from agentsessions.controller.deltas import DeltaSink
from agentsessions.errors import InvalidArgumentError, LockHeldError
from agentsessions.valueclass import value

from .values import DeltaFrame, Frame, RecordFrame, SessionFrame, Turn
from .views import view

if TYPE_CHECKING:
    from agentsessions.controller.controller import Controller

T = TypeVar("T")


@value
class Failed:
    """A turn's error, handed to its consumer and raised from the frame iterator."""

    error: BaseException


DONE = object()
"""The last item a turn puts on its queue."""

QUICK = 0.02
"""Seconds of a turn whose frames reach its consumer together (:class:`TurnFrames`): past
a local turn on a busy disk, below what a person watching a live display can tell."""

SLICE = 0.2
"""Seconds a consumer blocks at a time while it waits for a turn. A process-directed signal
(Ctrl-C) may be handed by the kernel to any thread; CPython then only flags it for the main
thread, which runs the handler when it next executes bytecode. A consumer blocked in one
endless wait (a long silent model call) would never get there, so it waits in slices."""

TURN_ENDED: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "agentsessions_turn_ended", default=None
)
"""A callback for the turn the current call starts: :class:`Turns` takes it (and clears it
in the caller's context, so the caller can tell a turn took it) and calls it once the turn
has ended on its thread, whatever became of the call's frames. The server's scope counts a
token's turns in flight with it: a caller that goes away mid-turn leaves the turn running,
and it must still count (server/scoped.py)."""


def _take_turn_ended() -> Callable[[], None]:
    ended = TURN_ENDED.get()
    if ended is None:
        return _nothing
    TURN_ENDED.set(None)  # taken: the caller sees no callback left, so a turn has it
    return ended


def _nothing() -> None:
    """No one asked to hear of the turn's end."""


class TurnFrames(DeltaSink):
    """The producer's side of a turn's frames, and the consumer's way to take them.

    Everything the turn hands over (frames, each delta's text, :class:`Failed`,
    :data:`DONE`) is appended to one deque, in order, by one C call that needs no lock
    (a deque's ``append`` and ``popleft`` are atomic); the consumer takes what is there at
    once, so consecutive deltas it had not taken become one :class:`DeltaFrame` (text
    never moves across a record), and a consumer that keeps up gets each delta alone.

    Waking the consumer: a turn's first :data:`QUICK` seconds are handed over at once: the
    consumer waits on the bell, which only :data:`DONE` rings, until the turn ends or
    QUICK passes, then takes what is there itself. A local turn thus costs one hand-over
    between threads instead of one per sync, model stream and session frame (each a
    context switch and a trip of the GIL). From then on (eager) the consumer, before it
    blocks, sets ``_listening`` and then looks at the deque once more; the producer, after
    each append, rings the bell if ``_listening`` is set (and clears it). Each side writes
    before it reads the other's write, so one of them always sees the other: an item made
    while the consumer goes to sleep is either seen by its last look or rings the bell.
    A ring the consumer did not need stays on the bell and costs it one spurious wake.
    (The reads and writes are ordered as the interpreter runs them, one bytecode at a time
    under the GIL.) Nothing in this relies on one producer thread: several may append and
    ring. One consumer takes (a :class:`TurnStream` is read by one thread at a time).
    """

    def __init__(self, uid: str) -> None:
        self.uid = uid
        self._items: collections.deque[object] = collections.deque()
        self._bell: queue.SimpleQueue[None] = queue.SimpleQueue()  # a ring: one None
        self._listening = False  # an eager consumer is (about to be) blocked on the bell
        self._eager = False  # past the turn's first QUICK seconds: each item may wake

    def delta(self, text: str) -> None:
        """Hand over streamed text (it joins the text handed over right before it)."""
        self._items.append(text)
        if self._listening:
            self._ring()

    __call__ = delta  # as the controller's on_delta

    def checked(self, check: Callable[[], None], every: float) -> Callable[[str], None]:
        """The turn's delta function: ``check`` (a cancel raises from it) at most once per
        ``every`` seconds, then the delta handed over, in one call (a delta per word)."""
        append, clock = self._items.append, time.monotonic
        last = clock()

        def deliver(text: str) -> None:
            nonlocal last
            now = clock()
            if now - last >= every:
                last = now
                check()
            append(text)
            if self._listening:
                self._ring()

        return deliver

    def put(self, item: object) -> None:
        """Hand over a frame (or DONE, Failed) after everything handed over so far; DONE
        always rings (the end wakes even a consumer in a turn's first moments)."""
        self._items.append(item)
        if item is DONE:
            self._bell.put(None)
        elif self._listening:
            self._ring()

    def _ring(self) -> None:
        self._listening = False  # before the ring: the consumer re-arms after it wakes
        self._bell.put(None)

    def next_batch(self) -> list[object]:
        """The consumer's next items (deltas joined): waits for them, :data:`QUICK` seconds
        at first, then takes what the turn made so far itself and wakes for each item."""
        while True:
            taken = self.poll()
            if taken:
                return taken
            if self._eager:
                self._listen(None)
                continue
            try:
                self._bell.get(timeout=QUICK)  # rung by DONE only: the turn's end
            except queue.Empty:
                self._eager = True

    def _listen(self, timeout: float | None) -> None:
        """Block until an item is handed over (``timeout`` seconds at most; None: waits in
        slices of :data:`SLICE`), unless one is there already; see the class's docstring."""
        self._listening = True
        if not self._items:  # looked after listening: an item made since rings the bell
            self._rung(timeout)
        self._listening = False

    def _rung(self, timeout: float | None) -> None:
        """Wait for the bell, ``timeout`` seconds at most (None: in slices, for ever)."""
        if timeout is None:
            _take(self._bell)
            return
        with contextlib.suppress(queue.Empty):
            self._bell.get(timeout=timeout)

    def within(self, timeout: float) -> list[object]:
        """What the turn hands over within ``timeout`` seconds ([] if none): in its first
        moments its whole batch when it ends in time (its end rings the bell), past them
        the first items made (a spare ring does not end the wait early)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if self._eager:
                self._listen(left)
            else:
                self._rung(left)
            taken = self.poll()
            if taken:
                return taken
        return self.poll()

    def poll(self) -> list[object]:
        """Everything handed over and not yet taken, without waiting ([] when nothing is):
        for a consumer that sends what is ready together (a server's one message)."""
        items = self._items
        count = len(items)
        if not count:
            return []
        # popleft ``count`` times in C: the producer only appends, so these are the first
        return self._joined(list(itertools.starmap(items.popleft, itertools.repeat((), count))))

    def _joined(self, items: list[object]) -> list[object]:
        """``items`` with each run of deltas joined into one DeltaFrame (grouped in C: a
        turn's batch holds a delta per token, ~100 of them)."""
        out: list[object] = []
        for kind, run in itertools.groupby(items, type):
            if kind is str:
                out.append(DeltaFrame(self.uid, "".join(cast("Iterator[str]", run))))
            else:
                out.extend(run)
        return out


class Workers:
    """Daemon threads that run an engine's turns, reused from turn to turn.

    Starting a thread per turn cost about 1 ms (the starter waits until the new thread is
    scheduled), a third of a whole turn on a held writer. A turn is submitted to an idle
    worker, or to a new one when none is idle; :meth:`close` ends the idle workers. Daemon
    threads, so an interpreter that must exit mid-turn can (the turn is then interrupted,
    and ``resume`` completes it, as after a kill).
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._count = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on a worker (it must not raise: a turn hands its errors over), in a
        copy of the submitter's context: the request id and trace of the call that started
        the turn follow it onto the worker (agentsessions/telemetry.py)."""
        job = functools.partial(contextvars.copy_context().run, job)
        with self._lock:
            spawn = self._idle == 0
            if spawn:
                self._count += 1
            else:
                self._idle -= 1  # that idle worker takes this job
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._work, name="agentsessions turn", daemon=True).start()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        """End every worker once its current job is done."""
        with self._lock:
            count, self._count, self._idle = self._count, 0, 0
        for _ in range(count):
            self._jobs.put(None)


def frames_of(first: SessionFrame, frames: TurnFrames, done: Done) -> TurnStream:
    """The consumer's side of a turn: closing it early waits for the turn to end."""
    return TurnStream(first, frames, done)


class TurnStream(Iterator[Frame]):
    """A turn's frames as its consumer reads them: ``first``, then each frame the turn
    hands over (in batches, :class:`TurnFrames`), then the turn's error if it failed;
    closing it (or dropping it once read from) waits for the turn to end.

    :meth:`ready` hands over, without waiting for more, the frames the turn has made
    already: a server sends them as one message (records that committed together, then the
    session) instead of one message a frame."""

    def __init__(self, first: SessionFrame, frames: TurnFrames, done: Done) -> None:
        self._first: SessionFrame | None = first
        self._frames = frames
        self._done = done
        self._buffer: collections.deque[object] = collections.deque()  # taken, not yet read
        self._started = False  # a frame was read: dropping it waits for the turn
        self._closed = False

    def __iter__(self) -> TurnStream:
        return self

    def __next__(self) -> Frame:
        self._started = True
        if self._first is not None:
            first, self._first = self._first, None
            return first
        if self._closed:
            raise StopIteration
        if not self._buffer:
            self._buffer.extend(self._frames.next_batch())
        return self._frame(self._buffer.popleft())

    def ready(self, wait: float = 0.0) -> list[Frame]:
        """The frames made now, in order ([] when none is), waiting up to ``wait`` seconds
        for the first of them when none is made yet; the turn's end (or error) is left for
        the next ``next``."""
        out: list[Frame] = []
        if self._first is not None:
            out.append(next(self))
        if not self._buffer and not self._closed:
            self._buffer.extend(self._frames.poll())
            if not self._buffer and not out and wait > 0:
                self._buffer.extend(self._frames.within(wait))
        while self._buffer and not self._closed:
            item = self._buffer[0]
            if item is DONE or isinstance(item, Failed):
                break
            out.append(self._frame(self._buffer.popleft()))
        return out

    def _frame(self, item: object) -> Frame:
        if item is DONE:
            self.close()
            raise StopIteration
        if isinstance(item, Failed):
            self.close()
            raise item.error
        return cast(Frame, item)  # the producer puts only frames besides DONE and Failed

    def close(self) -> None:
        """Wait for the turn to end (its END is durable then); the rest is dropped."""
        if not self._closed:
            self._closed = True
            wait_for(self._done)

    def __del__(self) -> None:
        # as a generator's ``finally``: one dropped mid-turn waits for the turn's end
        if self._started:
            self.close()


def _take(items: queue.SimpleQueue[T]) -> T:
    """The next item, waiting in slices of :data:`SLICE` (so signal handlers run)."""
    while True:
        try:
            return items.get(timeout=SLICE)
        except queue.Empty:
            continue


class Done:
    """A turn's done signal, set once when the turn has ended: a lock held while it runs.

    What :class:`threading.Event` offers a turn (``set`` once, ``wait`` by any number of
    threads), at a fifth of its cost: an Event builds a Condition, and every turn makes one."""

    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running = threading.Lock()
        self._running.acquire()

    def set(self) -> None:
        """The turn has ended (called once)."""
        self._running.release()

    def wait(self, timeout: float) -> bool:
        """True once the turn has ended, else False after ``timeout`` seconds."""
        if not self._running.acquire(timeout=timeout):
            return False
        self._running.release()  # ended for good: the next waiter passes too
        return True


def wait_for(event: Done) -> None:
    """Wait for ``event`` in slices of :data:`SLICE` (so signal handlers run meanwhile)."""
    while not event.wait(SLICE):
        pass


class Turns:
    """An engine's turns: a lock per session, the running turns, the workers that run them.

    Thread-safe. A session's lock is held from the checks of a turn to its end (the worker
    releases it), so one engine never runs two turns of one session at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the fields below
        self._session_locks: dict[str, threading.Lock] = {}
        self._running: set[Done] = set()  # each running turn's done signal
        self._workers = Workers()
        self._closed = False

    def hold(self, uid: str, wait: float) -> threading.Lock:
        """Take ``uid``'s lock, waiting up to ``wait`` seconds; LockHeldError if busy."""
        with self._lock:
            if self._closed:
                raise InvalidArgumentError("this Sessions engine is closed")
            lock = self._session_locks.setdefault(uid, threading.Lock())
        if not (lock.acquire(timeout=wait) if wait > 0 else lock.acquire(blocking=False)):
            raise LockHeldError(
                f"session {uid} is busy: another call of this engine is writing it",
                hint="wait for it, or give the call a wait in seconds",
                session=uid,
            )
        return lock

    def start(
        self,
        uid: str,
        lock: threading.Lock,
        controller: Controller,
        first: SessionFrame,
        work: Callable[[Controller], tuple[Turn | None, bool]],
    ) -> Iterator[Frame]:
        """Run ``work`` on a worker that releases ``lock`` when it ends; the frames it
        produces: ``first``, each record and delta as ``controller`` reports it, then the
        session as the turn left it (``work`` returns the turn and whether compute woke)."""
        frames = TurnFrames(uid)
        done = Done()
        ended = _take_turn_ended()

        def run() -> None:
            end: object = None
            try:
                controller.on_record = lambda record: frames.put(RecordFrame(uid, record))
                controller.on_delta = frames  # its own checked delta: no Observer layer
                turn, woke = work(controller)
                last = view(controller.info(uid))
                end = SessionFrame(last, turn, compute_resumed=woke, last=True)
            except BaseException as exc:  # handed to the consumer, raised from its iterator
                end = Failed(exc)
            finally:
                controller.on_record = None
                controller.on_delta = None
                # released before the last frame is handed over: whoever reads it (a server
                # streaming it to a client) may start the session's next turn at once
                lock.release()
                if end is not None:
                    frames.put(end)
                with self._lock:
                    self._running.discard(done)
                done.set()  # before DONE: a consumer that reads it never waits for the end
                frames.put(DONE)
                ended()

        with self._lock:
            self._running.add(done)
        self._workers.submit(run)
        return frames_of(first, frames, done)

    def run_here(
        self,
        uid: str,
        lock: threading.Lock,
        controller: Controller,
        work: Callable[[Controller], tuple[Turn | None, bool]],
    ) -> SessionFrame:
        """Run ``work`` on the caller's thread, then release ``lock``; the last frame."""
        done = Done()
        ended = _take_turn_ended()
        with self._lock:
            self._running.add(done)
        try:
            turn, woke = work(controller)
            return SessionFrame(view(controller.info(uid)), turn, compute_resumed=woke, last=True)
        finally:
            lock.release()
            with self._lock:
                self._running.discard(done)
            done.set()
            ended()

    def drain(self) -> bool:
        """Wait for the running turns (their END is durable then), then refuse new ones
        (:meth:`hold` raises); False, without waiting, when already drained."""
        with self._lock:
            if self._closed:
                return False
            running = list(self._running)
        for done in running:
            wait_for(done)
        with self._lock:
            self._closed = True
        return True

    def close(self) -> None:
        """End the idle workers (after :meth:`drain`, every worker is idle)."""
        self._workers.close()
