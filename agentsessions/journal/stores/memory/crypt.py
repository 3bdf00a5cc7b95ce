"""Encryption at rest in the in-memory store: the same layer as the file store's, no files.

A :class:`~agentsessions.journal.stores.memory.store.MemoryStore` given a master key encrypts
each session it creates (and each of its tool stores) under a data key of its own, held
only wrapped (:class:`MemoryKey`: the bytes a ``KEY`` file would hold). What it keeps of an
encrypted session is ciphertext: sealed records (``journal.crypto.sealed``, the payload of a
kept :class:`Record` is the sealed record), sealed state, receipt and workload blobs
(``journal.crypto.blobs``, through :class:`SessionCipher`); the clear parts are the ones a
file store keeps in the clear (metadata, the tail's projection, commit ids, sizes). So the
layer is exercised by the one store contract suite independent of any file format.

Invariants: every read opens what it returns (a failed tag is exit 8, never garbage); no
key, a wrong key or a store without the master key is exit 26; ``cryptography`` is imported
only when a master key is given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agentsessions.errors import MasterKeyError
from agentsessions.journal.crypto.cipher import SessionCipher
from agentsessions.journal.format.records import Record
from agentsessions.journal.stores.store import WorkingState

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

_HINT = "give the master key: MemoryStore(master=...)"


@dataclass(frozen=True)
class MemoryKey:
    """One encrypted in-memory store's data key, wrapped by the master key, and its scope
    (the session uid, or ``uid/tool``)."""

    wrapped: bytes
    scope: str

    @classmethod
    def create(cls, master: MasterKey, scope: str) -> MemoryKey:
        """A new random data key for ``scope``, wrapped by ``master``."""
        from agentsessions.journal.crypto import keys

        return cls(keys.wrap(os.urandom(keys.KEY_BYTES), master, scope), scope)

    def cipher(self, master: MasterKey | None) -> SessionCipher:
        """The unwrapped key's cipher; MasterKeyError (exit 26) without or with another
        master key."""
        if master is None:
            raise MasterKeyError(
                f"{self.scope} is encrypted and no master key was given", hint=_HINT
            )
        from agentsessions.journal.crypto import keys

        return SessionCipher(keys.unwrap(self.wrapped, master, self.scope), self.scope)

    def rewrap(self, old: MasterKey, new: MasterKey) -> MemoryKey:
        """The same data key wrapped by ``new`` (master-key rotation)."""
        from agentsessions.journal.crypto import keys

        return MemoryKey(keys.rewrap(self.wrapped, old, new, self.scope), self.scope)


def seal_records(cipher: SessionCipher | None, records: Iterable[Record]) -> list[Record]:
    """What the store keeps of ``records``: each one's payload sealed (as is without a
    cipher); seq, link, content hash and fence stay as they are."""
    if cipher is None:
        return list(records)
    return [r._replace(payload=cipher.seal(r)) for r in records]


def open_records(cipher: SessionCipher | None, kept: Iterable[Record]) -> list[Record]:
    """The plaintext records of what :func:`seal_records` kept."""
    if cipher is None:
        return list(kept)
    return [cipher.open_payload(r.payload, seq=r.seq, fence=r.fence) for r in kept]


def seal_state(cipher: SessionCipher | None, state: WorkingState) -> tuple[WorkingState, bytes]:
    """``state`` without its data, and the data sealed, bound to the version and covers
    (b"" and the state itself without a cipher)."""
    if cipher is None:
        return state, b""
    blob = cipher.seal_blob("state", state.data, state_binding(state))
    return replace(state, data=b""), blob


def open_state(cipher: SessionCipher | None, state: WorkingState, blob: bytes) -> WorkingState:
    """Inverse of :func:`seal_state`."""
    if cipher is None:
        return state
    return replace(state, data=cipher.open_blob("state", blob, state_binding(state)))


def state_binding(state: WorkingState) -> bytes:
    """What a kept state blob is bound to: its version and the range it covers."""
    return f"{state.version}:{state.covers_from}:{state.covers_to}".encode()
