"""The writer of one file-backed session, and how committed frames become records.

A :class:`FileWriter` holds the session's LOCK and a fresh fence (the store opens it, after
recovery). It appends groups to the session's segment log, keeps the tail state (head,
projections, commit ids) and leaves the TAIL hint: evidence of the acknowledged head, so it
names durable commits only (see :meth:`FileWriter.append` with ``sync=False``).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agentsessions.errors import InvalidArgumentError, JournalCorruptError, StorageError
from agentsessions.journal.crypto.cipher import BLOB_OVERHEAD, SessionCipher, keyless_refusal
from agentsessions.journal.format import canonical, segment, staterecord
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.lock import SessionLock
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.appending import NOTHING_HELD, ChainWriter
from agentsessions.journal.stores.file.crypt import LazyCipher
from agentsessions.journal.stores.file.rows import session_row
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.stores.projection import Projection
from agentsessions.journal.stores.store import (
    CommitResult,
    SessionInfo,
    SessionMeta,
    WorkingState,
)
from agentsessions.journal.stores.tail import Tail
from agentsessions.valueclass import replace

if TYPE_CHECKING:
    from agentsessions.journal.stores.file.watch import Watcher

HINT_EVERY_COMMITS = 64
"""A writer rewrites its TAIL hint (unsynced) every this many commits, and when it closes."""


class WriterOwner(Protocol):
    """What a writer uses of the store that opened it (:class:`FileStore
    <agentsessions.journal.stores.file.store.FileStore>`, which imports this module: naming
    the store by this Protocol keeps the import one way)."""

    @property
    def max_commit_bytes(self) -> int:
        """The largest commit the store accepts, in bytes."""
        ...

    @property
    def fs(self) -> FileSystem:
        """The store's durability primitives (injectable for crash tests)."""
        ...


class FileWriter(ChainWriter):
    """The single writer of one file-backed session (holds its LOCK and a fresh fence)."""

    def __init__(
        self,
        store: WriterOwner,
        sdir: SessionDir,
        meta: SessionMeta,
        log: SegmentLog,
        tail: Tail,
        fence: int,
        lock: SessionLock,
        cipher: SessionCipher | None = None,
    ) -> None:
        self._store = store
        self._cipher = cipher  # an encrypted session's: EVENT payloads are sealed records
        self._dir = sdir
        self.meta = meta
        self._log = log
        self._tail = tail
        self._fence = fence
        self._held = NOTHING_HELD  # the LOCK is held as long as the writer is
        self._lock = lock
        self._since_hint = 0
        # Commits landed with sync=False wait for the next sync. At open the tail may hold
        # commits a dead writer landed unsynced, so nothing is known durable until a sync.
        self._unsynced = True

    @property
    def uid(self) -> str:
        return self.meta.uid

    @property
    def head(self) -> tuple[int, str]:
        return self._tail.last_seq, self._tail.last_hash

    @property
    def state(self) -> WorkingState:
        """The working state as of the last commit (loaded when the writer opened)."""
        return self._tail.state

    @property
    def projection(self) -> Projection:
        """The projections folded from every commit through the head (the tail's)."""
        return self._tail.projection

    def info(self) -> SessionInfo:
        """The session as :meth:`FileStore.get` returns it, from what this writer holds
        (it holds the lock: no one else can have committed since it opened)."""
        return session_row(self._dir, self.meta, self._tail)

    def sync(self) -> None:
        """Make every commit landed with ``sync=False`` durable (see :meth:`Writer.append`)."""
        self._check_open()
        if self._unsynced:
            self._log.sync()
            self._unsynced = False

    def write_hint(self) -> None:
        """Persist the tail position and state so the next open reads only what follows.

        The hint is evidence of the acknowledged head (journal/format/evidence.py): it may
        only name durable commits, so unsynced ones are synced first."""
        self.sync()
        self._dir.write_hint(self._store.fs, self._log.position, self._tail)
        self._since_hint = 0

    def close(self) -> None:
        if not self._lock.held:
            return
        try:
            with contextlib.suppress(StorageError):
                self.write_hint()
            self._log.close()
        finally:
            self._lock.release()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if not self._lock.held:
            raise InvalidArgumentError(f"session {self.uid}: this writer was closed")

    @property
    def _max_commit_bytes(self) -> int:
        return self._store.max_commit_bytes

    def _open_tail(self) -> Tail:
        self._check_open()
        return self._tail

    def _land(
        self,
        records: list[Record],
        events: Sequence[Mapping[str, Any]] | None,
        cid: str | None,
        state: WorkingState | None,
        fence: int,
        sync: bool,
    ) -> CommitResult:
        frames: list[tuple[int, int, int, bytes]] = []
        seq, fence = (
            (records[0].seq, records[0].fence) if records else (self._tail.last_seq + 1, fence)
        )
        if cid is not None:
            frames.append((segment.RTYPE_COMMIT, seq, fence, cid.encode()))
        if state is not None:  # the state leads its events: one group, one commit point
            frames.append((segment.RTYPE_STATE, seq, fence, self._state_payload(state)))
        c = self._cipher
        frames.extend(
            (segment.RTYPE_EVENT, r.seq, r.fence, r.payload if c is None else c.seal(r))
            for r in records
        )
        last = records[-1].content_hash if records else None  # sealed: not hashed again
        first, start = self._log.append_frames(
            frames, carry=self._tail.to_json, sync=sync, last_hash=last, encrypted=c is not None
        )
        self._unsynced = not sync
        where = None
        if state is not None:  # the STATE frame follows the group's COMMIT frame, if any
            where = (first, start + (_framed(frames[0][3]) if cid is not None else 0), seq)
        result = self._tail.advance(records, events, cid, state, fence=fence, at=where)
        self._since_hint += 1
        if sync and self._since_hint >= HINT_EVERY_COMMITS:
            with contextlib.suppress(StorageError):
                self.write_hint()
        return result

    def _state_payload(self, state: WorkingState) -> bytes:
        """The STATE frame of ``state``, bound to the head it follows, naming its previous."""
        t = self._tail
        record = staterecord.StateRecord(
            state.version, state.data, state.covers_from, state.covers_to, state.author,
            state.time_ns, t.last_seq, t.last_hash, t.state_at,
        )  # fmt: skip
        if self._cipher is not None:  # an encrypted store's state bytes are a sealed blob
            record = replace(record, data=self._cipher.seal_state(record))
        return staterecord.encode(record)


def _framed(payload: bytes) -> int:
    """Bytes a frame of ``payload`` takes in a segment (header, payload, padding)."""
    return segment.FRAME_HEADER_SIZE + len(payload) + (-len(payload) % segment.FRAME_ALIGN)


def working_state(record: staterecord.StateRecord) -> WorkingState:
    """The WorkingState a STATE record holds."""
    return WorkingState(
        record.version, record.data, record.covers_from, record.covers_to, record.author,
        record.time_ns,
    )  # fmt: skip


def fold_frames(
    tail: Tail, frames: Sequence[segment.Frame], cipher: SessionCipher | LazyCipher | None = None
) -> None:
    """Advance ``tail`` over committed frames (EVENT, COMMIT, STATE) read back from segments.

    ``cipher`` opens sealed EVENT frames (an encrypted session's). A STATE frame must be
    bound to the chain where it lies (JournalCorruptError if not). An encrypted store's
    STATE data is not opened here: the tail keeps its plaintext size and no bytes, and the
    state is read from its frame when needed (``statefile.load``), so a fold needs no key
    for a state-only commit."""
    group: list[Record] = []
    commit_id: str | None = None
    state: tuple[WorkingState, staterecord.Where, int] | None = None
    sealed_state = cipher is not None and cipher.sealed_state
    prev = tail.last_hash
    for frame in frames:
        if frame.rtype == segment.RTYPE_COMMIT:
            commit_id = frame.payload.decode("utf-8", "replace")
        elif frame.rtype == segment.RTYPE_STATE:
            why = staterecord.binding_problem(frame.payload, frame.seq, prev)
            if why:
                raise JournalCorruptError(
                    f"session journal: damaged journal at offset {frame.offset} of segment "
                    f"{frame.segment:016x}: {why}", seq=frame.seq, offset=frame.offset,
                    reason=why, hint="run `agentsessions verify` on the session",
                )  # fmt: skip
            record = staterecord.decode(frame.payload)
            size = len(record.data)
            if sealed_state:
                record, size = replace(record, data=b""), max(size - BLOB_OVERHEAD, 0)
            state = (working_state(record), (frame.segment, frame.offset, frame.seq), size)
        elif frame.rtype == segment.RTYPE_EVENT:
            record_ = frame_record(frame, prev, cipher)
            group.append(record_)
            prev = record_.content_hash
        if frame.flags & segment.FLAG_GROUP_END:
            if group or state:
                _fold_group(tail, group, commit_id, state, frame.fence)
            group, commit_id, state = [], None, None  # a COMMIT-only group names nothing
    if group or state:
        _fold_group(tail, group, commit_id, state, 0)


def _fold_group(
    tail: Tail,
    group: list[Record],
    commit_id: str | None,
    state: tuple[WorkingState, staterecord.Where, int] | None,
    fence: int,
) -> None:
    if state is None:
        tail.advance(group, None, commit_id)
    else:
        tail.advance(group, None, commit_id, state[0], fence=fence, at=state[1])
        tail.state_size = state[2]  # the plaintext's size (a sealed state's data is not kept)


def frame_record(
    frame: segment.Frame, prev: str, cipher: SessionCipher | LazyCipher | None = None
) -> Record:
    """The record an EVENT frame holds (``prev`` is not checked here: verify does that);
    a sealed one is opened by ``cipher`` (SessionKeyError, exit 26, without one)."""
    if frame.flags & segment.FLAG_ENCRYPTED:
        if cipher is None:
            raise keyless_refusal(frame)
        return cipher.open(frame)
    _body, prev_hash, _seq = canonical.split_envelope(frame.payload)
    digest = hashlib.sha256(frame.payload).hexdigest()
    return Record(frame.seq, prev_hash, digest, frame.fence, frame.payload)


def frame_records(
    log: SegmentLog,
    frames: Iterator[segment.Frame],
    *,
    close: bool,
    cipher: SessionCipher | None = None,
) -> Iterator[Record]:
    """The records of ``frames`` read from ``log`` (closed after them when ``close``);
    ``cipher`` opens sealed ones."""
    try:
        for frame in frames:
            yield frame_record(frame, "", cipher)
    finally:
        if close:
            log.close()


def follow_records(
    log: SegmentLog,
    watcher: Watcher,
    next_seq: int,
    idle_timeout: float | None,
    cipher: SessionCipher | None = None,
) -> Iterator[Record]:
    """Records of ``log`` from ``next_seq`` on, then each one as it commits, sleeping on
    ``watcher`` between looks; stops after ``idle_timeout`` seconds without one (None:
    never). What counts as committed is the log's refresh alone, so a record is never
    yielded twice, skipped, or before its group commits. Closes the watcher and the log."""
    try:
        idle_since = time.monotonic()
        while True:
            found = False
            for record in frame_records(log, log.read(next_seq, 0), close=False, cipher=cipher):
                yield record
                next_seq = record.seq + 1
                found = True
            if found:
                idle_since = time.monotonic()
                watcher.progress()
            left = None if idle_timeout is None else idle_timeout - (time.monotonic() - idle_since)
            if left is not None and left <= 0:
                return
            watcher.wait(left)
            log.refresh()
    finally:
        watcher.close()
        log.close()
