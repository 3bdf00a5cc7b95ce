"""The clear head of a sealed (encrypted) EVENT payload: what a reader without the key checks.

Pure struct code, no cryptography: the segment codec reads the chain fields of a
``FLAG_ENCRYPTED`` frame through it, and ``agentsessions.journal.crypto.sealed`` builds and
opens the rest. Layout in docs/FORMAT.md section 15 (``layout: sealed-head``).
"""

from __future__ import annotations

import struct

SEALED_MAGIC = b"AGSE"
SEALED_VERSION = 1
ALG_AES_256_GCM = 1
HEAD = struct.Struct("<4sBBH32s32s12s")
HEAD_SIZE = HEAD.size  # 84
TAG_SIZE = 16
_ZERO = bytes(32)


def parse(payload: bytes | memoryview) -> tuple[bytes, bytes, bytes] | None:
    """``(prev_hash, content_hash, nonce)`` raw bytes of a sealed payload, or None when it
    is not one (too short, wrong magic, version, algorithm, reserved bits, no hash)."""
    if len(payload) < HEAD_SIZE + TAG_SIZE:
        return None
    magic, version, alg, reserved, prev, content, nonce = HEAD.unpack_from(payload)
    if magic != SEALED_MAGIC or version != SEALED_VERSION or alg != ALG_AES_256_GCM:
        return None
    if reserved or content == _ZERO:
        return None
    return prev, content, nonce


def chain_of(payload: bytes | memoryview) -> tuple[str, str] | None:
    """``(prev_hash, content_hash)`` as hex (``""`` for no previous event), or None."""
    parsed = parse(payload)
    if parsed is None:
        return None
    prev, content, _ = parsed
    return ("" if prev == _ZERO else prev.hex()), content.hex()
