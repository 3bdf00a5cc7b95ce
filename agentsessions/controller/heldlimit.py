"""How many writers one engine holds open between turns, over all its controllers.

A long-lived engine (the daemon) gives each session a controller that keeps that session's
writer open across turns (:class:`~.held.WriterPool`). Each held writer keeps files open (its
lock and its active segment: two descriptors on the file store) and a window of recent
records, so a daemon whose sessions all ran a turn in the last minute would hold one per
session: 10,000 sessions are 20,000 descriptors, past a common ``ulimit -n``, and memory
that grows with the session count. A :class:`HeldLimit` shared by an engine's pools bounds
that: when a pool parks one writer more than the limit allows, the writer parked longest ago
anywhere in the engine is closed (its next turn opens it again: one lock and one read of its
state). Invariants:

- at most ``cap`` writers are held idle by the pools sharing the limit (an entry whose pool
  already closed its writer counts until it is reached, so the bound errs on fewer);
- a writer a turn is using is never closed for the limit (``release_idle`` refuses it);
  its pool parks it again when the turn ends, which counts it anew;
- closes run outside the limit's lock (a close writes a TAIL hint).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Protocol

DEFAULT_CAP = 1024
"""Writers an engine holds at most by default (fewer when the descriptor limit is low:
:func:`default_cap`). With each writer's window bounded (``held.RECENT_BYTES``) this bounds a
daemon's memory for held writers to a few hundred MiB however many sessions it serves."""
FDS_PER_WRITER = 2  # the file store's lock file and active segment
FD_SHARE = 4  # held writers may use a quarter of the descriptors: sockets, reads, tools


class Releasing(Protocol):
    """A pool of held writers, as the limit asks it to let one go."""

    def release_idle(self, uid: str) -> bool:
        """Close ``uid``'s held writer unless a turn uses it; True if it was closed."""
        ...


def default_cap(cap: int = DEFAULT_CAP) -> int:
    """``cap``, or fewer when the process's descriptor limit could not hold that many
    writers beside everything else (a quarter of ``RLIMIT_NOFILE`` at most)."""
    try:
        import resource
    except ImportError:  # not a Unix: no descriptor limit to read
        return cap
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return cap
    return max(1, min(cap, soft // (FDS_PER_WRITER * FD_SHARE)))


class HeldLimit:
    """At most ``cap`` writers parked at once by the pools that share this limit, the
    least recently parked closed first (thread-safe)."""

    def __init__(self, cap: int | None = None) -> None:
        self.cap = default_cap() if cap is None else cap
        self.closed = 0  # writers closed for the limit so far
        self._lock = threading.Lock()
        self._parked: OrderedDict[tuple[int, str], tuple[weakref.ref[Releasing], str]] = (
            OrderedDict()
        )

    def parked(self, pool: Releasing, uid: str) -> None:
        """``pool`` parked ``uid``'s writer: count it, and close the ones parked longest
        ago while more than ``cap`` are counted."""
        over: list[tuple[Releasing, str]] = []
        with self._lock:
            key = (id(pool), uid)
            self._parked[key] = (weakref.ref(pool), uid)
            self._parked.move_to_end(key)
            while len(self._parked) > self.cap:
                _key, (ref, oldest) = self._parked.popitem(last=False)
                owner = ref()
                if owner is not None:
                    over.append((owner, oldest))
        for owner, oldest in over:
            if owner.release_idle(oldest):
                self.closed += 1
