"""Encryption at rest in the file store: sealing on append, opening on read (FORMAT.md 15).

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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.errors import (
    ChainBrokenError,
    InvalidArgumentError,
    KeyShreddedError,
    MasterKeyError,
)
from agentsessions.journal.format import segment
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem
from agentsessions.journal.format.lock import SessionLock
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.sessiondir import SessionDir
from agentsessions.journal.stores.store import SessionMeta

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

# the names keys.py gives them, repeated so a keyless check does not import cryptography
_SHREDDED_NAME = "SHREDDED"
KEY_NAME = "KEY"
KEY_FILE_ENV = "AGENTSESSIONS_KEY_FILE"
MASTER_KEY_ENV = "AGENTSESSIONS_MASTER_KEY"
_HINT = "give the master key: --key-file FILE, AGENTSESSIONS_KEY_FILE or AGENTSESSIONS_MASTER_KEY"


class SessionCipher:
    """One encrypted session's data key bound to its scope (the uid): seals records on
    append, opens sealed EVENT frames on read. Holds no key bytes in its repr."""

    def __init__(self, data_key: bytes, scope: str) -> None:
        self._key = data_key
        self.scope = scope

    def __repr__(self) -> str:
        return f"SessionCipher(scope={self.scope!r})"

    def seal(self, record: Record) -> bytes:
        """The sealed payload of ``record`` (its seq, link and content hash unchanged)."""
        from agentsessions.journal.crypto import sealed

        blob, plain = sealed.seal(
            self._key, self.scope, record.event_json, seq=record.seq, prev_hash=record.prev_hash
        )
        if plain.content_hash != record.content_hash:  # a record not in canonical form
            raise ChainBrokenError(
                f"{self.scope}: record {record.seq} does not hash as its canonical envelope",
                seq=record.seq,
            )
        return blob

    def open(self, frame: segment.Frame) -> Record:
        """The plaintext record of a sealed EVENT ``frame`` (its tag and hash checked)."""
        from agentsessions.journal.crypto import sealed

        return sealed.open_record(
            self._key, self.scope, frame.payload, seq=frame.seq, fence=frame.fence
        )


def create_key(fs: FileSystem, path: Path, uid: str, master: MasterKey) -> None:
    """Make and durably store the wrapped data key of new session ``uid`` in ``path``."""
    from agentsessions.journal.crypto.keys import KeyDir

    KeyDir(path, uid, fs).create(master)


def cipher_for(path: Path, meta: SessionMeta, master: MasterKey | None) -> SessionCipher | None:
    """The cipher of the session in ``path`` (None for a plaintext one).

    KeyShreddedError after a shred (with or without ``master``), MasterKeyError with no
    master key or another one, SessionKeyError when ``KEY`` is missing: all exit 26."""
    if not meta.encrypted:
        return None
    if master is None:
        if (path / _SHREDDED_NAME).exists():
            raise KeyShreddedError(
                f"{meta.uid}: the data key was shredded; the content is unreadable for good",
                hint="verify SESSION still checks the journal's structure",
                session=meta.uid,
            )
        raise MasterKeyError(
            f"{meta.uid} is encrypted and no master key was given", hint=_HINT, session=meta.uid
        )
    from agentsessions.journal.crypto.keys import KeyDir

    return SessionCipher(KeyDir(path, meta.uid).load(master), meta.uid)


class LazyCipher:
    """:func:`cipher_for`, loaded on the first sealed frame it opens: folding a tail that the
    TAIL hint already covers needs no key, so ``get``, ``list`` and ``delete`` of an
    encrypted session work keyless (they show only what is stored in the clear), and
    need the key only when sealed records must be folded (after a writer's crash)."""

    def __init__(self, path: Path, meta: SessionMeta, master: MasterKey | None) -> None:
        self._args = (path, meta, master)
        self._cipher: SessionCipher | None = None

    def open(self, frame: segment.Frame) -> Record:
        """As :meth:`SessionCipher.open`; the first call loads the key (exit 26 errors)."""
        if self._cipher is None:
            self._cipher = cipher_for(*self._args)
            if self._cipher is None:  # sealed frames in a session not marked encrypted
                raise keyless_refusal(frame)
        return self._cipher.open(frame)


def keyless_refusal(frame: segment.Frame) -> MasterKeyError:
    """The error for a sealed frame met without a cipher (a session not marked encrypted)."""
    return MasterKeyError(
        f"the record at seq {frame.seq} is encrypted and no data key is loaded for it",
        hint=_HINT,
        seq=frame.seq,
    )


def resolve_master(
    key_file: str | None = None, environ: Mapping[str, str] | None = None
) -> MasterKey | None:
    """The master key from ``key_file``, else ``AGENTSESSIONS_KEY_FILE``, else
    ``AGENTSESSIONS_MASTER_KEY``; None when none is configured. ``cryptography`` is imported
    only when one is: a keyless process never loads it."""
    env = os.environ if environ is None else environ
    if not (key_file or env.get(KEY_FILE_ENV) or env.get(MASTER_KEY_ENV)):
        return None
    try:
        from agentsessions.journal.crypto.keys import resolve_master_key
    except ImportError:
        raise MasterKeyError(
            "a master key is configured but encryption needs the 'cryptography' package",
            hint="pip install cryptography",
        ) from None
    return resolve_master_key(key_file or None, env)


def shred(store: object, uid: str) -> bool:
    """Destroy session ``uid``'s data key for good (FORMAT.md 15, "Shredding"): ``SHREDDED``
    first, then ``KEY`` overwritten, synced and unlinked, under the session's LOCK (a live
    writer holding the key in memory makes this LockHeldError, never a race). Afterwards
    its content is unreadable with or without the master key; ``verify`` still checks its
    structure. False when it was already shredded (idempotent: a second run finishes a
    shred a crash cut). A plaintext session, or a store without session directories, is
    InvalidArgumentError: there is no key to destroy."""
    sdir = check_shreddable(store, uid)
    from agentsessions.journal.crypto.keys import KeyDir

    lock = SessionLock(sdir.lock_file, session=uid)
    lock.acquire()
    try:
        return KeyDir(sdir.path, uid, getattr(store, "fs", DEFAULT_FS)).shred()
    finally:
        lock.release()


def check_shreddable(store: object, uid: str) -> SessionDir:
    """The directory of encrypted session ``uid``; InvalidArgumentError for a plaintext one
    or a store without session directories (nothing to shred)."""
    session_dir = getattr(store, "session_dir", None)
    if session_dir is None:
        raise InvalidArgumentError(f"shred: {type(store).__name__} keeps no session keys")
    sdir = SessionDir(session_dir(uid))
    if not sdir.read_meta().encrypted:
        raise InvalidArgumentError(
            f"session {uid} is not encrypted: it has no key to shred",
            hint=f"agentsessions delete {uid} soft-deletes it",
            session=uid,
        )
    return sdir


def rewrap_keys(store: object, old: MasterKey, new: MasterKey) -> int:
    """Master-key rotation of a file store (``keys.rewrap_all`` over every ``KEY`` in it:
    each session's, scope ``uid``, and each tool store's, scope ``uid/name``); a wrong
    ``old`` changes nothing, keys already wrapped by ``new`` are skipped. Returns how many."""
    from agentsessions.journal.crypto.keys import KeyDir, rewrap_all

    fs = getattr(store, "fs", DEFAULT_FS)
    session_dir = getattr(store, "session_dir", None)
    uids = getattr(store, "uids", None)
    if session_dir is None or uids is None:
        raise InvalidArgumentError(f"rotation: {type(store).__name__} keeps no key files")
    dirs = []
    for uid in uids():
        sdir = SessionDir(session_dir(uid))
        dirs.append(KeyDir(sdir.path, uid, fs))
        parts = sdir.path / "components"  # filecomponent.COMPONENTS_NAME (it imports this)
        for key in sorted(parts.glob(f"*/{KEY_NAME}")):  # tool stores that have a key
            if not key.parent.name.startswith("."):  # not one being built (.tmp-*)
                dirs.append(KeyDir(key.parent, f"{uid}/{key.parent.name}", fs))
    return rewrap_all(dirs, old, new)
