"""How a turn's frames reach its consumer: reused daemon worker threads run the turns, and
an unbounded queue carries each turn's frames, so a consumer that stops, raises or is slow
never blocks, fails or truncates the turn; closing the frame iterator waits for its end."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .api import DeltaFrame, Frame, RecordFrame, SessionFrame


@dataclass
class Failed:
    """A turn's error, handed to its consumer and raised from the frame iterator."""

    error: BaseException


DONE = object()
"""The last item a turn puts on its queue."""


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
        """Run ``job`` on a worker (it must not raise: a turn hands its errors over)."""
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


def frames_of(
    first: SessionFrame, frames: queue.SimpleQueue[object], done: threading.Event
) -> Iterator[Frame]:
    """The consumer's side of a turn: closing it early waits for the turn to end."""
    try:
        yield first
        while True:
            item = frames.get()
            if item is DONE:
                return
            if isinstance(item, Failed):
                raise item.error
            assert isinstance(item, SessionFrame | RecordFrame | DeltaFrame)
            yield item
    finally:
        done.wait()
