"""Giving the heap back after a burst of calls: ``malloc_trim`` once the server is quiet.

Why: a flood of refused calls (bench/streams.py: 10,000 Follow streams from one token)
allocates and frees many small blocks on many threads (grpc's core, the pools), and glibc
keeps what was freed in its arenas instead of returning it. ``malloc_trim(0)`` gives the
free pages of every arena back; it costs milliseconds, so :class:`Trimmer` runs it on a
thread of its own, ``QUIET`` seconds after the last poke of a burst, and once more
``SETTLE`` seconds later (grpc's core frees a flood's calls on its own threads, after the
last call Python saw). Where the C library has no ``malloc_trim`` (musl, macOS) this does
nothing.

What a flood leaves behind is mostly not the trims' to fix: it is where a flood's calls
were handled. Refused calls used to run on a pool of two threads of their own; the serving
thread took calls faster than that pool refused them, so a backlog of calls (their Python
state and grpc's) lived until the pool caught up, on three threads' heaps, and the
allocators kept that peak's pages (empty pymalloc pools in partly used arenas, glibc
per-thread heaps with a few live blocks each) after the flood. A refusal now runs at once
on the serving thread (:mod:`.admission`): no backlog, one thread.

Measured with bench/streams.py (a real ``serve``, 2 shared cores, three floods of 10,000
Follow streams from one token, RSS after 6 quiet seconds):

- refusals on their own pool of two threads: idle 61 MiB, peak 113, after 70-73 (1.21x);
- refusals on the serving thread: idle 59 MiB, peak 103, after 62-63 (1.07x), the other
  token's p99 26 ms (44 before).

Tried and measured on the pool-of-refusers daemon, no better: ``MALLOC_ARENA_MAX`` 1 or 2
(set by ``mallopt`` before any thread), fixed ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_``, grpc's pending-request bound (``grpc.server.max_pending_requests``
64 or 256), a 256-call ``maximum_concurrent_rpcs``; ``PYTHONMALLOC=malloc
MALLOC_ARENA_MAX=1`` reached 1.15x.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable

QUIET = 1.0
SETTLE = 3.0
"""A second trim this much after the first, if still quiet: grpc's core frees a flood's
calls and buffers on its own threads, after the last call Python saw ended."""


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


class Trimmer:
    """Trims the heap once, ``quiet`` seconds after the last of a burst of pokes."""

    def __init__(self, quiet: float = QUIET, trim: Callable[[int], int] | None = None) -> None:
        self.quiet = quiet
        self._trim = trim
        self._last = 0.0
        self._poked = threading.Event()
        self._thread: threading.Thread | None = None
        self._mutex = threading.Lock()
        self.trims = 0  # how many times it trimmed (for tests and the bench)

    def poke(self) -> None:
        """Note activity that freed memory (a refused call, the last long call ending)."""
        if self._trim is None:
            return
        self._last = time.monotonic()
        if not self._poked.is_set():
            self._poked.set()
        if self._thread is None:
            with self._mutex:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="malloc-trim", daemon=True
                    )
                    self._thread.start()

    def _run(self) -> None:
        assert self._trim is not None
        while True:
            self._poked.wait()
            self._poked.clear()
            while (left := self._last + self.quiet - time.monotonic()) > 0:
                time.sleep(left)  # until the burst is over: quiet seconds without a poke
            self._trim(0)
            self.trims += 1
            if not self._poked.wait(SETTLE):  # a new burst gets its own trims
                self._trim(0)
                self.trims += 1


TRIMMER = Trimmer(trim=_malloc_trim())
"""The process's trimmer (the heap is the process's, whichever server poked it)."""
