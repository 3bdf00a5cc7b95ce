"""Daemon threads a harness node reuses across Connect streams.

Each stream needs one thread of its own, beside grpc's, that reads the host's frames, runs
the harness and sends its events (:mod:`.harnessoutbox`; the gRPC handler returns at once).
Starting a thread waits for it to run once, which on a loaded machine is a scheduling round
per stream; an idle worker takes the next job at once. Workers are
daemons, as the threads they replace were: a harness stuck in a run never holds the process
at exit. At most ``idle`` of them wait for work; the rest end when their job does.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

Job = tuple[Callable[..., None], tuple[Any, ...]]


class Workers:
    """Run jobs on reused daemon threads (a new one only when none is idle)."""

    def __init__(self, idle: int = 32) -> None:
        self.max_idle = idle
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers that are, or are about to be, waiting for a job

    @property
    def idle(self) -> int:
        """Workers waiting for a job (or about to)."""
        with self._lock:
            return self._idle

    def run(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on a worker; it must handle its own exceptions."""
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # that worker's get() takes this job
        self._jobs.put((fn, args))
        if spawn:
            threading.Thread(target=self._work, daemon=True, name="harness-node").start()

    def _work(self) -> None:
        while True:
            fn, args = self._jobs.get()
            fn(*args)
            with self._lock:
                if self._idle >= self.max_idle:
                    return
                self._idle += 1
