"""Waiting for a journal directory to change, without burning a core.

A follower (:meth:`FileStore.follow`) reads to the head, then calls :meth:`Watcher.wait`
until something in the session's ``journal/`` directory may have changed, and reads again.

- On Linux, :class:`InotifyWatcher` asks the kernel (``inotify_init1``/``inotify_add_watch``
  through ctypes on libc: no dependency, works in the zipapp) for IN_MODIFY, IN_CREATE and
  IN_MOVED_TO on the directory: an append, a new segment on rotation, a compressed segment
  renamed into place, a recovery that cuts a torn tail. An idle follower sleeps in
  ``select`` and wakes only when a writer touches the directory (or every
  ``safety_seconds``, in case an event was lost, e.g. the queue overflowed).
- Elsewhere (or when inotify is unavailable, e.g. its watch limit is reached),
  :class:`PollingWatcher` sleeps with an exponential backoff from 10 ms up to 0.5 s; the
  follower calls :meth:`Watcher.progress` when it found records, which resets the backoff.

Invariant: a watcher never decides what is committed. A wakeup only says "look again"; the
segment log's refresh decides, so a spurious or missed-then-timed-out wakeup can delay a
record but never duplicate or skip one. ``wakeups`` counts the returns of :meth:`wait`, so a
test can bound an idle follower's work by counts, not wall time.
"""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # ctypes loads with the first watcher: list and get never follow
    import ctypes

IN_MODIFY = 0x00000002
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
WATCH_MASK = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF

POLL_MIN_SECONDS = 0.01
POLL_MAX_SECONDS = 0.5


class Watcher(Protocol):
    """Something a follower can sleep on until a directory may have changed."""

    wakeups: int

    def wait(self, timeout: float | None) -> None:
        """Return once the directory may have changed, or after ``timeout`` seconds."""
        ...

    def progress(self) -> None:
        """The follower found new records: a polling watcher looks again soon."""
        ...

    def close(self) -> None:
        """Release the watch (idempotent)."""
        ...


class PollingWatcher:
    """The portable fallback: sleep 10 ms, doubling to at most 0.5 s while nothing arrives."""

    def __init__(self, max_seconds: float = POLL_MAX_SECONDS) -> None:
        self.wakeups = 0
        self._max = max(max_seconds, POLL_MIN_SECONDS)
        self._delay = POLL_MIN_SECONDS

    def wait(self, timeout: float | None) -> None:
        """Sleep the current backoff (at most ``timeout``), then double it."""
        delay = self._delay if timeout is None else max(min(self._delay, timeout), 0.0)
        time.sleep(delay)
        self._delay = min(self._delay * 2, self._max)
        self.wakeups += 1

    def progress(self) -> None:
        """Records arrived: a busy writer is likely to append again soon."""
        self._delay = POLL_MIN_SECONDS

    def close(self) -> None:
        """Nothing to release."""


class InotifyWatcher:
    """Linux: sleep until the kernel reports a change in the directory (see module doc)."""

    def __init__(self, directory: Path, *, safety_seconds: float = 5.0) -> None:
        libc = _libc()
        if libc is None:
            raise OSError("inotify is not available")
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        from ctypes import get_errno

        if fd < 0:
            raise OSError(get_errno(), "inotify_init1 failed")
        if libc.inotify_add_watch(fd, os.fsencode(directory), WATCH_MASK) < 0:
            err = get_errno()
            os.close(fd)
            raise OSError(err, f"inotify_add_watch failed on {directory}")
        self._fd: int | None = fd
        self._safety = safety_seconds
        self.wakeups = 0

    def wait(self, timeout: float | None) -> None:
        """Block in select until an event (or ``timeout``/the safety period), then drain."""
        if self._fd is None:
            return
        limit = self._safety if timeout is None else max(min(timeout, self._safety), 0.0)
        ready, _, _ = select.select([self._fd], [], [], limit)
        self.wakeups += 1
        if ready:
            self._drain()

    def _drain(self) -> None:
        assert self._fd is not None
        while True:  # one wakeup for a burst: what the events say does not matter
            try:
                if not os.read(self._fd, 64 * 1024):
                    return
            except BlockingIOError:
                return

    def progress(self) -> None:
        """Nothing to tune: the kernel says when to look."""

    def close(self) -> None:
        """Close the inotify descriptor (which drops the watch)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_LIBC: ctypes.CDLL | bool | None = False  # False: not looked up yet


def _libc() -> ctypes.CDLL | None:
    import ctypes
    import ctypes.util

    global _LIBC
    if _LIBC is False:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            lib.inotify_init1.argtypes = [ctypes.c_int]
            lib.inotify_init1.restype = ctypes.c_int
            lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            lib.inotify_add_watch.restype = ctypes.c_int
            _LIBC = lib
        except (OSError, AttributeError):
            _LIBC = None
    return _LIBC if isinstance(_LIBC, ctypes.CDLL) else None


def open_watcher(directory: Path, *, poll_max_seconds: float = POLL_MAX_SECONDS) -> Watcher:
    """The best watcher for ``directory`` here: inotify on Linux, else backoff polling.

    ``AGENTSESSIONS_FOLLOW_POLL=1`` forces polling (tests of the fallback; file systems
    such as NFS where another machine's writes raise no local inotify event).
    """
    if sys.platform.startswith("linux") and os.environ.get("AGENTSESSIONS_FOLLOW_POLL") != "1":
        try:
            return InotifyWatcher(directory)
        except OSError:
            pass  # e.g. fs.inotify.max_user_watches reached: polling still works
    return PollingWatcher(poll_max_seconds)
