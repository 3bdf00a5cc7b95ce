"""How a file store session directory comes into being: created, or forked from another.

A mixin of :class:`~agentsessions.journal.stores.file.store.FileStore` (the job of making
directories, apart from reading and writing what they hold). Invariants: a session
directory appears atomically and durably: built under ``sessions/.tmp-*`` (its key, its
``session.json``, a fork's ``BASE`` and the first segment each written durably), the
directory fsync'd, renamed exclusively into place (of two creators of one uid exactly one
lands), then ``sessions/`` fsync'd; the home and its parent are fsync'd before an
instance's first create. Only then is the catalog row added, so a crash leaves at worst a
session without a row (``reindex`` gives it back), never a row without a session. A fork
is all or nothing: a child that failed removes every child made, before any is listed.
"""

from __future__ import annotations

import builtins
import errno
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import SessionExistsError, StorageError
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores import forking, metafile
from agentsessions.journal.stores.file.crypt import create_key
from agentsessions.journal.stores.file.opening import Opening, open_tail
from agentsessions.journal.stores.file.sessiondir import SessionDir, json_bytes
from agentsessions.journal.stores.store import SessionInfo, SessionMeta, Writer
from agentsessions.journal.stores.tail import Tail
from agentsessions.v1.ids import check_project, check_uid
from agentsessions.valueclass import replace

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey
    from agentsessions.journal.stores.file.catalog import Catalog


class SessionMaking:
    """Creating and forking the sessions of a file store (mixed into FileStore)."""

    home: Path
    sessions_dir: Path
    master: MasterKey | None
    fs: FileSystem
    opening: Opening
    _parents_synced: bool  # see _sync_parents_once

    if TYPE_CHECKING:  # FileStore's, which this is mixed into

        @property
        def catalog(self) -> Catalog: ...

        def check_writable(self, what: str) -> None: ...

        def _dir(self, uid: str) -> SessionDir: ...

        def get(self, uid: str) -> SessionInfo: ...

        def read(self, uid: str, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]: ...

        def writer(self, uid: str) -> Writer: ...

    def create(self, meta: SessionMeta) -> SessionInfo:
        self.check_writable(f"create session {meta.uid}")
        meta = self._make_dir(meta, None)
        self.catalog.add(meta.uid, meta.project, meta.create_time_ns)
        return SessionInfo(meta=meta, update_time_ns=meta.create_time_ns)

    def fork(
        self, parent: str, at_seq: int, children: Sequence[SessionMeta]
    ) -> builtins.list[SessionInfo]:
        self.check_writable(f"fork session {parent}")
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
                _discard(self.sessions_dir / meta.uid)
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
        tmp = SessionDir(self.sessions_dir / f".tmp-{meta.uid}-{os.urandom(4).hex()}")
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
            _discard(tmp.path)
            raise StorageError(f"cannot create session {meta.uid}: {exc.strerror}") from exc
        except BaseException:
            _discard(tmp.path)
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


def _discard(path: Path) -> None:
    """Remove a directory a failed creation left (shutil is imported here: only a failure
    removes one, and every other start is spared its import)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)
