"""Giving the heap back after a burst of calls: ``malloc_trim`` once the server is quiet.

Why: a flood of refused calls (bench/streams.py: 10,000 Follow streams from one token)
allocates and frees many small blocks on many threads (grpc's core, the pools), and glibc
keeps what was freed in its arenas instead of returning it. ``malloc_trim(0)`` gives the
free pages of every arena back; it costs milliseconds, so :class:`Trimmer` runs it on a
thread of its own, ``QUIET`` seconds after the last poke of a burst, and once more
``SETTLE`` seconds later (grpc's core frees a flood's calls on its own threads, after the
last call Python saw). Where the C library has no ``malloc_trim`` (musl, macOS) this does
nothing.

Measured on a real ``serve`` (2 shared cores, two floods of 10,000): RSS idle 55-57 MiB,
peak 105-115 MiB, after each flood 66-72 MiB with the trims, 72-73 MiB without; so within
1.2-1.3x of idle, not the 10% the issue asks. What remains is not Python's heap (pymalloc
keeps the same 25 arenas throughout) nor threads (their number does not change): it is
memory grpc's core allocated during the flood and still holds, and it stays flat from one
flood to the next rather than growing. Tried and measured, no better: ``MALLOC_ARENA_MAX=2``,
fixed ``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``, grpc's pending-request bound
(``grpc.server.max_pending_requests`` 64 or 256), a 256-call ``maximum_concurrent_rpcs``.
HTTP/2's MAX_CONCURRENT_STREAMS at 100 lowered the peak (82 MiB) but not the rest (65
MiB), and grpc's clients answer its refusals with UNAVAILABLE, so it is not set (bounds.py).
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
