"""Key claims in the file store (:mod:`agentsessions.journal.stores.claims`): one small file
per bound key under ``claims/`` in the store's home.

Layout (``docs/FORMAT.md``, "Key claims")::

    claims/<digest>          {"uid": UID}: the key whose ClaimKey digest is <digest> is
                             bound to UID (the digest already binds the project)
    claims/release.lock      flock of whoever releases a claim
    claims/.tmp-*            a claim being made (a crash may leave one: ignored)

Invariants:
- a claim file appears whole and exclusively: its bytes are written and fsync'd under a
  temporary name, then given the final name with link(2), which fails if the name exists;
  of any number of processes claiming one key at once, one link succeeds; the others read
  the winner's file. The directory is fsync'd before a claim is returned, and a claim
  found already there is returned only after the same fsync (its maker may not have
  made it yet), so a returned uid is durably bound;
- only a release removes a claim file, and releases take ``claims/release.lock``: a releaser reads
  the file and unlinks it under the lock, so the file it read is the file it removes (no
  other releaser can swap it meanwhile, and a claimer cannot link over an existing name);
- nothing here is sealed: a claim file holds a uid and the name holds a digest, never the
  key (see the capability's module).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from agentsessions.errors import (
    InvalidArgumentError,
    JournalCorruptError,
    LockHeldError,
    StorageError,
)
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.lock import SessionLock
from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.v1.ids import check_uid

CLAIMS_DIR = "claims"
RELEASE_LOCK = "release.lock"  # not a session's LOCK: the flock of releases
_LOCK_WAIT_SECONDS = 30.0
_LOCK_POLL_SECONDS = 0.01
_CLAIM_TRIES = 64  # a claim found, then released before it could be read: very rare


class FileClaims:
    """The claims of one file store home (see the module docstring)."""

    def __init__(self, home: Path, fs: FileSystem, *, read_only: bool = False) -> None:
        self.dir = home / CLAIMS_DIR
        self.home = home
        self.fs = fs
        self.read_only = read_only
        self._dir_durable = False  # claims/'s entry in the home fsync'd by this instance

    def claim(self, key: ClaimKey, uid: str) -> str:
        """Bind ``key`` to ``uid`` unless bound; the uid bound, durably (the module)."""
        check_uid(uid)
        self._make_dir()
        path = self.dir / key.digest
        body = json.dumps({"uid": uid}).encode() + b"\n"
        for _ in range(_CLAIM_TRIES):
            found = self._read(path)
            if found:
                self.fs.sync_dir(self.dir)  # its maker may not have synced it yet
                return found
            tmp = self.dir / f".tmp-{key.digest[:16]}-{os.urandom(6).hex()}"
            self.fs.create_file(tmp, body)
            try:
                linked = self.fs.link_new(tmp, path)
            finally:
                self.fs.discard(tmp)
            if linked:
                self.fs.sync_dir(self.dir)
                return uid
        raise LockHeldError(f"the claim of a key in project {key.project!r} kept changing")

    def lookup(self, key: ClaimKey) -> str:
        """The uid ``key`` is bound to, "" if none (one read, nothing written)."""
        return self._read(self.dir / key.digest)

    def release(self, key: ClaimKey, uid: str) -> None:
        """Unbind ``key`` if it is still bound to ``uid``, under ``claims/release.lock``."""
        path = self.dir / key.digest
        if self._read(path) != uid:
            return  # nothing of ours to release: no lock taken
        lock = self._lock()
        try:
            if self._read(path) == uid:
                self.fs.unlink(path)
                self.fs.sync_dir(self.dir)
        finally:
            lock.release()

    def _make_dir(self) -> None:
        """Create ``claims/`` on the first claim, durably: the home is fsync'd once per
        instance even when the directory exists, since the process that made it may have
        died between its mkdir and its fsync."""
        if self.read_only:
            raise StorageError(
                f"cannot claim a key: the store at {self.home} is read-only",
                path=str(self.home),
            )
        if self._dir_durable:
            return
        try:
            self.dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {self.dir}: {exc.strerror}") from exc
        self.fs.sync_dir(self.home)
        self._dir_durable = True

    def _lock(self) -> SessionLock:
        """``claims/release.lock``, held: a release is short, so another releaser is waited for."""
        lock = SessionLock(self.dir / RELEASE_LOCK, session="claims")
        deadline = time.monotonic() + _LOCK_WAIT_SECONDS
        while True:
            try:
                lock.acquire()
                return lock
            except LockHeldError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(_LOCK_POLL_SECONDS)

    def _read(self, path: Path) -> str:
        """The uid in claim file ``path``, "" when there is none."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
        try:
            return check_uid(json.loads(data)["uid"])
        except (ValueError, KeyError, TypeError, InvalidArgumentError) as exc:
            raise JournalCorruptError(
                f"claim file {path} is damaged: {exc}",
                hint="remove it if no session was made for it (agentsessions list)",
                path=os.fspath(path),
            ) from None
