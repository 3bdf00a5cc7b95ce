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
    sessions/<uid>/components/   the session's component (tool) stores (:mod:`.filecomponent`)

Invariants: a session directory appears atomically (built under ``sessions/.tmp-*`` and
renamed, then ``sessions/`` fsync'd); a commit is acknowledged only after its group is
fdatasync'd; the TAIL hint is never trusted, only validated against the segment it names,
so it needs no fsync; the catalog changes only on create and delete.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import itertools
import os
import secrets
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import (
    InvalidArgumentError,
    MetadataCorruptError,
    NotFoundError,
    SessionExistsError,
    StorageError,
)
from agentsessions.journal.format import fencefile
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem
from agentsessions.journal.format.lock import SessionLock
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segment import SEGMENT_MAX
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores import forking, metafile
from agentsessions.journal.stores.capabilities import (
    CancelRequests,
    KeyManagement,
    ProjectIndex,
    Reindexable,
    Reindexed,
    SealedExport,
    SessionFiles,
    ToolReceipts,
    Workloads,
)
from agentsessions.journal.stores.claims import ClaimKey, KeyClaims
from agentsessions.journal.stores.file import component as filecomponent
from agentsessions.journal.stores.file import crypt as filecrypt
from agentsessions.journal.stores.file import statefile, watch
from agentsessions.journal.stores.file.catalog import Catalog
from agentsessions.journal.stores.file.claims import FileClaims
from agentsessions.journal.stores.file.component import FileComponentStore
from agentsessions.journal.stores.file.crypt import LazyCipher, cipher_for, create_key
from agentsessions.journal.stores.file.host import HostFiles
from agentsessions.journal.stores.file.opening import Opening, open_tail
from agentsessions.journal.stores.file.rows import listed_row, session_row
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
from agentsessions.journal.stores.paging import page_ask, page_of
from agentsessions.journal.stores.store import (
    DEFAULT_MAX_COMMIT_BYTES,
    Page,
    SessionInfo,
    SessionMeta,
    WorkingState,
    check_component,
    deleted_error,
)
from agentsessions.journal.stores.tail import Tail
from agentsessions.v1.ids import check_project, check_uid

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey, RewrapCount


@dataclass(frozen=True)
class StoreOptions:
    """Tunables of a file store; tests shrink them to exercise rotation and limits."""

    max_commit_bytes: int = DEFAULT_MAX_COMMIT_BYTES
    segment_max_bytes: int = SEGMENT_MAX  # sealed segments are compressed
    follow_poll_seconds: float = 0.5  # the polling fallback's longest sleep (no inotify)


class FileStore(
    HostFiles,  # first: its methods, not the Protocols' stubs, implement ToolReceipts, Workloads
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

        ``read_only``: None decides by whether ``home`` can be written (``fs.writable``): a
        read-only home (a read-only mount, say) is opened without creating or changing any
        file, its reads work, and every write raises StorageError (exit 13) naming it.
        ``master``: sessions created are encrypted, and encrypted ones read (file/crypt.py).
        """
        self.home = Path(home)
        self.master = master
        self.options = options or StoreOptions()
        self.max_commit_bytes = self.options.max_commit_bytes
        self.fs = fs
        self.opening = Opening(fs, self.options.segment_max_bytes, master)  # opens use it
        self.sessions_dir = self.home / "sessions"
        self._cancel_paths: dict[str, str] = {}  # uid -> its CANCEL path, built once
        self._workload_paths: dict[str, str] = {}  # uid -> its WORKLOAD path, built once
        self._workloads: dict[str, tuple[tuple[int, int, int], str]] = {}  # uid -> (id, text)
        catalog_path = self.home / "catalog.sqlite3"
        self._unindexed: tuple[MetadataCorruptError, ...] = ()  # met by the last reindex
        self.last_watcher: watch.Watcher | None = None  # the newest follow's (tests count)
        self.read_only = self._decide_read_only() if read_only is None else read_only
        self.claims = FileClaims(self.home, fs, read_only=self.read_only)
        self._parents_synced = False  # see _sync_parents_once
        if self.read_only:
            self.catalog = Catalog.read_only(catalog_path) or self._scanned(catalog_path)
            return
        try:
            self.sessions_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the store at {self.home}: {exc.strerror}") from exc
        fresh_catalog = not catalog_path.exists()
        self.catalog = Catalog(catalog_path)
        if fresh_catalog and any(self._session_dirs()):
            self.reindex()

    def _decide_read_only(self) -> bool:
        """True when the store's directories (or, before they exist, the nearest existing
        directory above them) cannot be written: the catalog lives in the home, the
        sessions below it, so either one read-only makes the store read-only."""
        present = [d for d in (self.sessions_dir, self.home) if d.is_dir()]
        if present:
            return not all(self.fs.writable(d) for d in present)
        for where in self.home.parents:
            if where.is_dir():
                return not self.fs.writable(where)
        return False

    def _scanned(self, path: Path) -> Catalog:
        """An in-memory index built from the session directories (read-only homes only)."""
        catalog = Catalog.in_memory(path)
        rows, _damaged = self._scan_rows()
        catalog.rebuild(rows)
        return catalog

    def _check_writable(self, what: str) -> None:
        """Refuse a write to a read-only store before anything is attempted."""
        if self.read_only:
            raise StorageError(
                f"cannot {what}: the store at {self.home} is read-only",
                hint="use a writable home, or remount it read-write",
                param="home_read_only",
                path=str(self.home),
            )

    # -- sessions -------------------------------------------------------------------------
    def create(self, meta: SessionMeta) -> SessionInfo:
        self._check_writable(f"create session {meta.uid}")
        meta = self._make_dir(meta, None)
        self.catalog.add(meta.uid, meta.project, meta.create_time_ns)
        return SessionInfo(meta=meta, update_time_ns=meta.create_time_ns)

    def fork(
        self, parent: str, at_seq: int, children: Sequence[SessionMeta]
    ) -> builtins.list[SessionInfo]:
        self._check_writable(f"fork session {parent}")
        source = self.get(parent)
        forking.check_fork(parent, at_seq, source.last_seq, len(children))
        sdir = self._dir(parent)
        sdir.check_parent(source.meta)  # a child of a journal whose start is gone is one too
        head, _position, log = open_tail(sdir, source.meta, self.opening, check_links=True)
        log.close()
        base = forking.base_tail(lambda a, b: self.read(parent, a, b), at_seq, head)
        made: list[SessionMeta] = []
        try:
            for meta in children:
                made.append(self._make_dir(replace(meta, parent_uid=parent, fork_seq=at_seq), base))
            for meta in made:
                with self.writer(meta.uid) as w:
                    w.append([forking.fork_marker(parent, at_seq)], expected_last_seq=at_seq)
        except BaseException:
            for meta in made:  # all or nothing: no child was listed yet
                shutil.rmtree(self.sessions_dir / meta.uid, ignore_errors=True)
            raise
        for meta in made:
            self.catalog.add(meta.uid, meta.project, meta.create_time_ns)
        return [self.get(meta.uid) for meta in made]

    def _make_dir(self, meta: SessionMeta, base: Tail | None) -> SessionMeta:
        """Build a session directory under a temporary name and rename it into place."""
        check_uid(meta.uid)
        check_project(meta.project)
        if not meta.create_time_ns:
            meta = replace(meta, create_time_ns=time.time_ns())
        meta = replace(meta, encrypted=self.master is not None)
        final = self.sessions_dir / meta.uid
        if final.exists():
            raise SessionExistsError(f"session {meta.uid} already exists")
        tmp = SessionDir(self.sessions_dir / f".tmp-{meta.uid}-{secrets.token_hex(4)}")
        try:
            self._sync_parents_once()
            tmp.journal.mkdir(parents=True)
            if self.master is not None:  # the key first: session.json's marker promises it
                create_key(self.fs, tmp.path, meta.uid, self.master)
            self.fs.write_file_atomic(tmp.meta_file, metafile.meta_bytes(meta))
            base_seq, base_hash = (base.last_seq, base.last_hash) if base else (0, "")
            if base is not None:
                self.fs.write_file_atomic(tmp.base_file, json_bytes(base.to_json()))
            SegmentLog.create(
                tmp.journal,
                session_id=meta.uid,
                base_seq=base_seq,
                base_hash=base_hash,
                fs=self.fs,
            )
            self.fs.sync_dir(tmp.path)
            self._rename_new(tmp.path, final, meta.uid)
            self.fs.sync_dir(self.sessions_dir)
        except OSError as exc:
            shutil.rmtree(tmp.path, ignore_errors=True)
            raise StorageError(f"cannot create session {meta.uid}: {exc.strerror}") from exc
        except BaseException:
            shutil.rmtree(tmp.path, ignore_errors=True)
            raise
        return meta

    def _sync_parents_once(self) -> None:
        """Before this instance's first create: fsync the home (``sessions/``'s entry) and
        its parent (the home's), whoever made them. Opening a store makes the directories
        without a sync (a read costs none); a session's durability needs their entries,
        and their maker may have died between mkdir and fsync."""
        if self._parents_synced:
            return
        self.fs.sync_dir(self.home)
        self.fs.sync_dir(self.home.parent)
        self._parents_synced = True

    def _rename_new(self, tmp: Path, final: Path, uid: str) -> None:
        """Rename a built session directory into place, exclusively: rename(2) refuses to
        replace a non-empty directory, so of two processes creating one uid at once (two
        completing one claimed key) exactly one lands; the other gets SessionExistsError."""
        try:
            self.fs.replace(tmp, final)
        except StorageError as exc:
            if exc.fields.get("errno") in (errno.ENOTEMPTY, errno.EEXIST):
                raise SessionExistsError(f"session {uid} already exists") from None
            raise

    def get(self, uid: str) -> SessionInfo:
        sdir = self._dir(uid)
        meta = sdir.read_meta()
        tail, _position, _log = open_tail(sdir, meta, self.opening)
        _log.close()
        return session_row(sdir, meta, tail)

    def project_of(self, uid: str) -> str | None:
        """``uid``'s project from its catalog row (one indexed read; SQLite's serialized
        mode lets any thread make it), None without a row (:class:`~.store.ProjectIndex`)."""
        entry = self.catalog.entry(uid)
        return None if entry is None else entry[0]

    def list(self, project: str, page_size: int = 0, cursor: str = "") -> Page:
        ask = page_ask(project, page_size, cursor)
        uids = self.catalog.page(project, ask.limit, ask.after)
        infos = [self._listed(uid) for uid in uids[: ask.size]]
        # the damaged sessions the last rebuild met: the catalog has no row to list them by
        return page_of(infos, ask, more=len(uids) > ask.size, unindexed=self._unindexed)

    def delete(self, uid: str) -> SessionInfo:
        sdir = self._dir(uid)
        self._check_writable(f"delete session {uid}")
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
        self._check_writable(f"write session {uid}")
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
        return self._state_of(sdir, sdir.read_meta(), before_seq)

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

    def _state_of(
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

    def uids(self) -> tuple[str, ...]:
        """Every session uid here, deleted ones included, sorted; strays are skipped."""
        found = []
        for sdir in self._session_dirs():
            with contextlib.suppress(InvalidArgumentError):
                found.append(check_uid(sdir.uid))
        return tuple(sorted(found))

    @property
    def unindexed(self) -> tuple[MetadataCorruptError, ...]:
        """The sessions the last rebuild (on open, or :meth:`reindex`) could not index."""
        return self._unindexed

    @property
    def index_path(self) -> str:
        """Where the listing catalog lives (``catalog.sqlite3``)."""
        return str(self.catalog.path)

    def reindex(self) -> Reindexed:
        """Rebuild the listing catalog from the session directories: the row count, and the
        sessions whose metadata is damaged (no row can hold them: their project is unknown).

        Every readable session directory gets its row back (a crash between creating a
        session and indexing it leaves it out of ``list``); rows whose directory is gone
        are dropped. Safe while other processes create sessions: no row they add is lost.
        """
        self._check_writable("rebuild the session catalog")
        rows, damaged = self._scan_rows()
        self._unindexed = tuple(damaged)
        seen = {row[0] for row in rows}
        stale = [
            uid
            for uid in self.catalog.uids()
            if uid not in seen and not (self.sessions_dir / uid).is_dir()
        ]
        # a damaged session keeps the row it has (its directory exists, whatever became of
        # its session.json), so list still shows it as damaged; one without a row cannot
        # get one (its project is unknown)
        return Reindexed(self.catalog.rebuild(rows, stale), self._unindexed)

    def _scan_rows(
        self,
    ) -> tuple[builtins.list[tuple[str, str, int, bool]], builtins.list[MetadataCorruptError]]:
        """Catalog rows of every session directory, and the errors of those whose metadata is
        damaged (they cannot have a row: the project and creation time are unknown)."""
        rows, damaged = [], []
        for sdir in self._session_dirs():
            try:
                meta = sdir.read_meta()
            except MetadataCorruptError as exc:
                damaged.append(exc)
                continue
            rows.append((meta.uid, meta.project, meta.create_time_ns, sdir.is_deleted()))
        return rows, damaged

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
        self.catalog.close()

    def __enter__(self) -> FileStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- cancel requests ----------------------------------------------------------------
    def request_cancel(self, uid: str, execution_id: str, reason: str = "") -> None:
        """Durably ask the running turn of ``execution_id`` to stop at its next effect
        boundary: a ``CANCEL`` file beside the journal naming it, and why if ``reason``
        (the canceller cannot append while the running writer holds the lock)."""
        self._check_writable("cancel")
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
        self._check_writable("release a key")
        self.claims.release(key, uid)

    # -- component stores (a tool's own journal: :mod:`.filecomponent`) -------------------
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

    def _session_dirs(self) -> Iterator[SessionDir]:
        if self.read_only and not self.sessions_dir.is_dir():
            return  # a read-only home that never held a session
        with os.scandir(self.sessions_dir) as entries:  # closed even when a caller stops early
            for entry in entries:
                if entry.is_dir() and not entry.name.startswith("."):
                    yield SessionDir(Path(entry.path))

    def _listed(self, uid: str) -> SessionInfo:
        """The row ``list`` shows (:func:`.rows.listed_row`)."""
        return listed_row(self.sessions_dir, self.catalog, uid, self.get)
