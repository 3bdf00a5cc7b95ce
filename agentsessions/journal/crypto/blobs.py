"""Sealed blobs: bytes other than events encrypted under a session's (or tool store's) data key.

Working-state bytes, tool receipts and workload texts are not chain records, so they do not
use the sealed-record head (``sealed.py``); they still must never leave the process in the
clear when their session is encrypted. A blob is bound by its AAD to the scope (session uid,
``uid/tool`` for a tool store), a *kind* (``state``, ``receipt``, ``workload``...) and a
caller-chosen *binding* (for example the state version and the seq it covers), so a blob
moved to another session, kind or position fails its tag instead of being read as another's.

Layout: ``magic "AGSB" | u8 version | u8 alg | u16 reserved | nonce[12] | AES-256-GCM(data)``
(20 bytes of head, then the ciphertext and its 16-byte tag).
"""

from __future__ import annotations

import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from agentsessions.errors import InvalidArgumentError, JournalCorruptError
from agentsessions.journal.crypto.sealed import check_key

BLOB_MAGIC = b"AGSB"
BLOB_VERSION = 1
_ALG = 1  # AES-256-GCM
_HEAD = struct.Struct("<4sBBH12s")
BLOB_HEAD_SIZE = _HEAD.size  # 20
BLOB_OVERHEAD = BLOB_HEAD_SIZE + 16
_AAD_LABEL = b"agentsessions.blob.v1\x00"


def _aad(scope: str, kind: str, binding: bytes, head: bytes) -> bytes:
    if "\x00" in scope or "\x00" in kind:
        raise InvalidArgumentError("a blob's scope and kind may not contain NUL")
    return (
        _AAD_LABEL
        + scope.encode()
        + b"\x00"
        + kind.encode()
        + b"\x00"
        + struct.pack("<I", len(binding))
        + binding
        + head[: BLOB_HEAD_SIZE - 12]
    )


def is_blob(data: bytes | memoryview) -> bool:
    """Whether ``data`` starts like a sealed blob (a cheap check; only the tag proves it)."""
    return len(data) >= BLOB_OVERHEAD and bytes(data[:4]) == BLOB_MAGIC


def seal_blob(
    data_key: bytes, scope: str, kind: str, data: bytes, *, binding: bytes = b""
) -> bytes:
    """Encrypt ``data`` as a blob of ``kind`` in ``scope``, bound to ``binding``."""
    check_key(data_key)
    nonce = os.urandom(12)
    head = _HEAD.pack(BLOB_MAGIC, BLOB_VERSION, _ALG, 0, nonce)
    return head + AESGCM(data_key).encrypt(nonce, data, _aad(scope, kind, binding, head))


def open_blob(
    data_key: bytes, scope: str, kind: str, blob: bytes | memoryview, *, binding: bytes = b""
) -> bytes:
    """The plaintext of a blob sealed by :func:`seal_blob` with the same scope, kind and
    binding; JournalCorruptError when it is not a blob or does not authenticate (damaged,
    moved, or sealed under another key). Never returns garbage."""
    check_key(data_key)
    raw = bytes(blob)
    if not is_blob(raw):
        raise JournalCorruptError(f"{scope}: the {kind} bytes are not a sealed blob")
    _magic, version, alg, reserved, nonce = _HEAD.unpack_from(raw)
    if version != BLOB_VERSION or alg != _ALG or reserved:
        raise JournalCorruptError(f"{scope}: the {kind} blob has an unknown version")
    try:
        return AESGCM(data_key).decrypt(
            nonce, raw[BLOB_HEAD_SIZE:], _aad(scope, kind, binding, raw[:BLOB_HEAD_SIZE])
        )
    except InvalidTag:
        raise JournalCorruptError(
            f"{scope}: the sealed {kind} does not authenticate: damaged, moved from another "
            "session or position, or sealed under another key",
            session=scope,
        ) from None
