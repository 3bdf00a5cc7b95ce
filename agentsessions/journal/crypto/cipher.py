"""A store's data key bound to its scope: what every backend seals and opens with.

Encryption at rest is the same layer in the file, JetStream and in-memory stores (FORMAT.md
15): a :class:`SessionCipher` seals each record on append (its content hash unchanged) and
opens it on read, and seals the bytes that are not records (working state, tool receipts,
workloads) as blobs bound to their position. Where a backend keeps the wrapped data key is
its own business (``KEY`` files, a key stream, a dict).

Invariants:
- ``cryptography`` is imported only when a master key is in play (a MasterKey exists only
  if it imported), so a keyless process (the CLI's startup, the zipapp) never loads it;
- a sealed record's content hash is the plaintext record's, so a writer's tail, the TAIL
  hint and every link are the same as in a plaintext journal of the same events.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Protocol

from agentsessions.errors import InvalidArgumentError, KeyShreddedError, MasterKeyError

# the master key's choice: its own module, so a keyless open imports neither this nor keys
from agentsessions.journal.crypto.configured import KEY_FILE_ENV as KEY_FILE_ENV
from agentsessions.journal.crypto.configured import MASTER_KEY_ENV as MASTER_KEY_ENV
from agentsessions.journal.crypto.configured import resolve_master as resolve_master
from agentsessions.journal.format import segment, staterecord
from agentsessions.journal.format.records import Record

if TYPE_CHECKING:
    pass


class _Lineage(Protocol):
    """What :func:`check_sealed_exportable` reads of a session's metadata."""

    @property
    def uid(self) -> str: ...

    @property
    def parent_uid(self) -> str: ...

    @property
    def fork_seq(self) -> int: ...


BLOB_OVERHEAD = 36  # journal.crypto.blobs.BLOB_OVERHEAD: a sealed blob's head and tag


KEY_HINT = "give the master key: key_file, AGENTSESSIONS_KEY_FILE or AGENTSESSIONS_MASTER_KEY"


class SessionCipher:
    """One encrypted store's data key bound to its scope (the session uid, or ``uid/tool``
    for a tool store): seals records on append, opens sealed EVENT frames on read, and seals
    the bytes that are not records (working state, receipts, workloads) as blobs bound to
    their position (``journal.crypto.blobs``). Holds no key bytes in its repr."""

    def __init__(self, data_key: bytes, scope: str) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        from agentsessions.journal.crypto.sealed import check_key

        check_key(data_key)
        self._key = data_key
        self._aead = AESGCM(data_key)  # made once: the append path seals every event with it
        self.scope = scope

    def __repr__(self) -> str:
        return f"SessionCipher(scope={self.scope!r})"

    @property
    def sealed_state(self) -> bool:
        """STATE frames of this store hold sealed bytes (always, for a cipher)."""
        return True

    def seal(self, record: Record) -> bytes:
        """The sealed payload of ``record`` (its seq, link and content hash unchanged). Its
        hash is its envelope's: the tail built it, or checked it (``Tail.check_records``)."""
        from agentsessions.journal.crypto import sealed

        return sealed.seal_record(self._aead, self.scope, record)

    def open(self, frame: segment.Frame) -> Record:
        """The plaintext record of a sealed EVENT ``frame`` (its tag and hash checked)."""
        return self.open_payload(frame.payload, seq=frame.seq, fence=frame.fence)

    def open_payload(self, payload: bytes | memoryview, *, seq: int, fence: int = 0) -> Record:
        """The plaintext record of a sealed record's bytes stored at ``seq``."""
        from agentsessions.journal.crypto import sealed

        return sealed.open_record(self._key, self.scope, payload, seq=seq, fence=fence)

    def seal_blob(self, kind: str, data: bytes, binding: bytes) -> bytes:
        """``data`` sealed as a blob of ``kind`` bound to ``binding`` (blobs.seal_blob)."""
        from agentsessions.journal.crypto import blobs

        return blobs.seal_blob(self._key, self.scope, kind, data, binding=binding)

    def open_blob(self, kind: str, blob: bytes | memoryview, binding: bytes) -> bytes:
        """The plaintext of a blob sealed by :meth:`seal_blob` (JournalCorruptError, exit 8,
        when its tag fails: damaged, moved, or another key's)."""
        from agentsessions.journal.crypto import blobs

        return blobs.open_blob(self._key, self.scope, kind, blob, binding=binding)

    def seal_state(self, record: staterecord.StateRecord) -> bytes:
        """A STATE record's data sealed, bound to its version, covers and chain position."""
        return self.seal_blob(STATE_KIND, record.data, state_binding(record))

    def open_state(self, record: staterecord.StateRecord) -> bytes:
        """The plaintext data of a STATE record whose data :meth:`seal_state` sealed."""
        return self.open_blob(STATE_KIND, record.data, state_binding(record))

    state_data = open_state  # as LazyCipher.state_data: what statefile asks

    def receipt_id(self, key: str) -> str:
        """The name a receipt is filed under instead of its idempotency key: a MAC of the key
        under the data key, so the file does not show the key and lookups stay direct."""
        mac = hmac.new(self._key, _RECEIPT_ID_LABEL + key.encode(), hashlib.sha256)
        return mac.hexdigest()[:32]


STATE_KIND = "state"


RECEIPT_KIND = "receipt"


WORKLOAD_KIND = "workload"


_RECEIPT_ID_LABEL = b"agentsessions.receipt-id.v1\x00"


def state_binding(record: staterecord.StateRecord) -> bytes:
    """What a sealed state's tag binds it to: its version, the range it covers and the chain
    head it follows, so a state blob moved to another version or position fails its tag."""
    return (
        f"{record.version}:{record.covers_from}:{record.covers_to}:"
        f"{record.chain_seq}:{record.chain_hash}"
    ).encode()


def keyless_refusal(frame: segment.Frame) -> MasterKeyError:
    """The error for a sealed frame met without a cipher (a session not marked encrypted)."""
    return MasterKeyError(
        f"the record at seq {frame.seq} is encrypted and no data key is loaded for it",
        hint=KEY_HINT,
        param="key_file",
        seq=frame.seq,
    )


def check_sealed_exportable(meta: _Lineage, shredded: bool) -> None:
    """Refuse a ciphertext export of a fork child (its prefix is sealed under its parent's
    key, which the export does not carry: InvalidArgumentError) or of a shredded session
    (KeyShreddedError, exit 26). Every store's ``sealed_export`` asks this first."""
    uid = meta.uid
    if meta.parent_uid:
        raise InvalidArgumentError(
            f"session {uid} is a fork child: its first {meta.fork_seq} records are sealed "
            f"under its parent's key, which a ciphertext export does not carry",
            hint="a decrypted export (encryption='decrypt') is plaintext",
            param="encryption_decrypt",
            session=uid,
        )
    if shredded:
        raise KeyShreddedError(
            f"{uid}: the data key was shredded; there is nothing readable to export",
            hint="verify SESSION still checks the journal's structure",
            session=uid,
        )
