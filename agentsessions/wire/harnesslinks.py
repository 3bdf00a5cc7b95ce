"""The host's end of one execution's stream to a harness node: a Connect of its own, or a lane.

A Connect costs a stream set-up per execution (on grpc's threaded client, two thread starts
as well). A node that serves ``Harness.Executions`` (its descriptor's ``executions``) takes
executions one after another on one stream, so the host keeps such streams open between
turns (:class:`Lanes`: a few idle ones per address) and an execution takes one
(:class:`Lane`) instead of opening a Connect (:class:`ConnectLink`). Either stream is driven
by the execution's own thread (:mod:`.inlinestream`): a frame is sent, and an answer read,
without a hand-off to a thread of grpc's.

Both are read the same way, an iterator of ``Event``: a lane's node sends the events it has
ready at once as one ``Events`` message, which the lane hands out one by one. A lane goes
back to the pool only when its execution ended cleanly (END or a checked park ack, nothing
after it); anything else closes it. A lane that sat idle may have died meanwhile (the node
restarted, or ended the stream): the first read of a reused lane failing before the node
sent anything is :class:`StaleLane`, and the execution is sent again on a fresh stream (the
node never ran it: a node runs an execution only once it read its start, and then it sends
events or fails the stream with a status, never a clean end).
"""

from __future__ import annotations

import atexit
import threading
from collections import deque
from collections.abc import Iterator
from typing import Protocol

import grpc

from agentsessions.wire.gen import common_pb2, harness_pb2
from agentsessions.wire.inlinestream import open_stream

IDLE_PER_ADDRESS = 4
"""Lanes kept open per node while no execution uses them (each holds a node's worker)."""


class StaleLane(Exception):
    """A reused lane failed before its node took the start: send it again on a fresh one.
    Never escapes the wire package."""


class Link(Protocol):
    """One execution's way to a node: frames out, events in (an iterator of ``Event``)."""

    reused: bool

    def send(self, frame: harness_pb2.ControllerFrame) -> None:
        """Queue ``frame`` for the node."""

    def __iter__(self) -> Iterator[common_pb2.Event]:
        """The node's events."""

    def __next__(self) -> common_pb2.Event:
        """The node's next event (StopIteration at the stream's end)."""

    def leftover(self) -> int:
        """Events received and not read yet."""

    def close(self, clean: bool) -> None:
        """The execution is over; ``clean``: it ended by the protocol, the stream is sound."""


_SERVICE = harness_pb2.DESCRIPTOR.services_by_name["Harness"]
CONNECT = f"/{_SERVICE.full_name}/Connect"
EXECUTIONS = f"/{_SERVICE.full_name}/Executions"
_FRAME = harness_pb2.ControllerFrame.SerializeToString


class ConnectLink:
    """One Connect stream: one execution, then closed."""

    reused = False

    def __init__(self, chan: grpc.Channel) -> None:
        self.call = open_stream(chan, CONNECT, _FRAME, common_pb2.Event.FromString)

    def send(self, frame: harness_pb2.ControllerFrame) -> None:
        """Send ``frame`` to the node."""
        self.call.send(frame)

    def __iter__(self) -> ConnectLink:
        return self

    def __next__(self) -> common_pb2.Event:
        return next(self.call)  # type: ignore[no-any-return]

    def leftover(self) -> int:
        """Nothing is buffered here (grpc hands out one message at a time)."""
        return 0

    def close(self, clean: bool) -> None:
        """End the stream whatever happened (a Connect carries one execution)."""
        self.call.end()


class Lane:
    """One ``Harness.Executions`` stream, used by one execution at a time."""

    def __init__(self, chan: grpc.Channel, pool: Lanes, address: str) -> None:
        self.pool = pool
        self.address = address
        self.reused = False
        self.call = open_stream(chan, EXECUTIONS, _FRAME, harness_pb2.Events.FromString)
        self._pending: deque[common_pb2.Event] = deque()

    def send(self, frame: harness_pb2.ControllerFrame) -> None:
        """Send ``frame`` to the node."""
        self.call.send(frame)

    def __iter__(self) -> Lane:
        return self

    def __next__(self) -> common_pb2.Event:
        while not self._pending:
            self._pending.extend(next(self.call).events)
        return self._pending.popleft()

    def leftover(self) -> int:
        """Events of the last batch not read yet (after END: the node broke the protocol)."""
        return len(self._pending)

    def active(self) -> bool:
        """The stream is still open, as far as this process knows."""
        return self.call.is_active()

    def close(self, clean: bool) -> None:
        """Back to the pool when ``clean``, else ended."""
        if clean and not self._pending and self.pool.give(self):
            return
        self.end()

    def end(self) -> None:
        """End the stream (the node's handler sees it close and returns)."""
        self.call.end()


class Lanes:
    """Open lanes per address, at most ``idle`` waiting in each."""

    def __init__(self, idle: int = IDLE_PER_ADDRESS) -> None:
        self.idle = idle
        self._lock = threading.Lock()
        self._free: dict[str, list[Lane]] = {}
        self._exit = False

    def take(self, address: str, chan: grpc.Channel, *, fresh: bool = False) -> Lane:
        """An idle lane to ``address`` (the most recently used), or a new one."""
        while not fresh:
            with self._lock:
                free = self._free.get(address)
                lane = free.pop() if free else None
            if lane is None:
                break
            if lane.active():
                lane.reused = True
                return lane
            lane.end()
        return Lane(chan, self, address)

    def give(self, lane: Lane) -> bool:
        """Keep ``lane`` for the next execution (False: enough are idle; end it)."""
        with self._lock:
            free = self._free.setdefault(lane.address, [])
            if self._exit or len(free) >= self.idle:
                return False
            free.append(lane)
            return True

    def waiting(self, address: str) -> tuple[Lane, ...]:
        """The idle lanes to ``address``, the next one taken last."""
        with self._lock:
            return tuple(self._free.get(address, ()))

    def close(self) -> None:
        """End every idle lane, and keep none from now on (at exit: an open stream would
        hold the interpreter's finalization in grpc)."""
        with self._lock:
            self._exit = True
            lanes = [lane for free in self._free.values() for lane in free]
            self._free.clear()
        for lane in lanes:
            lane.end()


LANES = Lanes()
# Before the interpreter joins non-daemon threads: a node served in this process (its
# handler waits on one of our idle lanes in a worker of a ThreadPoolExecutor, which
# concurrent.futures joins at that point) would otherwise hold the exit forever. The
# stdlib's own hook for this (concurrent.futures registers its join with it, earlier, so
# ours runs first); atexit runs too late for it, and stays as a fallback.
threading._register_atexit(LANES.close)  # type: ignore[attr-defined]
atexit.register(LANES.close)
