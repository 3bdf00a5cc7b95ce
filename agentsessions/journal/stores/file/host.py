"""The host's files beside a file store session's journal: tool receipts and workloads.

``TOOLRECEIPTS`` (:mod:`.receipts`), ``WORKLOAD`` (the session's tools, ``--tools FILE``)
and ``WORKLOAD.<digest>`` (each workload an execution ran with, kept by its digest). They
are not part of the hash chain. In an encrypted session (docs/FORMAT.md 15) each is sealed
under the session's data key as a blob bound to its place (a receipt to its key, a kept
workload to its digest, the current one to ``current``), so none of their bytes is in the
clear; reading them needs the master key (exit 26 without), and a failed tag is exit 8.

A mixin of :class:`~agentsessions.journal.stores.file.store.FileStore`, as
:mod:`.making` and :mod:`.listing` are: the host's files are a job of their own, beside
the journal's; it keeps no state but the workload cache.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsessions.errors import JournalCorruptError
from agentsessions.journal.crypto.cipher import WORKLOAD_KIND, SessionCipher
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores import receipts
from agentsessions.journal.stores.file.crypt import cipher_for
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.v1 import workloadref

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

_CURRENT = b"current"  # the binding of the session's current WORKLOAD


class HostFiles:
    """Receipts and workloads of the sessions of a file store (mixed into FileStore)."""

    master: MasterKey | None
    fs: FileSystem
    _workload_paths: dict[str, str]  # uid -> its WORKLOAD path, built once
    _workloads: dict[str, tuple[tuple[int, int, int], str]]  # uid -> (file identity, text)

    if TYPE_CHECKING:  # FileStore's, which this is mixed into

        def _dir(self, uid: str) -> SessionDir: ...

        def check_writable(self, what: str) -> None: ...

    def _host_cipher(self, sdir: SessionDir) -> SessionCipher | None:
        """The session's cipher for its host files (None: a plaintext session)."""
        return cipher_for(sdir.path, sdir.read_meta(), self.master)

    # -- tool receipts (the host's dedup record of mediated calls) ------------------------
    def tool_receipt(self, uid: str, key: str) -> dict[str, Any] | None:
        """The outcome kept for ``(uid, key)``, or None (see :mod:`.receipts`)."""
        sdir = self._dir(uid)
        path = sdir.path / receipts.RECEIPTS_NAME
        if not path.exists():
            return None
        return receipts.read_receipt(path, key, self._host_cipher(sdir))

    def record_tool_receipt(self, uid: str, key: str, receipt: Mapping[str, Any]) -> None:
        """Keep ``receipt`` for ``(uid, key)`` durably before returning."""
        self.check_writable("keep a tool receipt")
        sdir = self._dir(uid)
        path = sdir.path / receipts.RECEIPTS_NAME
        receipts.append_receipt(self.fs, path, key, receipt, self._host_cipher(sdir))

    # -- the session's workload (its tools, ``--tools FILE``) -----------------------------
    def workload(self, uid: str) -> str | None:
        """The workload TOML recorded for ``uid`` (its ``WORKLOAD`` file), or None.

        Asked before every turn: the text is kept and re-read only when the file's identity
        (inode, size, mtime) changes, so a turn costs one ``stat`` here, not a read."""
        path = self._workload_paths.get(uid)
        if path is None:
            path = os.fspath(self._dir(uid).path / receipts.WORKLOAD_NAME)
            self._workload_paths[uid] = path
        # most sessions have no tools: a failed access() raises nothing, where a failed
        # stat() costs an OSError built and caught, and a turn asks three times
        try:
            st = os.stat(path) if os.access(path, os.F_OK) else None
        except FileNotFoundError:  # removed in between
            st = None
        if st is None:
            self._workloads.pop(uid, None)
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        kept = self._workloads.get(uid)
        if kept is not None and kept[0] == key:
            return kept[1]
        text = self._read_workload(uid, path, _CURRENT)
        if text is None:
            return None
        self._check_kept(path, text)
        self._workloads[uid] = (key, text)
        return text

    @staticmethod
    def _check_kept(path: str, text: str) -> None:
        """The current workload is always kept by its digest too (:meth:`set_workload`), so
        a text whose kept copy is missing was damaged (a session from before kept copies
        existed has none at all and is taken as it is): JournalCorruptError."""
        folder = os.path.dirname(path)
        kept = receipts.kept_workload_name(workloadref.digest_of(text))
        if os.path.exists(os.path.join(folder, kept)):
            return
        prefix = receipts.WORKLOAD_NAME + "."  # WORKLOAD.<digest>; not a write's WORKLOAD.tmp
        if any(n.startswith(prefix) and not n.endswith(".tmp") for n in os.listdir(folder)):
            raise JournalCorruptError(
                f"{path}: the session's workload matches none of its kept copies (damaged)",
                path=path,
            )

    def set_workload(self, uid: str, text: str) -> None:
        """Record ``text`` as the session's workload (atomic and durable; replaces any),
        kept by its digest first (:meth:`keep_workload`)."""
        self.check_writable("record the session's tools")
        self.keep_workload(uid, text)
        sdir = self._dir(uid)
        data = self._sealed_workload(sdir, text, _CURRENT)
        # recorded before the turn takes the session's writer lock: another process's turn
        # may record it at the same moment (shared: each its own tmp file)
        self.fs.write_file_atomic(sdir.path / receipts.WORKLOAD_NAME, data, shared=True)
        # forget the kept text: a same-size replacement within the file system's timestamp
        # granularity, on a reused inode, would otherwise look unchanged to workload()
        self._workloads.pop(uid, None)

    def keep_workload(self, uid: str, text: str) -> str:
        """Keep ``text`` by its digest beside the journal (``WORKLOAD.<digest>``, atomic and
        durable, written once) and return the digest: an execution that records the digest
        finds its workload again after a later ``--tools`` replaced it."""
        digest = workloadref.digest_of(text)
        sdir = self._dir(uid)
        path = sdir.path / receipts.kept_workload_name(digest)
        if not path.exists():
            self.check_writable("keep the session's tools")
            data = self._sealed_workload(sdir, text, digest.encode())
            self.fs.write_file_atomic(path, data, shared=True)
        return digest

    def workload_at(self, uid: str, digest: str) -> str | None:
        """The workload kept for ``uid`` under ``digest`` (:meth:`keep_workload`), or None."""
        try:
            path = self._dir(uid).path / receipts.kept_workload_name(digest)
        except ValueError:
            return None
        text = self._read_workload(uid, os.fspath(path), digest.encode())
        if text is not None and workloadref.digest_of(text) != digest:
            raise JournalCorruptError(
                f"{path}: the kept workload does not have the digest it is named by",
                path=os.fspath(path),
            )
        return text

    def _sealed_workload(self, sdir: SessionDir, text: str, binding: bytes) -> bytes:
        data = text.encode("utf-8")
        cipher = self._host_cipher(sdir)
        return data if cipher is None else cipher.seal_blob(WORKLOAD_KIND, data, binding)

    def _read_workload(self, uid: str, path: str, binding: bytes) -> str | None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        cipher = self._host_cipher(self._dir(uid))
        if cipher is not None:
            data = cipher.open_blob(WORKLOAD_KIND, data, binding)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise JournalCorruptError(f"{path} is not UTF-8 text", path=path) from None


def check_workloads(path: Path, cipher: SessionCipher) -> None:
    """Open every workload file of the encrypted session directory ``path`` (``verify`` with
    the key): each tag, and each kept one's digest (JournalCorruptError, exit 8)."""
    for entry in sorted(path.iterdir()):
        name = entry.name
        if name == receipts.WORKLOAD_NAME:
            cipher.open_blob(WORKLOAD_KIND, entry.read_bytes(), _CURRENT)
        elif name.startswith(receipts.WORKLOAD_NAME + ".") and not name.endswith(".tmp"):
            digest = name.split(".", 1)[1]
            text = cipher.open_blob(WORKLOAD_KIND, entry.read_bytes(), digest.encode())
            if workloadref.digest_of(text.decode("utf-8", "replace")) != digest:
                raise JournalCorruptError(
                    f"{entry}: the kept workload does not have its digest", path=str(entry)
                )
