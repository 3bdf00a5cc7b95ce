"""Giving the heap back after a burst of calls: ``malloc_trim`` once the server is quiet.

Why (measured with bench/streams.py on a real ``serve``): a flood of 10,000 refused streams
allocates and frees many small objects on many threads (grpc's, the pools'); glibc keeps
what they freed in its arenas, so the daemon's RSS stayed near its peak long after the
flood ended. ``malloc_trim(0)`` returns the free pages of every arena to the system; it
costs a few milliseconds, so :class:`Trimmer` runs it on a thread of its own, once a burst
is followed by ``quiet`` seconds without a poke. Elsewhere than glibc (musl, macOS) there
is no ``malloc_trim`` and this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable

QUIET = 1.0


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
                time.sleep(left)
            self._trim(0)
            self.trims += 1


TRIMMER = Trimmer(trim=_malloc_trim())
"""The process's trimmer (the heap is the process's, whichever server poked it)."""
