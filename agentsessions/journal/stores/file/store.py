"""The embedded default store: one directory of append-only segment files per session.

Layout under the store's home (``docs/FORMAT.md`` has the byte-level details)::

    catalog.sqlite3              listing index (rebuildable from the session directories)
    claims/<digest>              a key bound to a session uid (:mod:`.claims`)
    sessions/<uid>/session.json  immutable metadata, written before any event
    sessions/<uid>/LOCK          flock of the single writer, with the holder's identity
    sessions/<uid>/FENCE         the current fence, minted in place by every writer open
    sessions/<uid>/TAIL          hint: the tail position and state, so opens read only the tail
    sessions/<uid>/DELETED       marker of a soft delete; present = no more writes
    sessions/<uid>/journal/      segment files (see :mod:`agentsessions.journal.format.segmentlog`)
    sessions/<uid>/components/   the session's component (tool) stores (:mod:`.component`)

Its jobs apart from reading and writing sessions are mixins of their own: making session
directories (:mod:`.making`), listing them (:mod:`.listing`), the host's files beside a
journal (:mod:`.host`).

Invariants: a session directory appears atomically (built under ``sessions/.tmp-*`` and
renamed, then ``sessions/`` fsync'd: :mod:`.making`); a commit is acknowledged only after
its group is fdatasync'd; the TAIL hint is never trusted, only validated against the
segment it names, so it needs no fsync; the catalog changes only on create and delete.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import (
    NotFoundError,
)
from agentsessions.journal.format import fencefile
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem
from agentsessions.journal.format.lock import SessionLock
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segment import SEGMENT_MAX
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores import metafile
from agentsessions.journal.stores.capabilities import (
    CancelRequests,
    KeyManagement,
    ProjectIndex,
    Reindexable,
    SealedExport,
    SessionFiles,
    ToolReceipts,
    Workloads,
)
from agentsessions.journal.stores.claims import ClaimKey, KeyClaims
from agentsessions.journal.stores.file import component as filecomponent
from agentsessions.journal.stores.file import crypt as filecrypt
from agentsessions.journal.stores.file import statefile, watch
from agentsessions.journal.stores.file.claims import FileClaims
from agentsessions.journal.stores.file.component import FileComponentStore
from agentsessions.journal.stores.file.crypt import LazyCipher, cipher_for
from agentsessions.journal.stores.file.host import HostFiles
from agentsessions.journal.stores.file.listing import SessionListing
from agentsessions.journal.stores.file.making import SessionMaking
from agentsessions.journal.stores.file.opening import Opening, open_tail
from agentsessions.journal.stores.file.rows import session_row
from agentsessions.journal.stores.file.sessiondir import (
    SessionDir,
    acked,
    cancel_reason_at,
    cancel_request_at,
    json_bytes,
)
from agentsessions.journal.stores.file.writer import (
    FileWriter,
    follow_records,
    frame_record,
)
from agentsessions.journal.stores.store import (
    DEFAULT_MAX_COMMIT_BYTES,
    SessionInfo,
    SessionMeta,
    WorkingState,
    check_component,
    deleted_error,
)
from agentsessions.v1.ids import check_uid
from agentsessions.valueclass import value

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey, RewrapCount


@value(frozen=True)
class StoreOptions:
    """Tunables of a file store; tests shrink them to exercise rotation and limits."""

    max_commit_bytes: int = DEFAULT_MAX_COMMIT_BYTES
    segment_max_bytes: int = SEGMENT_MAX  # sealed segments are compressed
    follow_poll_seconds: float = 0.5  # the polling fallback's longest sleep (no inotify)


class FileStore(
    # the mixins first: their methods, not the Protocols' stubs, implement the capabilities
    HostFiles,
    SessionMaking,
    SessionListing,
    SessionFiles,
    CancelRequests,
    ToolReceipts,
    Workloads,
    ProjectIndex,
    Reindexable,
    SealedExport,
    KeyManagement,
    KeyClaims,
):
    """Sessions as directories of segment files under ``home`` (its capabilities: its bases)."""

    def __init__(
        self,
        home: Path | str,
        *,
        options: StoreOptions | None = None,
        fs: FileSystem = DEFAULT_FS,
        read_only: bool | None = None,
        master: MasterKey | None = None,
    ) -> None:
        """Open (creating it if need be) the store under ``home``.

        ``read_only``: None decides by whether ``home`` can be written (see
        :meth:`~.listing.SessionListing._open_listing`): a read-only home's reads work and
        every write raises StorageError (exit 13) naming it. ``master``: sessions created
        are encrypted, and encrypted ones read (file/crypt.py).
        """
        self.master = master
        self.options = options or StoreOptions()
        self.max_commit_bytes = self.options.max_commit_bytes
        self.opening = Opening(fs, self.options.segment_max_bytes, master)  # opens use it
        self._cancel_paths: dict[str, str] = {}  # uid -> its CANCEL path, built once
        self._workload_paths: dict[str, str] = {}  # uid -> its WORKLOAD path, built once
        self._workloads: dict[str, tuple[tuple[int, int, int], str]] = {}  # uid -> (id, text)
        self.last_watcher: watch.Watcher | None = None  # the newest follow's (tests count)
        self._open_listing(home, fs, read_only)  # home, sessions_dir, read_only, the catalog
        self.claims = FileClaims(self.home, fs, read_only=self.read_only)
        self._parents_synced = False  # see _sync_parents_once

    def get(self, uid: str) -> SessionInfo:
        sdir = self._dir(uid)
        meta = sdir.read_meta()
        tail, _position, _log = open_tail(sdir, meta, self.opening)
        _log.close()
        return session_row(sdir, meta, tail)

    def delete(self, uid: str) -> SessionInfo:
        sdir = self._dir(uid)
        self.check_writable(f"delete session {uid}")
        lock = SessionLock(sdir.lock_file, session=uid)
        lock.acquire()
        try:
            parts = filecomponent.lock_all(sdir)  # its tool stores go with it
            try:
                if not sdir.is_deleted():
                    stamp = json_bytes({"deleted_unix_ns": time.time_ns()})
                    self.fs.write_file_atomic(sdir.deleted_file, stamp)
            finally:
                for part in parts:
                    part.release()
            self.catalog.mark_deleted(uid)
        finally:
            lock.release()
        return self.get(uid)

    def writer(self, uid: str) -> FileWriter:
        sdir = self._dir(uid)
        found = metafile.read(sdir.path)
        meta = found.meta
        sdir.check_parent(meta)
        self.check_writable(f"write session {uid}")
        lock = SessionLock(sdir.lock_file, session=uid)
        lock.acquire()
        try:
            if sdir.is_deleted():
                raise deleted_error(uid)
            if not found.summed:
                self._add_sums(sdir, meta)
            tail, proved, log = open_tail(sdir, meta, self.opening, writable=True)
            # a second durable copy of the acknowledged head (FORMAT.md 14), in a sync paid anyway
            fence = fencefile.mint(self.fs, sdir.fence_file, tail.max_fence, proved)
            cipher = cipher_for(sdir.path, meta, self.master)
            return FileWriter(self, sdir, meta, log, tail, fence, lock, cipher)
        except BaseException:
            lock.release()
            raise

    def _add_sums(self, sdir: SessionDir, meta: SessionMeta) -> None:
        """Give a ``session.json`` written before checksums existed its ``sums`` (under the
        writer's lock, atomically and durably), once the index's independent copy of its
        project and creation time agrees: a file damaged meanwhile is refused, not blessed."""
        indexed = self.catalog.entry(meta.uid)  # None: no row (a crash before indexing)
        held = (meta.project, meta.create_time_ns)
        names = ("project", "create_time_ns")
        for field, mine, theirs in zip(names, held, indexed or held, strict=True):
            if mine != theirs:
                raise metafile.damaged(
                    sdir.path, sdir.meta_file,
                    f"has a {field!r} of {mine!r}, but the index holds {theirs!r} (a file "
                    "from before checksums: the index is the other copy)",
                    field,
                )  # fmt: skip
        self.fs.write_file_atomic(sdir.meta_file, metafile.meta_bytes(meta))

    def read(self, uid: str, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        sdir = self._dir(uid)
        meta = sdir.read_meta()
        if from_seq <= meta.fork_seq:  # the prefix is read from the parent: it must be there
            sdir.check_parent(meta)
        hint = sdir.read_hint()[0]
        log, _scan = SegmentLog.open(
            sdir.journal, session_id=uid, writable=False, fs=self.fs, resume=hint,
            acked=acked(hint),
        )  # fmt: skip
        cipher = cipher_for(sdir.path, meta, self.master)
        # read in bulk (a sealed record is opened by cipher); the log closes after them
        own = log.records(lambda f: frame_record(f, "", cipher), from_seq, to_seq, close=True)
        if not meta.parent_uid or from_seq > meta.fork_seq:
            return own
        upto = meta.fork_seq if to_seq <= 0 else min(to_seq, meta.fork_seq)
        prefix = (
            self.read(meta.parent_uid, from_seq, upto) if upto >= max(from_seq, 1) else iter(())
        )
        return itertools.chain(prefix, own)

    def state(self, uid: str, before_seq: int = 0) -> WorkingState:
        """The working state (as of before seq ``before_seq``, when given), read-only."""
        sdir = self._dir(uid)
        return self.state_in(sdir, sdir.read_meta(), before_seq)

    def states(self, uid: str) -> Iterator[tuple[int, WorkingState]]:
        """Every working-state version in commit order: the STATE frames of one strict
        read of the journal (each checked against the chain where it lies)."""
        sdir = self._dir(uid)
        meta = sdir.read_meta()
        hint = sdir.read_hint()[0]
        log, _scan = SegmentLog.open(
            sdir.journal, session_id=uid, writable=False, fs=self.fs, resume=hint,
            acked=acked(hint),
        )  # fmt: skip
        return statefile.states(log, LazyCipher(sdir.path, meta, self.master).state_data)

    def state_in(
        self, sdir: SessionDir, meta: SessionMeta, before_seq: int = 0, scope: str = ""
    ) -> WorkingState:
        """The working state of the journal in ``sdir`` (a session's or a component
        store's, whose key's ``scope`` is ``uid/tool``), read-only: the tail state's STATE
        frame, or stepping back from it (opened with the key when sealed)."""
        tail, _position, log = open_tail(sdir, meta, self.opening, scope=scope)
        opener = LazyCipher(sdir.path, meta, self.master, scope).state_data
        try:
            if before_seq > 0:
                return statefile.before(log, tail, before_seq, opener)
            statefile.load(log, tail, opener)
            return tail.state
        finally:
            log.close()

    def follow(
        self, uid: str, from_seq: int = 1, *, idle_timeout: float | None = None
    ) -> Iterator[Record]:
        """Records from ``from_seq`` on, then each one another process commits.

        A forked child's follow first reads the parent's prefix (seq <= fork_seq, which
        never changes), then the child's own journal. Between looks it sleeps on a
        :mod:`~agentsessions.journal.stores.file.watch` watcher (inotify on Linux), not a busy poll;
        what counts as committed is decided by the segment log's refresh alone, so a
        record is never yielded twice, skipped, or yielded before its group commits.
        """
        sdir = self._dir(uid)
        meta = sdir.read_meta()
        cipher = cipher_for(sdir.path, meta, self.master)
        next_seq = max(from_seq, 1)
        if meta.parent_uid and next_seq <= meta.fork_seq:
            for record in self.read(meta.parent_uid, next_seq, meta.fork_seq):
                yield record
                next_seq = record.seq + 1
            next_seq = max(next_seq, meta.fork_seq + 1)
        # the watch exists before the first read: a commit after that read wakes us
        watcher = watch.open_watcher(
            sdir.journal, poll_max_seconds=self.options.follow_poll_seconds
        )
        try:
            hint = sdir.read_hint()[0]  # resume from it, as read() does: no scan of the tail
            log, _scan = SegmentLog.open(
                sdir.journal, session_id=uid, writable=False, fs=self.fs, resume=hint,
                acked=acked(hint) if hint is not None else sdir.hint_evidence(),
            )  # fmt: skip
        except BaseException:
            watcher.close()
            raise
        self.last_watcher = watcher  # lets a test count an idle follower's wakeups
        yield from follow_records(log, watcher, next_seq, idle_timeout, cipher)

    # -- encryption at rest (file/crypt.py) ---------------------------------------------
    def sealed_export(self, uid: str) -> tuple[dict[str, object], Iterator[Record]]:
        """What ``export --ciphertext`` ships of encrypted session ``uid``: its wrapped
        ``KEY`` and its sealed records as stored (``file/crypt.py``'s ``sealed_export``)."""
        return filecrypt.sealed_export(self, uid)

    def check_shreddable(self, uid: str) -> None:
        """InvalidArgumentError unless ``uid`` is an encrypted session (it has a KEY)."""
        filecrypt.check_shreddable(self, uid)

    def shred(self, uid: str) -> bool:
        """Destroy ``uid``'s KEY files for good (``file/crypt.py``'s ``shred``)."""
        return filecrypt.shred(self, uid)

    def rewrap_keys(self, old: MasterKey, new: MasterKey) -> RewrapCount:
        """Master-key rotation: rewrap every data key here from ``old`` to ``new`` (no
        journal byte moves; a wrong ``old`` changes nothing; keys already wrapped by ``new``
        and shredded ones are skipped and counted: ``file/crypt.py``'s ``rewrap_keys``)."""
        return filecrypt.rewrap_keys(self, old, new)

    def session_dir(self, uid: str) -> Path:
        """The directory that holds one session (for offline tools such as verify), even when
        its ``session.json`` is damaged or missing: verify reports that as damage."""
        sdir = self.sessions_dir / check_uid(uid)
        if not sdir.is_dir():
            raise NotFoundError(f"session {uid} not found", hint="agentsessions list", session=uid)
        return sdir

    def component_dir(self, uid: str, name: str) -> Path:
        """The directory of session ``uid``'s tool store ``name`` (it may not exist yet)."""
        return filecomponent.components_dir(SessionDir(self.session_dir(uid))) / name

    def close(self) -> None:
        self.close_catalog()

    def __enter__(self) -> FileStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- cancel requests ----------------------------------------------------------------
    def request_cancel(self, uid: str, execution_id: str, reason: str = "") -> None:
        """Durably ask the running turn of ``execution_id`` to stop at its next effect
        boundary: a ``CANCEL`` file beside the journal naming it, and why if ``reason``
        (the canceller cannot append while the running writer holds the lock)."""
        self.check_writable("cancel")
        request = {"execution_id": execution_id, **({"reason": reason} if reason else {})}
        self.fs.write_file_atomic(self._dir(uid).cancel_file, json_bytes(request))

    def cancel_reason(self, uid: str) -> str:
        """The reason the pending ``CANCEL`` request gives ("" when none or not said)."""
        return cancel_reason_at(os.fspath(self._dir(uid).cancel_file))

    def cancel_requested(self, uid: str) -> str | None:
        """The execution id the pending ``CANCEL`` request names, or None (one ``stat``)."""
        path = self._cancel_paths.get(uid)
        if path is None:
            path = self._cancel_paths[uid] = os.fspath(
                SessionDir(self.sessions_dir / uid).cancel_file
            )
        return cancel_request_at(path)

    def clear_cancel(self, uid: str) -> None:
        """Remove the pending ``CANCEL`` request, if any (idempotent, durable)."""
        sdir = SessionDir(self.sessions_dir / uid)
        if sdir.cancel_file.exists():
            self.fs.unlink(sdir.cancel_file)
            self.fs.sync_dir(sdir.path)

    # -- key claims (:mod:`.claims`: ``claims/<digest>``) ---------------------------------
    def claim(self, key: ClaimKey, uid: str) -> str:
        """Bind ``key`` to ``uid`` unless bound; the uid bound (:class:`~..claims.KeyClaims`)."""
        return self.claims.claim(key, uid)

    def lookup(self, key: ClaimKey) -> str:
        """The uid ``key`` is bound to, "" if none."""
        return self.claims.lookup(key)

    def release(self, key: ClaimKey, uid: str) -> None:
        """Unbind ``key`` if it is still bound to ``uid``."""
        self.check_writable("release a key")
        self.claims.release(key, uid)

    # -- component stores (a tool's own journal: :mod:`.component`) -------------------
    def component(self, uid: str, name: str) -> FileComponentStore:
        """The store of component ``name`` in session ``uid`` (made on its first writer)."""
        poll = self.options.follow_poll_seconds
        return FileComponentStore(self, self._dir(uid), check_component(name), poll_seconds=poll)

    def components(self, uid: str) -> tuple[str, ...]:
        """The component stores session ``uid`` has, sorted."""
        return filecomponent.names(self._dir(uid))

    # tool receipts and workloads: :class:`.filehost.HostFiles`

    # -- internals ------------------------------------------------------------------------
    def _dir(self, uid: str) -> SessionDir:
        sdir = SessionDir(self.session_dir(uid))
        if not sdir.has_meta():
            # a session directory appears whole (built aside, renamed into place), so one
            # without its metadata is damaged store data (exit 8 naming the file), not absent
            sdir.read_meta()
        return sdir
