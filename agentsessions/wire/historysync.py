"""What a harness node holds of each session's history, and what the host believes it holds.

A Start used to carry the session's whole history, so a remote turn cost grew with the
session: the host read every record back from its journal, converted and sent it, and the
node parsed it all again, for a harness that reads the last 50 events. Now a node that
declares a ``HarnessDescriptor.history_node`` keeps, per session, the history it was sent
(:class:`NodeHistories`), and the host (:class:`SentHistories`) sends only what is new.

How the two agree. A :class:`Mark` is a point of a session's journal: the writer's fence,
a seq and the chain hash of the record at that seq. Each Start from a live run carries the
mark where its history ends (``history_head``); a node keeps the history under it. The host
remembers, per (address, node id, session), the last head a node accepted (it accepted once
it sends any event: a node checks the base before the harness runs). The next Start sends
from that mark (``history_base`` plus the events after it) only when all of these hold:

- the node answers Describe with the same id (a restarted node has a new one);
- the writer's fence is the one recorded (another controller may have written, and fed the
  node its own history, in between);
- the journal's chain hash at the mark's seq is the recorded one (the host checks its own
  journal, so a mark can never stand for another prefix: a fork is a new uid, another home
  holding the same uid holds the same chain or fails this).

Otherwise the Start is whole. The node, given a base, must hold exactly that mark for the
envelope's session, else it refuses the stream before the harness runs (FAILED_PRECONDITION,
trailer ``agentsessions-history: miss``) and the host sends the whole history on a new
stream: a node that evicted the session, or was fed by another controller, costs one more
stream set-up, never a wrong history. Nothing here is durable and nothing reaches the
journal: the harness gets the same events either way, so what the journal records and what
replay proves do not change. A streamed replay keeps its histories on the node too, under
the session's rerun key (:class:`~agentsessions.controller.replay.ReplayLineage`).

Memory on the node: at most ``sessions`` sessions and ``max_bytes`` of events (their wire
size), least recently used out; a session larger than the bound alone is not kept. Eviction
only means that session's next Start is whole.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from agentsessions.controller.spi import Lineage
from agentsessions.wire.gen import harness_pb2

TRAILER = "agentsessions-history"
"""The trailing metadata key a node sets when it refuses a Start's base; its value is MISS."""
MISS = "miss"
NODE_SESSIONS = 256
NODE_BYTES = 64 << 20
HOST_ENTRIES = 4096


class HistoryMiss(Exception):
    """A node does not hold the base a Start names. Never escapes the wire package: the
    node answers it as FAILED_PRECONDITION with the miss trailer, the host resends whole."""


@dataclass(frozen=True)
class Mark:
    """A point of a session's journal: (fence, seq, chain hash of the record at seq)."""

    fence: int
    seq: int
    hash: str

    def to_proto(self) -> harness_pb2.HistoryMark:
        """As ``HistoryMark``."""
        return harness_pb2.HistoryMark(fence=self.fence, seq=self.seq, hash=self.hash)

    @classmethod
    def of(cls, msg: harness_pb2.HistoryMark) -> Mark:
        """Ours of a ``HistoryMark``."""
        return cls(int(msg.fence), int(msg.seq), msg.hash)


def head_of(lineage: Lineage, seq: int) -> Mark | None:
    """The mark where a history of ``seq`` records ends (None for an empty one)."""
    if seq <= 0:
        return None
    digest = lineage.hash_at(seq)
    return Mark(lineage.fence, seq, digest) if digest else None


class SentHistories:
    """The host's side: the last head each node accepted, per (address, node, session)."""

    def __init__(self, size: int = HOST_ENTRIES) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._marks: OrderedDict[tuple[str, str, str], Mark] = OrderedDict()

    def base(self, key: tuple[str, str, str], lineage: Lineage, head: Mark) -> Mark | None:
        """The mark to send from, or None (send whole): see the module docstring."""
        with self._lock:
            mark = self._marks.get(key)
        if mark is None or mark.fence != head.fence or mark.seq > head.seq:
            return None
        if mark.seq != head.seq and lineage.hash_at(mark.seq) != mark.hash:
            return None
        return mark if mark.seq != head.seq or mark.hash == head.hash else None

    def accepted(self, key: tuple[str, str, str], head: Mark) -> None:
        """The node took a Start ending at ``head``: it holds that now."""
        with self._lock:
            self._marks[key] = head
            self._marks.move_to_end(key)
            while len(self._marks) > self.size:
                self._marks.popitem(last=False)

    def forget(self, key: tuple[str, str, str]) -> None:
        """Nothing is known of what the node holds (a miss, a broken stream)."""
        with self._lock:
            self._marks.pop(key, None)


@dataclass
class Held:
    """One session's history as a node keeps it: the events (shared with the runs that read
    them: the list only grows, so a run's view is bounded by its own end), their size, and
    the seq of each event's ``message`` by the object's identity (:mod:`.messagerefs`:
    a model call names a message of the history by its seq; the events keep each message
    alive, so no other object can have its id while it is held)."""

    head: Mark
    events: list[Any]
    size: int
    seqs: dict[int, int] = field(default_factory=dict)

    def index(self, first: int, events: list[Any]) -> None:
        """Note the seq of each of ``events``' messages, the first event at seq ``first``."""
        seqs = self.seqs
        for seq, event in enumerate(events, first):
            message = event.get("message")
            if message is not None:
                seqs[id(message)] = seq


@dataclass
class NodeHistories:
    """The node's side: per session, the history it was sent, bounded (see the module)."""

    sessions: int = NODE_SESSIONS
    max_bytes: int = NODE_BYTES
    node: str = field(default_factory=lambda: os.urandom(8).hex())
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _held: OrderedDict[str, Held] = field(default_factory=OrderedDict, repr=False)
    _bytes: int = 0

    def extend(self, uid: str, base: Mark, head: Mark, events: list[Any], size: int) -> list[Any]:
        """The session's history: what is held at ``base`` plus ``events`` (``size`` wire
        bytes), kept under ``head``; HistoryMiss unless exactly ``base`` is held."""
        with self._lock:
            held = self._held.get(uid)
            if held is None or held.head != base:
                raise HistoryMiss(
                    f"session {uid}: this node holds {held.head if held else 'nothing'}, not {base}"
                )
            held.index(len(held.events) + 1, events)
            held.events.extend(events)
            held.head = head
            held.size += size
            self._bytes += size
            self._keep(uid, held)
            return held.events

    def put(self, uid: str, head: Mark, events: list[Any], size: int) -> None:
        """Keep a whole history under ``head`` (replacing what the session had)."""
        with self._lock:
            self._drop(uid)
            self._bytes += size
            held = Held(head, list(events), size)
            held.index(1, events)
            self._keep(uid, held)

    def seqs(self, uid: str, head: Mark) -> dict[int, int] | None:
        """The seq of each held message of ``uid`` by its id, while ``head`` is held (None:
        it is not: evicted, or not kept at all)."""
        with self._lock:
            held = self._held.get(uid)
            return held.seqs if held is not None and held.head == head else None

    def holds(self, uid: str) -> Mark | None:
        """The mark held for ``uid`` (None: nothing)."""
        with self._lock:
            held = self._held.get(uid)
            return held.head if held else None

    def evict(self, uid: str) -> None:
        """Forget ``uid`` (its next Start is whole)."""
        with self._lock:
            self._drop(uid)

    @property
    def bytes(self) -> int:
        """The wire size of every event held."""
        return self._bytes

    def _keep(self, uid: str, held: Held) -> None:
        """Make ``uid`` the most recent, then evict least recent ones past the bounds (this
        one too if it alone is over ``max_bytes``). Called with the lock held."""
        self._held[uid] = held
        self._held.move_to_end(uid)
        while self._held and (len(self._held) > self.sessions or self._bytes > self.max_bytes):
            self._drop(next(iter(self._held)))

    def _drop(self, uid: str) -> None:
        held = self._held.pop(uid, None)
        if held is not None:
            self._bytes -= held.size
