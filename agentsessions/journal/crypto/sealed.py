"""Sealed records: one journal event encrypted under its session's data key.

The layer any store applies before a record's bytes leave the process: the file store
writes the sealed bytes as an EVENT frame's payload (``FLAG_ENCRYPTED``, docs/FORMAT.md
section 15), a distributed store as a message body. Nothing here knows a file format.

Layout (little-endian): ``magic "AGSE" | u8 version | u8 alg | u16 reserved | prev_hash[32]
| content_hash[32] | nonce[12] | AES-256-GCM(event_json) with its 16-byte tag``.

Invariants:
- the chain fields (seq from the frame, ``prev_hash``, ``content_hash``) are in the clear,
  so a reader without the key checks every link (:func:`check_links`);
- ``content_hash`` is the reference-compatible hash of the *plaintext* envelope
  ``JCS({"event","prev_hash","seq"})``: encryption changes no hash, and a key holder
  recomputes it from the decrypted event (:func:`open_record`);
- the AAD binds the scope (session uid, and tool store name), the seq and the clear head,
  so ciphertext moved to another seq, record, session or store fails its tag;
- only the event is encrypted: the envelope's other two fields are the clear head.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable
from typing import NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from agentsessions.errors import ChainBrokenError, InvalidArgumentError, JournalCorruptError
from agentsessions.journal.format import canonical, sealedhead
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.sealedhead import (
    ALG_AES_256_GCM,
    HEAD,
    HEAD_SIZE,
    SEALED_MAGIC,
    SEALED_VERSION,
)
from agentsessions.journal.format.segment import hash_bytes, hash_hex

_AAD_LABEL = b"agentsessions.sealed.v1\x00"
_SEQ = struct.Struct("<Q")


class SealedHead(NamedTuple):
    """The clear part of a sealed record: what a reader without the key can check."""

    prev_hash: str
    content_hash: str
    nonce: bytes


def scope_of(session_uid: str, component: str = "") -> str:
    """The name a key and its ciphertexts are bound to: ``uid`` or ``uid/tool``."""
    return f"{session_uid}/{component}" if component else session_uid


def _aad(scope: str, seq: int, head: bytes) -> bytes:
    return _AAD_LABEL + scope.encode() + b"\x00" + _SEQ.pack(seq) + head[: HEAD_SIZE - 12]


def seal(
    data_key: bytes, scope: str, event_json: bytes, *, seq: int, prev_hash: str
) -> tuple[bytes, Record]:
    """Encrypt the canonical ``event_json`` appended at ``seq`` after ``prev_hash``.

    Returns the sealed bytes to store and the plaintext :class:`Record` they stand for
    (its ``content_hash`` is the one a plaintext journal would have).
    """
    check_key(data_key)
    record = Record.seal(event_json, seq=seq, prev_hash=prev_hash, fence=0)
    nonce = os.urandom(12)
    head = HEAD.pack(
        SEALED_MAGIC, SEALED_VERSION, ALG_AES_256_GCM, 0,
        hash_bytes(prev_hash), bytes.fromhex(record.content_hash), nonce,
    )  # fmt: skip
    ciphertext = AESGCM(data_key).encrypt(nonce, event_json, _aad(scope, seq, head))
    return head + ciphertext, record


def seal_record(aead: AESGCM, scope: str, record: Record) -> bytes:
    """:func:`seal` for a plaintext ``record`` a store built itself (its ``content_hash`` is
    its envelope's, which is not recomputed), with an ``AESGCM`` of the data key made once:
    the append path's form. A record whose hash is not its envelope's would read back as a
    ChainBrokenError (:func:`open_record` recomputes it), never as another record."""
    nonce = os.urandom(12)
    head = HEAD.pack(
        SEALED_MAGIC, SEALED_VERSION, ALG_AES_256_GCM, 0,
        hash_bytes(record.prev_hash), bytes.fromhex(record.content_hash), nonce,
    )  # fmt: skip
    return head + aead.encrypt(nonce, record.event_json, _aad(scope, record.seq, head))


def head_of(sealed: bytes | memoryview, *, seq: int) -> SealedHead:
    """The clear head of ``sealed``; JournalCorruptError when it is not a sealed record."""
    parsed = sealedhead.parse(sealed)
    if parsed is None:
        raise JournalCorruptError(f"record at seq {seq} is not a sealed record", seq=seq)
    prev, content, nonce = parsed
    return SealedHead(hash_hex(prev), content.hex(), nonce)


def open_record(
    data_key: bytes, scope: str, sealed: bytes | memoryview, *, seq: int, fence: int = 0
) -> Record:
    """Decrypt ``sealed`` (stored at ``seq`` in ``scope``) into its plaintext Record.

    A failed tag (a flipped byte, ciphertext moved from another seq, record, session or
    store, or another data key) is JournalCorruptError; a plaintext whose envelope does
    not hash to the clear ``content_hash`` is ChainBrokenError. Never returns garbage.
    """
    check_key(data_key)
    raw = bytes(sealed)
    head = head_of(raw, seq=seq)
    try:
        event_json = AESGCM(data_key).decrypt(
            head.nonce, raw[HEAD_SIZE:], _aad(scope, seq, raw[:HEAD_SIZE])
        )
    except InvalidTag:
        raise JournalCorruptError(
            f"{scope}: the sealed record at seq {seq} does not authenticate: damaged, "
            "moved from another record or session, or sealed under another key",
            seq=seq,
            session=scope,
        ) from None
    payload = canonical.envelope_unchecked(event_json, head.prev_hash, seq)
    if hashlib.sha256(payload).hexdigest() != head.content_hash:
        raise ChainBrokenError(
            f"{scope}: content_hash mismatch at seq {seq} after decryption", seq=seq
        )
    return Record(seq, head.prev_hash, head.content_hash, fence, payload)


def check_links(
    sealed: Iterable[tuple[int, bytes | memoryview]], *, base_seq: int = 0, base_hash: str = ""
) -> tuple[int, str]:
    """Keyless verify of ``(seq, sealed)`` pairs continuing ``base_seq``/``base_hash``:
    every head parses, seqs are contiguous and each ``prev_hash`` is the previous record's
    ``content_hash``. Returns the last ``(seq, content_hash)``; ChainBrokenError on a break.

    Integrity of the bytes themselves is the store's check (the frame CRC, the zstd
    checksum); the tag is checked only by a key holder (:func:`open_record`).
    """
    if base_hash:
        hash_bytes(base_hash)  # a malformed base is the caller's bug, not a broken chain
    last_seq, last_hash = base_seq, base_hash
    for seq, blob in sealed:
        if seq != last_seq + 1:
            raise ChainBrokenError(f"expected seq {last_seq + 1}, got {seq}", seq=seq)
        head = head_of(blob, seq=seq)
        if head.prev_hash != last_hash:
            raise ChainBrokenError(f"prev_hash mismatch at seq {seq}", seq=seq)
        last_seq, last_hash = seq, head.content_hash
    return last_seq, last_hash


def check_key(data_key: bytes) -> None:
    """Refuse a data key of the wrong length before it reaches AESGCM (a clear message)."""
    if len(data_key) != 32:
        raise InvalidArgumentError(f"a data key is 32 bytes, not {len(data_key)}")
