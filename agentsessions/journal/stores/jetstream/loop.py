"""One asyncio event loop, owned by a JetStream store, driven by whichever thread needs it.

nats-py is asyncio-only while the store contract is synchronous: every call the store
makes goes through :meth:`Loop.call`, which runs a coroutine on this loop and waits for it
with a deadline. A deadline passing is reported as :class:`OutcomeUnknown`, never as a
failure: the coroutine may still have taken effect on the server (a timed-out publish was
seen to land), so the caller must resolve it (retry with the same Msg-Id, or read).

Why the caller drives the loop: handing each call to a loop thread and waiting for its
answer costs two extra thread wake-ups per call (the loop woken by the caller, the caller
by the loop): 100-180 us on top of a ~550 us acknowledged publish on one node, against
the same publishes awaited inside the loop (``bench/jetstream_commit.py``). So a call made
while nobody runs the loop runs it in the calling thread (``run_until_complete``): the
server's answer wakes the thread that waits for it, as in a plain asyncio program.
Between calls the loop must still run (the connection's reads and pings, the core
subscriptions' callbacks: cancel wake-ups, live probes), so a background thread takes it
once no call has driven it for ``IDLE_SECONDS``, and hands it back when the next call
comes. A call made while another thread drives the loop is handed to that thread, as
before (a store shared by threads keeps its concurrency).
At most one thread runs the loop at a time (``_owner``, under ``_state``).

A Ctrl-C in a thread driving the loop interrupts the loop's run (mostly its wait for the
server): the call in flight has then an unknown outcome, as a commit cut short always had.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
IDLE_SECONDS = 0.005  # how long the loop may sit undriven before the background thread runs it
_DRIVEN_NAP_SECONDS = 0.05  # how often it looks while a caller drives (a follower's wait)
_TAKE_BACK_SECONDS = 0.05  # how long a call waits for the background thread to give it back
_BG = -1  # ``_owner`` while the background thread runs the loop


class OutcomeUnknown(Exception):
    """A call's deadline passed before it answered: it may or may not have taken effect."""


class _Guest:
    """A call handed to the thread that runs the loop: its task, and how it ended."""

    __slots__ = ("coro", "done", "expired", "outcome", "task")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.done = threading.Lock()
        self.done.acquire()  # released when the task has ended
        self.task: asyncio.Task[Any] | None = None
        self.expired = False  # the caller gave up waiting: cancel it (if not started yet, too)
        self.outcome: asyncio.Task[Any] | None = None


class Loop:
    """An event loop run by its callers, and by a daemon thread while they are idle."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._state = threading.Lock()  # guards the fields below
        self._owner = 0  # the thread running the loop (0: none, _BG: the background thread)
        self._last = time.monotonic()  # when a caller last stopped driving the loop
        self._guests = 0  # calls handed to the loop's runner and not ended yet
        self._yield = False  # a caller asked the background thread for the loop
        self._parked: asyncio.Future[None] | None = None  # the background run ends with it
        self._closing = False
        self._kick = threading.Event()  # wakes the background thread (guests, close)
        self._released = threading.Condition(self._state)  # the background run ended
        self._thread = threading.Thread(
            target=self._background, name="agentsessions-jetstream", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop and return its result; OutcomeUnknown after ``timeout``.

        The coroutine is cancelled when the deadline passes, so nothing keeps running
        behind the caller's back (what it already sent to the server stays sent).
        """
        if asyncio._get_running_loop() is not None:  # a thread inside a loop cannot drive
            with self._state:
                self._guests += 1
                unowned = self._owner == 0
            return self._visit(coro, timeout, unowned)
        me, asked = threading.get_ident(), False
        with self._state:
            # the loop sat idle: take it back from the background thread, unless it serves
            # other threads' calls (it gives the loop back only once they have all ended:
            # waiting for that stalled a thread of a busy shared store up to 50 ms a commit)
            while self._owner == _BG and not self._closing and not self._guests:
                if not asked:
                    self._loop.call_soon_threadsafe(self._give_back)
                    asked = True
                elif not self._released.wait(_TAKE_BACK_SECONDS):
                    break  # it serves another thread's call: be a guest meanwhile
            drive = self._owner == 0 and not self._closing
            if drive:
                self._owner = me
            else:
                self._guests += 1
        if drive:
            return self._drive(coro, timeout)
        return self._visit(coro, timeout, self._closing)

    def _drive(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run the loop in this thread until ``coro`` ends (this thread owns it)."""
        loop, expired = self._loop, [False]
        try:
            task = loop.create_task(coro)

            def expire() -> None:
                expired[0] = True
                task.cancel()

            timer = loop.call_later(timeout, expire)
            try:
                return loop.run_until_complete(task)
            except asyncio.CancelledError:
                if expired[0]:
                    raise OutcomeUnknown(f"no answer within {timeout:g}s") from None
                raise
            except TimeoutError:  # the client's own request deadline (nats-py raises it)
                raise OutcomeUnknown(f"no answer within {timeout:g}s") from None
            finally:
                timer.cancel()
        finally:
            with self._state:
                self._owner, self._last = 0, time.monotonic()
                stranded = self._guests > 0  # handed to this thread: someone must run them
            if stranded:
                self._kick.set()

    def _visit(self, coro: Coroutine[Any, Any, T], timeout: float, wake: bool) -> T:
        """Hand ``coro`` to the thread running the loop and wait for it (``_guests`` counts
        it already). ``wake``: kick the background thread, for a guest registered while
        no thread owned the loop. Otherwise the owner serves it, or kicks the background
        thread when it stops driving with guests left (``_drive``): a kick per guest woke
        a napping thread for nothing on every commit of a store shared by threads."""
        guest = _Guest(coro)
        self._loop.call_soon_threadsafe(self._start, guest)
        if wake:  # nobody may run the loop: the background thread will
            self._kick.set()
        if not guest.done.acquire(timeout=timeout):
            guest.expired = True
            self._loop.call_soon_threadsafe(self._cancel, guest)
            raise OutcomeUnknown(f"no answer within {timeout:g}s")
        assert guest.outcome is not None
        try:
            return guest.outcome.result()  # type: ignore[no-any-return]
        except TimeoutError:  # the client's own request deadline (nats-py raises it)
            raise OutcomeUnknown(f"no answer within {timeout:g}s") from None

    # -- on the loop ------------------------------------------------------------------
    def _start(self, guest: _Guest) -> None:
        guest.task = self._loop.create_task(guest.coro)
        guest.task.add_done_callback(lambda task: self._ended(guest, task))
        if guest.expired:
            guest.task.cancel()

    @staticmethod
    def _cancel(guest: _Guest) -> None:
        if guest.task is not None:
            guest.task.cancel()

    def _ended(self, guest: _Guest, task: asyncio.Task[Any]) -> None:
        # the caller is told first, then the background run may end: in that order, so no
        # answer is left queued on a loop nobody runs
        guest.outcome = task
        guest.done.release()
        with self._state:
            self._guests -= 1
            idle = self._guests == 0
        if idle and self._yield:
            self._give_back()

    def _give_back(self) -> None:
        """End the background thread's run of the loop, once no guest of it is left."""
        with self._state:
            self._yield = self._guests > 0
        if not self._yield and self._parked is not None and not self._parked.done():
            self._parked.set_result(None)

    # -- the background thread ----------------------------------------------------------
    def _background(self) -> None:
        """Run the loop whenever no caller has for IDLE_SECONDS, or a guest waits."""
        while True:
            with self._state:
                if self._closing and self._owner == 0:
                    return
                wait = IDLE_SECONDS - (time.monotonic() - self._last)
                take = self._owner == 0 and (self._guests > 0 or wait <= 0)
                if take:
                    self._owner = _BG
                nap = max(wait, 0.001) if self._owner == 0 else _DRIVEN_NAP_SECONDS
            if not take:
                self._kick.wait(nap)  # a caller stranding guests, or close, kicks it sooner
                self._kick.clear()
                continue
            try:
                self._parked = self._loop.create_future()
                self._loop.run_until_complete(self._parked)
            finally:
                self._parked = None
                with self._state:  # given back to a caller: not taken again for a while
                    self._owner, self._last = 0, time.monotonic()
                    self._released.notify_all()

    def close(self) -> None:
        """Stop the loop and join its thread (idempotent)."""
        if self._loop.is_closed():
            return
        # cancel what the client left running (its read loop, pings, subscriptions), so no
        # task is destroyed pending when the loop goes
        with contextlib.suppress(OutcomeUnknown):
            self.call(_cancel_all(), 10)
        with self._state:
            self._closing = True
            background = self._owner == _BG
        if background:
            self._loop.call_soon_threadsafe(self._give_back)
        self._kick.set()
        self._thread.join()
        self._loop.close()


async def _cancel_all() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
