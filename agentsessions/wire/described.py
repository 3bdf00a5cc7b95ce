"""Remote harnesses' descriptors, kept while the connection that answered stays up.

A turn on a remote harness asked for its descriptor twice (the placement check, then the
controller's instance), each a Describe round trip: about a third of a short remote turn.
A descriptor is a property of the process serving the address, so it is kept per address
for as long as the channel stays READY: a node that stops or restarts drops the connection,
the channel leaves READY, and the next turn asks again (a restarted node then tells its new
``history_node`` too). The channel reports its state on a thread of its own, so a turn that
starts in the instant between a node's death and that report may use the old descriptor;
its Connect then reaches the new process or fails UNAVAILABLE, as it would have anyway.
``describe(address)`` of :mod:`.harnessclient` (``GetHarness(observe=true)``) always asks.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from agentsessions.wire.gen import harness_pb2


@dataclass
class _Entry:
    """One address: whether its channel is READY, and the descriptor it answered then."""

    ready: bool = False
    reply: harness_pb2.HarnessDescriptor | None = None


_LOCK = threading.Lock()
_ENTRIES: dict[str, _Entry] = {}
_WATCHING: list[tuple[grpc.Channel, Callable[[grpc.ChannelConnectivity], None]]] = []


def described(
    address: str, chan: grpc.Channel, ask: Callable[[], harness_pb2.HarnessDescriptor]
) -> harness_pb2.HarnessDescriptor:
    """The descriptor of the harness at ``address``: the one kept while ``chan`` stayed
    READY, else ``ask()``'s (kept if the channel is READY by then)."""
    with _LOCK:
        entry = _ENTRIES.get(address)
        if entry is None:
            entry = _ENTRIES[address] = _Entry()
            watch = True
        else:
            watch = False
            if entry.reply is not None:
                return entry.reply
    if watch:  # called at once with the current state, then on every change
        _watch(chan, entry)
    reply = ask()
    with _LOCK:
        if entry.ready:
            entry.reply = reply
    return reply


def forget(address: str) -> None:
    """Ask the harness at ``address`` again next time (it answered something unexpected)."""
    with _LOCK:
        entry = _ENTRIES.get(address)
        if entry is not None:
            entry.reply = None


def _watch(chan: grpc.Channel, entry: _Entry) -> None:
    def changed(state: grpc.ChannelConnectivity) -> None:
        with _LOCK:
            entry.ready = state == grpc.ChannelConnectivity.READY
            if not entry.ready:
                entry.reply = None

    if not _WATCHING:
        atexit.register(_unwatch)
    _WATCHING.append((chan, changed))
    chan.subscribe(changed, try_to_connect=False)


def _unwatch() -> None:
    """At exit, close every watched channel: one whose state is still polled when the
    interpreter finalizes it leaves the process hanging in grpc's finalizers."""
    while _WATCHING:
        chan, callback = _WATCHING.pop()
        chan.unsubscribe(callback)
        chan.close()
