"""Encryption at rest in the JetStream store: sealing before a commit leaves the process,
opening on read (docs/JETSTREAM.md, "Encryption at rest"; docs/FORMAT.md section 15).

A session created while the store holds a master key is *encrypted*: its metadata says so
(``"encrypted": true``, as ``session.json`` does), its data key is stored wrapped in the
key stream (``jetstream/keys.py``) before that metadata, and every commit its writers publish
carries sealed records (``crypto.sealed``: content hashes, chain, fences and tail
checkpoints as in a plaintext journal) and a sealed state blob (``crypto.blobs``, bound to
the state's version and range). Each tool store of such a session gets a data key of its
own (scope ``uid/name``), made by its first writer. Its tool receipts and workloads are
sealed under the session's data key too (``jetstream/extras.py``, :meth:`Keyring.host_cipher`),
so the server only ever holds ciphertext of events, working state, receipts and workloads.

Invariants:
- ``cryptography`` is imported only when a key is used (a keyless process never loads it);
- the marker in the metadata, not the presence of a key, says a session is encrypted: a
  missing key is SessionKeyError (exit 26), never a plaintext session; a plaintext commit
  in an encrypted session, or a sealed one in a plaintext session, is refused, never read;
- a SHREDDED marker on the journal stream wins over any key still stored (a shred cut by a
  crash): KeyShreddedError, with or without the master key;
- no key bytes appear in a repr, a message or an error field.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from agentsessions.errors import (
    ChainBrokenError,
    InvalidArgumentError,
    JournalCorruptError,
    KeyShreddedError,
    LockHeldError,
    MasterKeyError,
    SessionKeyError,
)
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.capabilities import VerifyRecord
from agentsessions.journal.stores.jetstream import wire
from agentsessions.journal.stores.jetstream.keys import KeyStream, StoredKey
from agentsessions.journal.stores.store import SessionMeta, WorkingState

if TYPE_CHECKING:
    from agentsessions.journal.crypto.cipher import SessionCipher
    from agentsessions.journal.crypto.keys import MasterKey, RewrapCount

_HINT = "give the master key: key_file, AGENTSESSIONS_KEY_FILE or AGENTSESSIONS_MASTER_KEY"
_STATE_BINDING = struct.Struct("<QQQ")  # version, covers_from, covers_to


def scope_of(uid: str, component: str = "") -> str:
    """The scope a key and its ciphertexts are bound to (``crypto.sealed.scope_of``)."""
    return f"{uid}/{component}" if component else uid


class SubjectCipher:
    """One journal subject's data key bound to its scope: seals records and state on
    commit, opens sealed messages on read. Holds no key bytes in its repr."""

    def __init__(self, data_key: bytes, scope: str) -> None:
        self._key = data_key
        self.scope = scope

    def __repr__(self) -> str:
        return f"SubjectCipher(scope={self.scope!r})"

    def seal_record(self, record: Record) -> bytes:
        """The sealed bytes of ``record`` (its seq, link and content hash unchanged)."""
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

    def seal_state(self, state: WorkingState) -> bytes:
        """The sealed blob of ``state``'s bytes, bound to its version and range."""
        from agentsessions.journal.crypto import blobs

        return blobs.seal_blob(self._key, self.scope, "state", state.data, binding=_binding(state))

    def open(self, msg: wire.Message, *, state: bool = True) -> wire.Message:
        """``msg`` with its records and state decrypted (tags and content hashes checked);
        ``state=False`` (a read of records) leaves the state out undecrypted."""
        from agentsessions.journal.crypto import blobs, sealed

        if not msg.sealed:
            return msg
        records = tuple(
            sealed.open_record(self._key, self.scope, r.payload, seq=r.seq, fence=r.fence)
            for r in msg.records
        )
        if not state:
            return replace(msg, records=records, state=None, sealed=False)
        working = msg.state
        if working is not None:
            data = blobs.open_blob(
                self._key, self.scope, "state", working.data, binding=_binding(working)
            )
            working = replace(working, data=data)
        return replace(msg, records=records, state=working, sealed=False)

    def check_state(self, msg: wire.Message) -> None:
        """Authenticate a sealed message's state blob (``verify``); JournalCorruptError,
        naming the journal seq it was committed at, when it does not."""
        from agentsessions.journal.crypto import blobs

        if msg.state is None:
            return
        seq = wire.head_seq(msg)
        try:
            blobs.open_blob(
                self._key, self.scope, "state", msg.state.data, binding=_binding(msg.state)
            )
        except JournalCorruptError as exc:
            raise JournalCorruptError(
                f"{exc} (the state committed at seq {seq})", seq=seq
            ) from None

    def content_hash(self, seq: int, payload: bytes) -> str:
        """A key holder's check of one sealed record (``verify``): its content hash."""
        from agentsessions.journal.crypto import sealed

        return sealed.open_record(self._key, self.scope, payload, seq=seq).content_hash


def _binding(state: WorkingState) -> bytes:
    return _STATE_BINDING.pack(state.version, state.covers_from, state.covers_to)


class Opener:
    """How the messages of one journal subject are read: plaintext ones as they are, sealed
    ones through the subject's cipher, loaded on the first sealed message (so a read that
    meets none needs no key). Refuses a message whose form contradicts the session's marker."""

    def __init__(
        self, scope: str, encrypted: bool, load: Callable[[], SubjectCipher] | None = None
    ) -> None:
        self.scope, self.encrypted = scope, encrypted
        self._load = load
        self._cipher: SubjectCipher | None = None

    @classmethod
    def loaded(cls, cipher: SubjectCipher) -> Opener:
        """An opener around a cipher already loaded (a writer's)."""
        opener = cls(cipher.scope, True)
        opener._cipher = cipher
        return opener

    @property
    def cipher(self) -> SubjectCipher:
        """The subject's cipher (loading its key: exit 26 errors when it cannot be had)."""
        if self._cipher is None:
            if self._load is None:
                raise MasterKeyError(
                    f"{self.scope}: a record is encrypted and no data key is loaded for it",
                    hint=_HINT,
                    param="key_file",
                    session=self.scope,
                )
            self._cipher = self._load()
        return self._cipher

    def open(self, msg: wire.Message, *, state: bool = True) -> wire.Message:
        """``msg`` readable: decrypted if sealed (``state=False``: its records only, the
        state left out); refused if it contradicts the marker."""
        if msg.sealed:
            if not self.encrypted:
                raise MasterKeyError(
                    f"{self.scope}: JetStream message {msg.stream_seq} is encrypted but the "
                    "session is not marked encrypted",
                    hint=_HINT,
                    param="key_file",
                    session=self.scope,
                )
            return self.cipher.open(msg, state=state)
        if self.encrypted and msg.kind == "c" and (msg.records or msg.state is not None):
            raise JournalCorruptError(
                f"{self.scope}: JetStream message {msg.stream_seq} is a plaintext commit in an "
                "encrypted session (not written by its writers)",
                session=self.scope,
            )
        return msg

    def opened(self, messages: Iterable[wire.Message]) -> Iterator[wire.Message]:
        """:meth:`open` over ``messages``."""
        for msg in messages:
            yield self.open(msg)


PLAIN = Opener("", False)  # a plaintext subject: sealed messages refused


def stored_key(keys: KeyStream, uid: str, component: str = "") -> StoredKey:
    """The wrapped data key of session ``uid`` (or of its tool store ``component``) as the
    key stream holds it; SessionKeyError (exit 26) when it is missing, never a plaintext
    session."""
    subject = keys.subject(uid, component)
    stored = keys.get(subject)
    if stored is None:
        raise SessionKeyError(
            f"{scope_of(uid, component)}: the wrapped data key is missing from the key stream "
            f"({keys.name}, subject {subject})",
            hint="restore it from a backup of the key stream",
            session=uid,
        )
    return stored


class Keyring:
    """The data keys of one JetStream store's sessions: made, loaded and unwrapped with the
    store's master key (None: keyless, which reads only what is stored in the clear).

    An unwrapped data key is kept in memory after its first use (a read then costs no key
    fetch); the SHREDDED marker is still read before every use, so a shred made on any host
    takes effect at once. A data key never changes for its scope (a rotation rewraps the
    same key), so the kept one stays right; a shred through this store forgets it."""

    def __init__(self, keys: KeyStream, master: MasterKey | None) -> None:
        self.keys, self.master = keys, master
        self._data_keys: dict[str, bytes] = {}  # scope -> its unwrapped data key
        self.key_fetches = 0  # key-stream reads made to unwrap (tests count them)

    def create(self, uid: str, component: str = "") -> bytes:
        """Make, wrap and store a new data key for ``uid`` (or its tool store); returns it.
        A key already there (a create that failed after it) is unwrapped and kept: no
        content was ever sealed under it without it being stored first."""
        from agentsessions.journal.crypto import keys

        assert self.master is not None
        scope, subject = scope_of(uid, component), self.keys.subject(uid, component)
        data_key = os.urandom(keys.KEY_BYTES)
        if self.keys.put(subject, keys.wrap(data_key, self.master, scope), expect=0) is None:
            return self._data_key(uid, component)
        self._data_keys[scope] = data_key
        return data_key

    def cipher(
        self, meta: SessionMeta, component: str = "", *, create: bool = False
    ) -> SubjectCipher | None:
        """The cipher of ``meta``'s journal (or tool store ``component``; ``create``: make
        its key if it has none yet). None for a plaintext session. KeyShreddedError after a
        shred (with or without the master key), MasterKeyError with no or another master
        key, SessionKeyError when the key is missing: all exit 26."""
        if not meta.encrypted:
            return None
        uid, scope = meta.uid, scope_of(meta.uid, component)
        self._check_usable(uid, scope)
        kept = scope in self._data_keys
        if create and not kept and self.keys.get(self.keys.subject(uid, component)) is None:
            data_key = self.create(uid, component)
            self._check_usable(uid, scope)  # a shred that came in between wins
            return SubjectCipher(data_key, scope)
        return SubjectCipher(self._data_key(uid, component), scope)

    def host_cipher(self, uid: str) -> SessionCipher:
        """The cipher of encrypted session ``uid``'s host data (tool receipts, workloads):
        blobs and receipt ids under its data key, as the file store seals its
        ``TOOLRECEIPTS`` and ``WORKLOAD`` files (``journal.crypto.cipher.SessionCipher``).
        The exit 26 errors of :meth:`cipher` when it cannot be had."""
        self._check_usable(uid, uid)
        from agentsessions.journal.crypto.cipher import SessionCipher

        return SessionCipher(self._data_key(uid, ""), uid)

    def forget(self, uid: str) -> None:
        """Drop the kept data keys of session ``uid`` and its tool stores (its shred)."""
        for scope in [s for s in self._data_keys if s == uid or s.startswith(uid + "/")]:
            self._data_keys.pop(scope, None)

    def opener(self, meta: SessionMeta, component: str = "", *, check: bool = True) -> Opener:
        """An :class:`Opener` for ``meta``'s journal (or tool store ``component``), loading
        the data key on the first sealed message. ``check``: refuse at once (exit 26) a read
        of a shredded session, or of an encrypted one without a master key, even if it
        holds no sealed message yet (as the file store does)."""
        scope = scope_of(meta.uid, component)
        if not meta.encrypted:
            return Opener(scope, False)

        def load() -> SubjectCipher:
            if check:  # checked just now: only the key is left to fetch
                return SubjectCipher(self._data_key(meta.uid, component), scope)
            cipher = self.cipher(meta, component)
            assert cipher is not None
            return cipher

        if check:
            self._check_usable(meta.uid, scope)
        return Opener(scope, True, load)

    def wrapped_by(self, subject: str) -> str:
        """The id of the master key the key on ``subject`` is wrapped by (``""``: none)."""
        stored = self.keys.get(subject)
        if stored is None:
            return ""
        try:
            return str(json.loads(stored.content)["master_key_id"])
        except (ValueError, KeyError, TypeError):
            raise JournalCorruptError(f"{subject} is not a wrapped data key") from None

    def rewrap_all(self, old: MasterKey, new: MasterKey) -> RewrapCount:
        """Master-key rotation over the key stream (``keys.rewrap_all``'s rules): every key
        is unwrapped with ``old`` before any changes, so a wrong ``old`` changes nothing;
        keys already wrapped by ``new`` (a rotation cut short) and shredded sessions' keys
        are skipped; each rewrap replaces its key message with CAS at the one read (a
        concurrent rewrap or shred is a ConflictError: run it again). Returns how many."""
        from agentsessions.journal.crypto import keys

        todo, already, shredded = [], 0, 0
        for subject in self.keys.subjects():
            stored = self.keys.get(subject)
            scope = self.keys.scope_of_subject(subject)
            if stored is None or self.keys.shredded(scope.split("/", 1)[0]):
                shredded += 1
                continue
            if self.wrapped_by(subject) == new.key_id:
                already += 1
                continue
            keys.unwrap(stored.content, old, scope, where=subject)
            todo.append((stored, scope))
        for stored, scope in todo:
            content = keys.rewrap(stored.content, old, new, scope)
            if self.keys.put(stored.subject, content, expect=stored.stream_seq) is None:
                raise LockHeldError(
                    f"{scope}: its data key changed during the rotation (another rotation or "
                    "a shred came in); run the rotation again to finish it",
                    session=scope,
                )
        return keys.RewrapCount(len(todo), already, shredded)

    def _data_key(self, uid: str, component: str) -> bytes:
        """The unwrapped data key of ``uid`` (or its tool store), kept after its first
        unwrap; callers check the SHREDDED marker first."""
        scope = scope_of(uid, component)
        data_key = self._data_keys.get(scope)
        if data_key is None:
            data_key = self._data_keys[scope] = self._unwrap(uid, component)
        return data_key

    def _unwrap(self, uid: str, component: str) -> bytes:
        from agentsessions.journal.crypto import keys

        assert self.master is not None
        self.key_fetches += 1
        stored = stored_key(self.keys, uid, component)
        return keys.unwrap(
            stored.content, self.master, scope_of(uid, component), where=stored.subject
        )

    def _check_usable(self, uid: str, scope: str) -> None:
        """KeyShreddedError after a shred (whatever the master key), MasterKeyError without one."""
        if self.keys.shredded(uid):
            raise KeyShreddedError(
                f"{scope}: the data key was shredded; the content is unreadable for good",
                hint="verify SESSION still checks the journal's structure",
                session=uid,
            )
        if self.master is None:
            raise MasterKeyError(
                f"{scope} is encrypted and no master key was given",
                hint=_HINT,
                param="key_file",
                session=uid,
            )


def verify_check(
    ring: Keyring, meta: SessionMeta, component: str, notes: list[str] | None
) -> SubjectCipher | None:
    """A key holder's cipher for ``verify`` of ``meta``'s journal (or tool store): None
    without the master key (the keyless walk) or after a shred, which ``notes`` then
    records. A wrong or missing key raises: the caller asked to check with it."""
    if ring.master is None or not meta.encrypted:
        return None
    try:
        cipher = ring.cipher(meta, component)
    except KeyShreddedError:
        if notes is not None:
            notes.append(f"{scope_of(meta.uid, component)}: the data key was shredded")
        return None
    return cipher


def verify_records(
    messages: Iterable[wire.Message],
    ring: Keyring,
    meta: SessionMeta,
    component: str,
    notes: list[str] | None,
) -> Iterator[VerifyRecord]:
    """The records of one journal subject's ``messages`` as ``verify`` walks them (see
    ``JetStreamStore.verify_items``); with the key, each state blob is authenticated too."""
    messages = list(messages)
    opener = ring.opener(meta, component, check=False)
    cipher = None
    if any(m.sealed for m in messages):
        cipher = verify_check(ring, meta, component, notes)
    check = None if cipher is None else cipher.content_hash
    for msg in messages:
        if not msg.sealed:
            opener.open(msg)  # a plaintext commit in an encrypted session is refused
            yield from (VerifyRecord(r.seq, r.payload, r.content_hash) for r in msg.records)
            continue
        if not meta.encrypted:
            opener.open(msg)  # sealed records in a plaintext session are refused
        yield from (
            VerifyRecord(r.seq, r.payload, r.content_hash, True, check) for r in msg.records
        )
        if cipher is not None:  # with the key, the working state's tag too
            cipher.check_state(msg)


def sealed_export(
    ring: Keyring, meta: SessionMeta, messages: Callable[[], Iterable[wire.Message]]
) -> tuple[dict[str, object], Iterator[Record]]:
    """What ``export --ciphertext`` ships of encrypted session ``meta`` (the file store's
    ``file/crypt.py``'s ``sealed_export``, from the stream): ``{"scope", "key"}`` (its uid and its
    wrapped data key from the key stream, the same JSON a file store's ``KEY`` holds) and
    its records as stored, sealed (``messages``: its journal subject's). No master key is
    needed; a shredded or missing key is exit 26, a plaintext session or a fork child
    InvalidArgumentError, a plaintext commit among them JournalCorruptError (exit 8)."""
    from agentsessions.journal.crypto.cipher import check_sealed_exportable

    uid = meta.uid
    if not meta.encrypted:
        raise InvalidArgumentError(
            f"session {uid} is not encrypted: it has no ciphertext to export",
            hint=f"agentsessions export {uid} -o FILE",
            session=uid,
        )
    check_sealed_exportable(meta, ring.keys.shredded(uid))
    stored = stored_key(ring.keys, uid)
    try:
        key = json.loads(stored.content)
    except ValueError:
        raise JournalCorruptError(f"{stored.subject} is not a wrapped data key") from None

    def records() -> Iterator[Record]:
        for msg in messages():
            if msg.records and not msg.sealed:
                raise JournalCorruptError(
                    f"{uid}: JetStream message {msg.stream_seq} is a plaintext commit in an "
                    "encrypted session (not written by its writers)",
                    session=uid,
                )
            yield from msg.records

    return {"scope": uid, "key": key}, records()
