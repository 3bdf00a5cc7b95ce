"""Component stores of the file store: a tool's own journal inside its session's directory.

Layout (``docs/FORMAT.md``)::

    sessions/<uid>/components/<name>/LOCK     flock of the component store's single writer
    sessions/<uid>/components/<name>/FENCE    its fence, minted by every writer open
    sessions/<uid>/components/<name>/TAIL     hint: tail position and state (never trusted)
    sessions/<uid>/components/<name>/journal/ segment files, headers naming the session uid

A component directory is a session directory without ``session.json``, ``BASE`` and the
host's files (receipts, workload, cancel): its identity is its place, the session it lies in
and its name. Everything else is the session journal's own code (segment log, file writer,
fence file, lock, tail), so the limits, commit ids, fencing, hash chain and verify are the
same by construction, not by imitation.

Invariants: a component directory appears whole (built under ``components/.tmp-*`` and
renamed into place, then ``components/`` fsync'd), on its store's first writer; until then
reads yield nothing. A writer opens only while the session is not deleted, and the store's
delete takes every component's LOCK (:func:`lock_all`), so a deleted session's component
stores take no write after it. A fork copies none: see ``docs/FORMAT.md``.

A tool store of an encrypted session is encrypted too (docs/FORMAT.md 15), under a data key
of its own: its ``KEY`` (scope ``uid/tool``) is written into the directory before it is
renamed into place, its records and STATE bytes are sealed, its reads need the master key
(exit 26 without), and the session's shred destroys its key too.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentsessions.errors import KeyShreddedError, MasterKeyError, StorageError
from agentsessions.journal.crypto.cipher import SessionCipher
from agentsessions.journal.format import fencefile
from agentsessions.journal.format.lock import SessionLock
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file import watch
from agentsessions.journal.stores.file.crypt import cipher_for, create_key, shredded
from agentsessions.journal.stores.file.opening import Opening, open_tail
from agentsessions.journal.stores.file.sessiondir import SessionDir, acked
from agentsessions.journal.stores.file.writer import (
    FileWriter,
    WriterOwner,
    follow_records,
    frame_records,
)
from agentsessions.journal.stores.store import (
    SessionMeta,
    WorkingState,
    check_component,
    deleted_error,
)

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

COMPONENTS_NAME = "components"


class ComponentOwner(WriterOwner, Protocol):
    """What a component store uses of the file store that made it (it imports this module:
    naming it by a Protocol keeps the import one way)."""

    @property
    def master(self) -> MasterKey | None:
        """The store's master key (None: none given)."""
        ...

    def check_writable(self, what: str) -> None:
        """Refuse (StorageError) ``what`` on a read-only store, before anything is tried."""
        ...

    @property
    def opening(self) -> Opening:
        """What opening a journal uses of the store (:func:`.opening.open_tail`)."""
        ...

    def state_in(
        self, sdir: SessionDir, meta: SessionMeta, before_seq: int = 0, scope: str = ""
    ) -> WorkingState:
        """The working state of the journal in ``sdir`` (key ``scope``), read-only."""
        ...


def components_dir(session: SessionDir) -> Path:
    """``<session dir>/components``: where a session's component stores live."""
    return session.path / COMPONENTS_NAME


def names(session: SessionDir) -> tuple[str, ...]:
    """The component stores session ``session`` has (whole ones only), sorted."""
    try:
        entries = os.listdir(components_dir(session))
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise StorageError(f"cannot list {components_dir(session)}: {exc.strerror}") from exc
    found = []
    for entry in entries:
        with contextlib.suppress(Exception):
            if SessionDir(components_dir(session) / check_component(entry)).is_session():
                found.append(entry)
    return tuple(sorted(found))


def lock_all(session: SessionDir) -> list[SessionLock]:
    """Take the LOCK of every component store of ``session`` (LockHeldError, with none kept,
    if one is busy): the session's delete holds them while it marks the session deleted."""
    held: list[SessionLock] = []
    try:
        for name in names(session):
            part = SessionDir(components_dir(session) / name)
            lock = SessionLock(part.lock_file, session=session.uid)
            lock.acquire()
            held.append(lock)
    except BaseException:
        for lock in held:
            lock.release()
        raise
    return held


class FileComponentStore:
    """The store of component ``name`` in the session directory ``session``."""

    def __init__(
        self, owner: ComponentOwner, session: SessionDir, name: str, *, poll_seconds: float = 0.5
    ) -> None:
        """``poll_seconds``: a follower's longest sleep between looks (the store's option)."""
        self._owner = owner
        self._poll = poll_seconds
        self._session = session
        self._name = check_component(name)
        self._dir = SessionDir(components_dir(session) / name)
        self._meta_read: SessionMeta | None = None
        self._scope = f"{session.uid}/{name}"  # its key's (journal.crypto.sealed.scope_of)

    @property
    def _meta(self) -> SessionMeta:
        """The journal's identity (segment headers, errors): the session's uid; encrypted
        when its session is (the session's marker decides, never the presence of KEY).
        Read on first use: ``path`` (verify's) needs no readable ``session.json``."""
        if self._meta_read is None:
            encrypted = self._session.read_meta().encrypted
            self._meta_read = SessionMeta(
                uid=self._session.uid, name=self._name, encrypted=encrypted
            )
        return self._meta_read

    @property
    def uid(self) -> str:
        return self._session.uid

    @property
    def name(self) -> str:
        return self._name

    @property
    def path(self) -> Path:
        """The component store's directory (for offline tools such as verify)."""
        return self._dir.path

    def writer(self) -> FileWriter:
        """Become the store's single writer (made on the first one); SessionDeletedError
        once the session is deleted, LockHeldError while another writer holds it."""
        what = f"write tool store {self._name!r} of session {self.uid}"
        self._owner.check_writable(what)
        self._check_live()
        self._ensure()
        lock = SessionLock(self._dir.lock_file, session=self.uid)
        lock.acquire()
        try:
            self._check_live()  # under the LOCK: the session's delete takes it too
            cipher = self._cipher()  # exit 26 before the journal is opened for writing
            tail, proved, log = open_tail(
                self._dir, self._meta, self._owner.opening, writable=True, scope=self._scope
            )
            try:
                fence = fencefile.mint(self._owner.fs, self._dir.fence_file, tail.max_fence, proved)
            except BaseException:
                log.close()
                raise
            return FileWriter(self._owner, self._dir, self._meta, log, tail, fence, lock, cipher)
        except BaseException:
            lock.release()
            raise

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Record]:
        if not self._dir.is_session():
            return iter(())
        cipher = self._cipher()
        log = self._open_log()
        return frame_records(log, log.read(from_seq, to_seq), close=True, cipher=cipher)

    def follow(self, from_seq: int = 1, *, idle_timeout: float | None = None) -> Iterator[Record]:
        """Records from ``from_seq`` on, then each new one as it commits (a store not made
        yet is waited for, polling, then watched as :meth:`FileStore.follow` does)."""
        next_seq = max(from_seq, 1)
        idle_since = time.monotonic()
        poll = self._poll
        while not self._dir.is_session():
            left = None if idle_timeout is None else idle_timeout - (time.monotonic() - idle_since)
            if left is not None and left <= 0:
                return
            time.sleep(poll if left is None else min(poll, left))
        cipher = self._cipher()
        watcher = watch.open_watcher(self._dir.journal, poll_max_seconds=poll)
        try:
            log = self._open_log()
        except BaseException:
            watcher.close()
            raise
        yield from follow_records(log, watcher, next_seq, idle_timeout, cipher)

    def state(self) -> WorkingState:
        """The component's working state (version 0 before its first writer), read-only:
        the one STATE frame the tail names, as a session's (:meth:`FileStore.state`)."""
        if not self._dir.is_session():
            return WorkingState()
        self._cipher()  # a shred cut before this store's key went: still unreadable
        return self._owner.state_in(self._dir, self._meta, scope=self._scope)

    def _cipher(self) -> SessionCipher | None:
        """This store's cipher (None in a plaintext session); exit 26 errors without a key,
        and after the session's shred (its marker is written before this store's key goes)."""
        if self._meta.encrypted and shredded(self._session.path):
            raise KeyShreddedError(
                f"{self._scope}: the data key was shredded; the content is unreadable for good",
                hint="verify SESSION still checks the journal's structure",
                session=self.uid,
            )
        return cipher_for(self._dir.path, self._meta, self._owner.master, self._scope)

    def _open_log(self) -> SegmentLog:
        hint = self._dir.read_hint()[0]
        log, _scan = SegmentLog.open(
            self._dir.journal, session_id=self.uid, writable=False, fs=self._owner.fs,
            resume=hint, acked=acked(hint) if hint is not None else self._dir.hint_evidence(),
        )  # fmt: skip
        return log

    def _check_live(self) -> None:
        if self._session.is_deleted():
            raise deleted_error(self.uid, self._name)

    def _ensure(self) -> None:
        """Make the component directory if it is not there yet, whole or not at all."""
        if self._dir.is_session():
            return
        master = self._owner.master
        if self._meta.encrypted:  # its key is made with it: refuse before making anything
            if shredded(self._session.path):
                raise KeyShreddedError(
                    f"{self.uid}: the data key was shredded; no tool store can be added",
                    session=self.uid,
                )
            if master is None:
                raise MasterKeyError(
                    f"{self._scope} is encrypted and no master key was given",
                    hint="give the master key: key_file, AGENTSESSIONS_KEY_FILE or "
                    "AGENTSESSIONS_MASTER_KEY",
                    param="key_file",
                    session=self.uid,
                )
        parent = components_dir(self._session)
        fs = self._owner.fs
        tmp = SessionDir(parent / f".tmp-{self._name}-{os.urandom(4).hex()}")
        try:
            parent.mkdir(exist_ok=True)
            fs.sync_dir(self._session.path)  # even if it existed: its maker may have died unsynced
            tmp.journal.mkdir(parents=True)
            if self._meta.encrypted and master is not None:  # the key before the rename
                create_key(fs, tmp.path, self._scope, master)
            SegmentLog.create(tmp.journal, session_id=self.uid, fs=fs)
            fs.sync_dir(tmp.path)
            try:
                fs.replace(tmp.path, self._dir.path)
            except (OSError, StorageError):
                if not self._dir.is_session():  # not another process's, made meanwhile
                    raise
            fs.sync_dir(parent)
        except OSError as exc:
            raise StorageError(
                f"cannot create tool store {self._name!r} of session {self.uid}: {exc.strerror}"
            ) from exc
        finally:
            import shutil  # only a tool store's first writer builds (and clears) one aside

            shutil.rmtree(tmp.path, ignore_errors=True)
