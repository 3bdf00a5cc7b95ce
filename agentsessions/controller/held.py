"""Writers a controller keeps open across turns, and what they know about their session.

A turn used to open the journal three times (``get``, ``writer``, ``read``), mint a fence
and rewrite the TAIL hint. A :class:`HeldWriter` is opened once (one lock, one fence) and
then answers the controller's state questions itself: the head and the projections (exec
state, where the latest execution began) as its inner writer's tail folded them (once per
commit: never folded again here), the metadata, and the most recent records of the commits
that pass through it. That is sound because it holds the session's lock:
no other writer can commit meanwhile, so what it folded is the whole truth past the state it
read at open. A store whose writers can be taken over from another host without a lock
(JetStream: a new writer fences the old one) says so through ``superseded()`` on its
writer: the pool asks before handing out an idle held writer, and closes a superseded one so
the next turn opens a new writer (taking the session back) on the current journal. Such a
writer is marked busy (``set_busy``) from :meth:`WriterPool.get` with ``claim`` until
:meth:`WriterPool.keep_open` parks it, so other hosts are refused while a turn runs and take
over only an idle one; a writer taken over while a turn uses it anyway (its host stalled
past their probe) fails that turn's next commit (FencedError).

:class:`WriterPool` bounds how many stay open (an LRU cap) and for how long (an idle limit,
checked whenever the pool is used), and closes them all on :meth:`WriterPool.close` or at
interpreter exit, so each leaves a fresh TAIL hint for the next open.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from agentsessions.errors import LockHeldError, UnavailableError
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.capabilities import WRITER_TAKEOVER
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.store import (
    CommitResult,
    SessionInfo,
    StateUpdate,
    Store,
    WorkingState,
    Writer,
)
from agentsessions.valueclass import replace

from .heldlimit import HeldLimit

RECENT_RECORDS = 512
"""Records a held writer keeps in memory: enough for a chat harness's tail window (50)."""
RECENT_BYTES = 96 * 1024
"""Payload bytes a parked writer keeps in memory at most (beside :data:`RECENT_RECORDS`): a
daemon holds many writers (up to its :class:`~.heldlimit.HeldLimit`), so what each keeps
between turns must be bounded by size too. A chat harness's 50-event window of ~1.3 KB
events fits; a turn that reads deeper fills the window from the store once."""
DEFAULT_KEEP = 0
"""A plain Controller closes each writer after its turn: a held writer holds the session's
lock, which would refuse other processes (a CLI command) until it is released. A long-lived
engine, the one way in to its sessions, passes ``keep_writers`` (e.g. :data:`KEEP_LONG_LIVED`)."""
KEEP_LONG_LIVED = 8
DEFAULT_IDLE_SECONDS = 30.0


class HeldWriter:
    """A session's writer plus the session state folded from every commit made through it."""

    def __init__(self, store: Store, inner: Writer, info: SessionInfo) -> None:
        self._store = store
        self.inner = inner
        self._uid = inner.uid  # asked ~10 times a turn; a writer's session never changes
        # what the pool probes before each use (None: a store no other host takes over)
        self._takeover = WRITER_TAKEOVER.of(inner)
        self._info = info
        self._update_ns = info.update_time_ns
        self._kept: SessionInfo | None = None  # info() until the next commit
        self._recent: deque[Record] = deque(maxlen=RECENT_RECORDS)
        # each recent record's event, decoded once on first read (None until then): a chat
        # turn reads the same 50-event window every turn, shifted by the 5 events it adds
        self._events: deque[dict[str, Any] | None] = deque(maxlen=RECENT_RECORDS)
        self._recent_bytes = 0  # payload bytes in the window (RECENT_BYTES at most)
        self.last_used = time.monotonic()

    # -- the Writer protocol ------------------------------------------------------------
    @property
    def uid(self) -> str:
        return self._uid

    @property
    def fence(self) -> int:
        return self.inner.fence

    @property
    def head(self) -> tuple[int, str]:
        return self.inner.head

    def hash_at(self, seq: int) -> str:
        """The chain hash of record ``seq`` ("" for none): from memory when recent."""
        if seq <= 0 or seq > self.inner.head[0]:
            return ""
        return next((r.content_hash for r in self.read(seq, seq)), "")

    def append(
        self,
        events: Sequence[Mapping[str, Any]],
        *,
        expected_last_seq: int | None = None,
        fence: int | None = None,
        commit_id: str | None = None,
        sync: bool = True,
        state: StateUpdate | None = None,
        expected_state_version: int | None = None,
    ) -> CommitResult:
        """Append through the inner writer, then fold what landed into the held state."""
        result = self.inner.append(
            events,
            expected_last_seq=expected_last_seq,
            fence=fence,
            commit_id=commit_id,
            sync=sync,
            state=state,
            expected_state_version=expected_state_version,
        )
        if not result.duplicate:
            self._fold(result.records)
        return result

    def append_records(self, records: Sequence[Record]) -> CommitResult:
        """Append already-hashed records verbatim, folding them too."""
        result = self.inner.append_records(records)
        self._fold(result.records or tuple(records))
        return result

    def sync(self) -> None:
        """Make the commits appended with ``sync=False`` durable."""
        self.inner.sync()

    def landed(self, commit_id: str) -> CommitResult | None:
        """The first result of ``commit_id`` if it landed (see Writer.landed)."""
        return self.inner.landed(commit_id)

    @property
    def state(self) -> WorkingState:
        """The working state the inner writer holds."""
        return self.inner.state

    @property
    def projection(self) -> Projection:
        """The projections the inner writer folded (its tail's: one fold per commit)."""
        return self.inner.projection

    @property
    def may_be_taken(self) -> bool:
        """Whether another host may take this writer over between turns (its store's
        writers declare WriterTakeover): only then do :meth:`superseded` and
        :meth:`set_busy` ask anything, so the pool probes no other writer."""
        return self._takeover is not None

    def superseded(self) -> bool:
        """True if another writer took the journal over since this one's last commit (a
        store without cross-host takeover never is: its lock keeps others out)."""
        takeover = self._takeover
        if takeover is None:
            return False
        try:
            return takeover.superseded()
        except UnavailableError:
            return False  # cannot tell now: the next commit's CAS still decides

    def set_busy(self, busy: bool) -> bool:
        """Tell the inner writer a turn starts (busy) or it is parked between turns (idle),
        for a store whose other hosts ask before taking a writer over (JetStream: busy
        refuses them, idle lets them take over). False when claiming it busy came after
        another host was let take it (open a new writer); always True without the capability."""
        takeover = self._takeover
        return True if takeover is None else takeover.set_busy(busy)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> HeldWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what it knows ------------------------------------------------------------------
    def info(self) -> SessionInfo:
        """The session as :meth:`Store.get` would return it, without asking the store.

        Asked several times a turn: the (frozen) answer is kept until the next commit
        changes it; one holding a snapshot (a mutable mapping) is built fresh each time."""
        kept = self._kept
        if kept is not None:
            return kept
        seq, digest = self.inner.head
        # the inner writer's tail folds each commit as it lands: read, never folded again
        p, state = self.inner.projection, self.inner.state
        info = replace(
            self._info,
            last_seq=seq,
            last_hash=digest,
            compute_state=p.compute_state,
            exec_state=p.exec_state,
            exec_seq=p.exec_seq,
            exec_id=p.exec_id,
            snapshot=dict(p.snapshot) if p.snapshot is not None else None,
            update_time_ns=self._update_ns,
            fence=max(self._info.fence, self.inner.fence),
            state_version=state.version,
            state_covers=(state.covers_from, state.covers_to),
            state_size=len(state.data),
        )
        if info.snapshot is None:
            self._kept = info
        return info

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        """Records ``from_seq..to_seq`` (0 = head): from memory when held, else the store."""
        head = self.inner.head[0]
        hi = head if to_seq <= 0 else min(to_seq, head)
        lo = max(from_seq, 1)
        if not (self._recent and self._recent[0].seq <= lo):
            self._fill(lo, head)
        if self._recent and self._recent[0].seq <= lo:
            start = lo - self._recent[0].seq
            return (self._recent[i] for i in range(start, start + max(0, hi - lo + 1)))
        return self._store.read(self.uid, lo, hi)

    def events(self, from_seq: int, to_seq: int = 0) -> list[dict[str, Any]]:
        """The events of records ``from_seq..to_seq`` (0 = head), in order.

        Within the recent window each record is decoded once, the first time it is asked
        for, and the same dict is handed out after that: events are read-only to their
        readers (as replay's shared history is). Older ones are decoded from the store."""
        head = self.inner.head[0]
        hi = head if to_seq <= 0 else min(to_seq, head)
        lo = max(from_seq, 1)
        if not (self._recent and self._recent[0].seq <= lo):
            self._fill(lo, head)
        recent, decoded = self._recent, self._events
        if not (recent and recent[0].seq <= lo):
            return [r.event for r in self._store.read(self.uid, lo, hi)]
        start = lo - recent[0].seq
        out = list(islice(decoded, start, start + max(0, hi - lo + 1)))
        for j, event in enumerate(out):
            if event is None:  # first read of this record: decode it, keep the dict
                out[j] = decoded[start + j] = recent[start + j].event
        return out  # type: ignore[return-value]  # no None is left in it

    def _fill(self, lo: int, head: int) -> None:
        """Load the window with the records before it, once: a recent read (a harness's
        history tail) that reaches back past what this writer appended costs one read of
        the store, then every later one comes from memory, however long the session."""
        first = max(1, head - RECENT_RECORDS + 1)
        if lo < first:
            return  # deeper than the window holds: the caller reads the store
        end = self._recent[0].seq - 1 if self._recent else head
        if end < first:
            return
        older = list(self._store.read(self.uid, first, end))
        if len(older) != end - first + 1:
            return  # the store answered with a gap: do not trust the window with it
        room = older[-(RECENT_RECORDS - len(self._recent)) :]
        self._recent.extendleft(reversed(room))
        self._events.extendleft([None] * len(room))
        self._recent_bytes += sum(len(r.payload) for r in room)

    def _fold(self, records: Sequence[Record]) -> None:
        """Keep what landed in the recent window (the projections are the inner writer's)."""
        self._kept = None  # the head and projections move: info() is built again
        for record in records:
            if self._recent and self._recent[-1].seq + 1 != record.seq:
                self._recent.clear()  # keep the window contiguous
                self._events.clear()
                self._recent_bytes = 0
            if len(self._recent) == RECENT_RECORDS:  # the deque drops its oldest
                self._recent_bytes -= len(self._recent[0].payload)
            self._recent.append(record)
            self._events.append(None)
            self._recent_bytes += len(record.payload)
        self._update_ns = time.time_ns()

    def trim(self) -> None:
        """Drop the oldest records of the window past :data:`RECENT_BYTES` (a parked
        writer's memory is bounded; a turn that reads deeper fills it again, once)."""
        over = self._recent_bytes - RECENT_BYTES
        if over <= 0:
            return
        recent, events = self._recent, self._events  # every parked turn drops a few: locals
        while over > 0 and len(recent) > 1:
            over -= len(recent.popleft().payload)
            events.popleft()
        self._recent_bytes = RECENT_BYTES + over


class WriterPool:
    """At most ``keep`` held writers, each closed after ``idle_seconds`` unused.

    Thread-safe: one lock guards the pool's maps, since a session's turn, another
    session's turn (LangGraph runs tasks in parallel) and another pool's
    :func:`_yield_elsewhere` may touch them at once. What may be slow is done outside it: a
    writer's ``superseded``/``set_busy`` probe (a network round trip on JetStream) and every
    close (it writes a TAIL hint). A writer is closed only after it has left the maps.
    """

    def __init__(
        self,
        store: Store,
        keep: int = DEFAULT_KEEP,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        limit: HeldLimit | None = None,
    ) -> None:
        self.store = store
        self.keep = keep
        self.idle_seconds = idle_seconds
        self.limit = limit  # the engine's bound over all its pools (None: this pool's keep)
        self.opened = 0  # writers opened so far (each one lock and one fence)
        self._lock = threading.Lock()  # guards the maps below (never held across I/O)
        self._held: OrderedDict[str, HeldWriter] = OrderedDict()
        self._busy: dict[str, int] = {}  # uid -> turns using its writer right now
        _POOLS.add(self)
        # at interpreter exit too (finalize's default): each close leaves a fresh TAIL hint
        self._finalizer = weakref.finalize(self, _close_all, self._held)

    @contextlib.contextmanager
    def using(self, uid: str) -> Iterator[None]:
        """Mark ``uid``'s writer in use (another pool may not take it meanwhile)."""
        self.use(uid)
        try:
            yield
        finally:
            self.done_using(uid)

    def use(self, uid: str) -> None:
        """:meth:`using` without a context manager (a turn's path: one generator less); each
        call is paired with one :meth:`done_using`."""
        with self._lock:
            self._busy[uid] = self._busy.get(uid, 0) + 1

    def done_using(self, uid: str) -> None:
        """The end of one :meth:`use` of ``uid``'s writer."""
        with self._lock:
            left = self._busy[uid] - 1
            if left:
                self._busy[uid] = left
            else:
                del self._busy[uid]

    def get(self, uid: str, *, claim: bool = False) -> HeldWriter | None:
        """The held writer of ``uid``, if one is open (marked as just used). An idle one
        that another host's writer superseded is closed instead (None: open a new one).

        ``claim``: a turn is about to use it, so mark it busy first (other hosts are then
        refused, not let take it over); one another host was let take meanwhile is closed
        the same way. Busy before the superseded read, so no takeover slips in between. A
        claim is made within :meth:`using` (so no other pool nor the idle limit closes the
        writer between the claim and the turn): idle then means no other turn uses it."""
        with self._lock:
            expired = self._expired() if self._held else ()
            held = self._held.get(uid)
            idle = self._busy.get(uid, 0) <= (1 if claim else 0)
            # nothing to probe when a turn uses it, or when no other host can take it over
            settled = held is not None and (not idle or not held.may_be_taken)
            if held is not None and settled:
                self._held.move_to_end(uid)
                held.last_used = time.monotonic()
        for writer in expired:  # closed outside the lock: a close writes a TAIL hint
            writer.close()
        if held is None or settled:
            return held
        if (claim and not held.set_busy(True)) or held.superseded():
            self._drop(held)
            return None
        with self._lock:
            if self._held.get(uid) is not held:  # released meanwhile: open a new one
                return None
            self._held.move_to_end(uid)
            held.last_used = time.monotonic()
        return held

    def open(self, uid: str) -> HeldWriter:
        """Open ``uid``'s writer (LockHeldError if busy) and read its state once.

        A writer that another pool of this process holds idle is released first: holding
        one is only an optimisation, never a reason to refuse a caller in the same process
        (two controllers over one home, as tests and embedders make them).
        """
        try:
            inner = self.store.writer(uid)
        except LockHeldError:
            if not _yield_elsewhere(uid, self):
                raise
            inner = self.store.writer(uid)
        try:
            info = self.store.get(uid)
            if (info.last_seq, info.last_hash) != inner.head:  # read what the lock protects
                info = replace(info, last_seq=inner.head[0], last_hash=inner.head[1])
        except BaseException:
            inner.close()
            raise
        with self._lock:
            self.opened += 1
        return HeldWriter(self.store, inner, info)

    def keep_open(self, held: HeldWriter) -> None:
        """Keep ``held`` for the next turn, or close it when the pool keeps none. Called
        within the turn's :meth:`using`, so that nothing closes it before it is kept."""
        if self.keep <= 0:
            held.close()
            return
        with self._lock:
            parked = self._busy.get(held.uid, 0) <= 1  # no other turn uses it
        if parked:  # parked: another host may take it over until claimed
            held.set_busy(False)
            held.trim()
        evicted = []
        with self._lock:
            self._held[held.uid] = held
            self._held.move_to_end(held.uid)
            over = len(self._held) - self.keep
            if over > 0:  # the least recently used idle ones: a turn's writer stays
                idle = [u for u in self._held if u not in self._busy]
                evicted = [self._held.pop(u) for u in idle[:over]]
        for oldest in evicted:
            oldest.close()
        if self.limit is not None:
            self.limit.parked(self, held.uid)

    def release(self, uid: str) -> None:
        """Close ``uid``'s held writer (its lock is free afterwards); no-op if none."""
        with self._lock:
            held = self._held.pop(uid, None)
        if held is not None:
            held.close()

    def release_idle(self, uid: str) -> bool:
        """Close ``uid``'s held writer if no turn of this pool uses it; True if one was."""
        with self._lock:
            if uid in self._busy:
                return False
            held = self._held.pop(uid, None)
        if held is None:
            return False
        held.close()
        return True

    def discard(self, held: HeldWriter) -> None:
        """Close a writer whose turn failed, so the next one re-opens and re-validates."""
        self._drop(held)

    def _drop(self, held: HeldWriter) -> None:
        """Take ``held`` out of the pool if it is still there, then close it."""
        with self._lock:
            if self._held.get(held.uid) is held:
                del self._held[held.uid]
        held.close()

    def close(self) -> None:
        """Close every held writer (each writes its TAIL hint as it closes)."""
        with self._lock:
            writers = list(self._held.values())
            self._held.clear()
        for writer in writers:
            with contextlib.suppress(Exception):  # one that fails does not keep the others
                writer.close()

    def _expired(self) -> list[HeldWriter]:
        """Take the writers idle past the limit out of the pool (the caller holds the lock
        and closes them after it): a writer a turn uses is never idle, however long."""
        limit = time.monotonic() - self.idle_seconds
        if len(self._held) == 1:  # an engine's controller holds one: no list to build
            ((uid, held),) = self._held.items()
            if held.last_used >= limit or uid in self._busy:
                return []
            return [self._held.pop(uid)]
        stale = [u for u, h in self._held.items() if h.last_used < limit and u not in self._busy]
        return [self._held.pop(u) for u in stale]


_POOLS: weakref.WeakSet[WriterPool] = weakref.WeakSet()


def _yield_elsewhere(uid: str, asking: WriterPool) -> bool:
    """Release ``uid``'s writer where another pool holds it idle; True if one did."""
    return any(pool.release_idle(uid) for pool in list(_POOLS) if pool is not asking)


def _close_all(held: OrderedDict[str, HeldWriter]) -> None:
    while held:
        _uid, writer = held.popitem(last=False)
        with contextlib.suppress(Exception):  # best effort at exit; the lock goes anyway
            writer.close()
