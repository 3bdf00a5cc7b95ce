"""Giving the heap back after a burst of calls: what a flood of refused calls leaves behind.

Three things keep a daemon's memory within 10% of its idle level after a flood
(bench/streams.py: 10,000 Follow streams from one token, most of them refused):

- refusals run at once on grpc's serving thread (:mod:`.admission`), not on a pool: the
  serving thread used to take a flood's calls faster than a pool of two threads refused
  them, and the backlog (each call's Python state and grpc's) lived until the pool caught
  up, on three threads' heaps, at the size of the flood's peak;
- glibc's per-thread caches are off in ``serve`` (:data:`TUNABLES`, which ``serve`` sets
  by running itself again, :func:`tuned_environ`; glibc reads it only when a process
  starts): each thread's tcache keeps up to 7 freed blocks of each small size, which
  count as in use, so the pages they sit on in grpc's threads' heaps can never be given
  back; with them, what a flood left grew by about 0.3 MiB a flood (1.11x idle after ten);
- ``malloc_trim(0)`` once the server is quiet (:class:`Trimmer`): glibc keeps what was freed
  in its heaps instead of returning it; the trim gives the free pages of every heap back.
  It costs milliseconds, so it runs on a thread of its own, ``QUIET`` seconds after the
  last poke of a burst, and once more ``SETTLE`` seconds later (grpc's core frees a flood's
  calls on its own threads, after the last call Python saw).

Where the C library is not glibc (musl, macOS) none of the glibc parts applies.

Measured with bench/streams.py (a real ``serve``, 2 shared cores, floods of 10,000 Follow
streams from one token, RSS in MiB 6 quiet seconds after each; another token's unary calls
at 100 a second throughout):

================================  ====  =======  ==============  ============  ===========
variant                           idle  peak     after (floods)  after / idle  other's p99
================================  ====  =======  ==============  ============  ===========
refusals on a pool of 2 (before)  61    113      70-73 (3)       1.21x         44 ms
refusals on the serving thread    59    103-108  62-63 (3)       1.07-1.08x    25-30 ms
  the same, ten floods            58    103      61-64 (10)      1.11x         31 ms
and no per-thread caches          58    96-104   59-61 (3)       1.03-1.05x    22-32 ms
  the same, ten floods            58    104      60-61 (10)      1.04x         34 ms
================================  ====  =======  ==============  ============  ===========

Without the per-thread caches a turn through the daemon costs the same (bench/grpc.py:
2.8-3.3 ms round trip, 290-315 turns/s with 32 clients; 3.0-3.1 ms, 295-302 with them).

Tried and measured, no better: glibc's ``M_ARENA_MAX`` 1 or 2 (``mallopt`` before any
thread starts: the main heap grows instead), a fixed ``M_MMAP_THRESHOLD`` (64 KiB),
HTTP/2's per-connection stream bound (lower peak, the same after; not set: bounds.py says
why), and, before refusals moved, grpc's pending-request bound
(``grpc.server.max_pending_requests`` 64 or 256), a 256-call ``maximum_concurrent_rpcs``,
``PYTHONMALLOC=malloc MALLOC_ARENA_MAX=1`` (1.15x). Python's own heap is not what grows:
tracemalloc's count stays within 0.4 MiB from one flood to the next.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import threading
import time
from collections.abc import Callable, Mapping

TUNABLES = "glibc.malloc.tcache_count=0"
"""glibc's per-thread caches off (see the module): what ``serve`` restarts itself with."""


def tuned_environ(environ: Mapping[str, str]) -> dict[str, str] | None:
    """``environ`` with :data:`TUNABLES`, to restart a daemon in; None when there is
    nothing to do: not glibc, or ``GLIBC_TUNABLES`` already set (the operator's choice, or
    this process is the restart). glibc reads it only when a process starts."""
    if "GLIBC_TUNABLES" in environ or platform.libc_ver()[0] != "glibc":
        return None
    return {**environ, "GLIBC_TUNABLES": TUNABLES}


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
