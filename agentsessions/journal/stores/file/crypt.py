"""Encryption at rest in the file store: data keys in ``KEY`` files, shredding, rotation
(FORMAT.md 15); the sealing itself is :mod:`agentsessions.journal.crypto.cipher`'s.

A session created while the store has a master key is *encrypted*: ``session.json`` says
so (``"encrypted": true``), its wrapped data key ``KEY`` is written into the directory
before the directory is renamed into place, and every EVENT frame its writer appends is a
sealed record (``FLAG_ENCRYPTED``). Reading its content needs the master key; without it
the store raises SessionKeyError (exit 26), never plaintext garbage, while ``verify``
checks the structure keyless (``journal.tools.verify``).

Invariants:
- ``cryptography`` is imported only when a master key is in play (a MasterKey exists only
  if it imported), so a keyless process (the CLI's startup, the zipapp) never loads it;
- the marker in ``session.json``, not the presence of ``KEY``, says a session is encrypted:
  a lost ``KEY`` is reported as a missing key, never taken for a plaintext session;
- a sealed record's content hash is the plaintext record's, so a writer's tail, the TAIL
  hint and every link are the same as in a plaintext journal of the same events.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import (
    InvalidArgumentError,
    JournalCorruptError,
    KeyShreddedError,
    MasterKeyError,
    SessionKeyError,
)
from agentsessions.journal.crypto.cipher import (
    KEY_HINT,
    SessionCipher,
    check_sealed_exportable,
    keyless_refusal,
)
from agentsessions.journal.format import segment, staterecord
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.lock import SessionLock
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.stores.store import SessionMeta

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey, RewrapCount
    from agentsessions.journal.stores.capabilities import SessionFiles

# the name keys.py gives it, repeated so a keyless check does not import cryptography
_SHREDDED_NAME = "SHREDDED"


def create_key(fs: FileSystem, path: Path, scope: str, master: MasterKey) -> SessionCipher:
    """Make and durably store the wrapped data key of a new store of ``scope`` (a session's
    uid, or ``uid/tool``) in ``path``; its cipher."""
    from agentsessions.journal.crypto.keys import KeyDir

    return SessionCipher(KeyDir(path, scope, fs).create(master), scope)


def cipher_for(
    path: Path, meta: SessionMeta, master: MasterKey | None, scope: str = ""
) -> SessionCipher | None:
    """The cipher of the store in ``path`` (None for a plaintext one); ``scope``: its key's
    (default the session uid; ``uid/tool`` for a tool store).

    KeyShreddedError after a shred (with or without ``master``), MasterKeyError with no
    master key or another one, SessionKeyError when ``KEY`` is missing: all exit 26."""
    if not meta.encrypted:
        return None
    scope = scope or meta.uid
    if master is None:
        if (path / _SHREDDED_NAME).exists():
            raise KeyShreddedError(
                f"{scope}: the data key was shredded; the content is unreadable for good",
                hint="verify SESSION still checks the journal's structure",
                session=meta.uid,
            )
        raise MasterKeyError(
            f"{scope} is encrypted and no master key was given",
            hint=KEY_HINT,
            param="key_file",
            session=meta.uid,
        )
    from agentsessions.journal.crypto.keys import KeyDir

    return SessionCipher(KeyDir(path, scope).load(master), scope)


class LazyCipher:
    """:func:`cipher_for`, loaded on the first sealed frame it opens: folding a tail that the
    TAIL hint already covers needs no key, so ``get``, ``list`` and ``delete`` of an
    encrypted session work keyless (they show only what is stored in the clear), and
    need the key only when sealed records must be folded (after a writer's crash)."""

    def __init__(
        self, path: Path, meta: SessionMeta, master: MasterKey | None, scope: str = ""
    ) -> None:
        self._args = (path, meta, master, scope)
        self.sealed_state = meta.encrypted  # STATE frames hold sealed bytes
        self._cipher: SessionCipher | None = None

    def _load(self) -> SessionCipher | None:
        if self._cipher is None:
            self._cipher = cipher_for(*self._args)
        return self._cipher

    def open(self, frame: segment.Frame) -> Record:
        """As :meth:`SessionCipher.open`; the first call loads the key (exit 26 errors)."""
        cipher = self._load()
        if cipher is None:  # sealed frames in a session not marked encrypted
            raise keyless_refusal(frame)
        return cipher.open(frame)

    def state_data(self, record: staterecord.StateRecord) -> bytes:
        """The plaintext data of a STATE record of this store (opened for an encrypted one;
        the key is loaded then, with its exit 26 errors)."""
        cipher = self._load() if self.sealed_state else None
        return record.data if cipher is None else cipher.open_state(record)


def shred(store: SessionFiles, uid: str) -> bool:
    """Destroy session ``uid``'s data key for good (FORMAT.md 15, "Shredding"): ``SHREDDED``
    first, then ``KEY`` overwritten, synced and unlinked, under the session's LOCK (a live
    writer holding the key in memory makes this LockHeldError, never a race). Afterwards
    its content is unreadable with or without the master key; ``verify`` still checks its
    structure. False when it was already shredded (idempotent: a second run finishes a
    shred a crash cut). A plaintext session is InvalidArgumentError: there is no key."""
    sdir = check_shreddable(store, uid)
    from agentsessions.journal.crypto.keys import KeyDir

    fs = store.fs
    parts = _tool_store_dirs(sdir)
    held = []
    try:
        for where in [sdir.path, *(path for _name, path in parts)]:  # no writer of any
            lock = SessionLock(SessionDir(where).lock_file, session=uid)
            lock.acquire()
            held.append(lock)
        # the session's SHREDDED first: its tool stores' reads check it too, so a crash
        # before their keys are gone leaves nothing readable (a second shred finishes)
        destroyed = KeyDir(sdir.path, uid, fs).shred()
        for name, path in parts:
            destroyed = KeyDir(path, f"{uid}/{name}", fs).shred() or destroyed
        return destroyed
    finally:
        for lock in held:
            lock.release()


def _tool_store_dirs(sdir: SessionDir) -> list[tuple[str, Path]]:
    """The session's tool store directories (``components/<name>`` with a journal)."""
    root = sdir.path / "components"
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return []
    return [
        (n, root / n) for n in names if not n.startswith(".") and SessionDir(root / n).is_session()
    ]


def shredded(session_path: Path) -> bool:
    """Whether the session in ``session_path`` was shredded (its ``SHREDDED`` marker)."""
    return (session_path / _SHREDDED_NAME).exists()


def check_shreddable(store: SessionFiles, uid: str) -> SessionDir:
    """The directory of encrypted session ``uid``; InvalidArgumentError for a plaintext one
    (nothing to shred)."""
    sdir = SessionDir(store.session_dir(uid))
    if not sdir.read_meta().encrypted:
        raise InvalidArgumentError(
            f"session {uid} is not encrypted: it has no key to shred",
            hint=f"agentsessions delete {uid} soft-deletes it",
            session=uid,
        )
    return sdir


def key_dirs(store: SessionFiles) -> list[tuple[str, Path]]:
    """``(scope, directory)`` of every store that has (or had) a data key in file store
    ``store``: each encrypted session's, and each of its tool stores', deleted ones too
    (master-key rotation reaches them all)."""
    found: list[tuple[str, Path]] = []
    for uid in store.uids():
        sdir = SessionDir(store.session_dir(uid))
        if not ((sdir.path / "KEY").exists() or shredded(sdir.path)):
            continue  # a plaintext session
        found.append((uid, sdir.path))
        found.extend((f"{uid}/{name}", path) for name, path in _tool_store_dirs(sdir))
    return found


def sealed_export(store: SessionFiles, uid: str) -> tuple[dict[str, object], Iterator[Record]]:
    """What ``export --ciphertext`` ships of encrypted session ``uid``: ``{"scope", "key"}``
    (its uid and its wrapped ``KEY``, as JSON) and its records as stored, each payload the
    sealed record (``content_hash`` and ``prev_hash`` from the clear head). No master key is
    needed; a shredded or missing key is exit 26, a plaintext session or a fork child (its
    prefix is sealed under its parent's key) InvalidArgumentError."""
    import json

    from agentsessions.journal.format import sealedhead
    from agentsessions.journal.format.segmentlog import SegmentLog
    from agentsessions.journal.stores.file.sessiondir import acked

    sdir = check_shreddable(store, uid)
    check_sealed_exportable(sdir.read_meta(), shredded(sdir.path))
    try:
        key = json.loads((sdir.path / "KEY").read_bytes())
    except FileNotFoundError:
        raise SessionKeyError(
            f"{uid}: the wrapped data key (KEY) is missing", session=uid
        ) from None
    except ValueError:
        raise JournalCorruptError(f"{sdir.path / 'KEY'} is not a wrapped data key") from None
    hint = sdir.read_hint()[0]
    log, _scan = SegmentLog.open(
        sdir.journal, session_id=uid, writable=False, resume=hint, acked=acked(hint)
    )

    def records() -> Iterator[Record]:
        try:
            for frame in log.read(1, 0):
                chain = sealedhead.chain_of(frame.payload)
                if chain is None:
                    raise JournalCorruptError(
                        f"{uid}: the record at seq {frame.seq} is not sealed", seq=frame.seq
                    )
                yield Record(frame.seq, chain[0], chain[1], frame.fence, bytes(frame.payload))
        finally:
            log.close()

    return {"scope": uid, "key": key}, records()


def rewrap_keys(store: SessionFiles, old: MasterKey, new: MasterKey) -> RewrapCount:
    """Master-key rotation of a file store: ``keys.rewrap_all`` over every ``KEY``
    :func:`key_dirs` finds (each session's, scope ``uid``, each tool store's, scope
    ``uid/name``). A wrong ``old`` changes nothing; keys already wrapped by ``new`` and
    shredded ones are skipped and counted."""
    from agentsessions.journal.crypto import keys

    dirs = [keys.KeyDir(path, scope, store.fs) for scope, path in key_dirs(store)]
    live = [d for d in dirs if d.key_path.exists() and not d.shredded_path.exists()]
    already = sum(1 for d in live if d.wrapped_by() == new.key_id)
    return keys.RewrapCount(keys.rewrap_all(dirs, old, new), already, len(dirs) - len(live))
