"""The FENCE file: a session's current writer fence, minted in place with one small sync,
and the acknowledged head the open of the writer that minted it proved.

Layout: two 72-byte slots (``FENCE_SLOT``): ``b"AGSH"``, the fence (u64), the head (its last
seq, the first seq of the segment holding that seq's frame, the frame's offset or -1, the 32
raw bytes of its content hash; the caller says which, ``sessiondir.proved_head``), and the
first 4 bytes of the SHA-256 of the 64 bytes between magic and checksum. The current fence
is the largest valid slot; its head is durable evidence that the journal reached that seq
with that hash (:mod:`.evidence`): a second copy of the acknowledged head, independent of
the ``TAIL`` hint and of the segment itself, which costs no sync of its own (the mint's
fdatasync is paid anyway, once per writer open).

A mint writes ``current + 1`` (or more, see :func:`mint`) into the slot that does *not*
hold the current fence and fdatasyncs the file: a write torn by a crash can damage only that
slot, so the previous fence survives, and a mint that did not finish was never handed to a
writer. That costs one 72-byte write and one fdatasync (about 0.2 ms here) where replacing
the file costs a tmp file, an fsync, a rename and a directory fsync (about 0.95 ms), on
every writer open, that is on every turn.

A missing file means fence 0; the first mint creates it with one slot, atomically; a
one-slot file is valid too, and its next mint fills the second slot. **Older files** hold
16-byte slots without a head (``b"AGSF"``, the fence, 4 bytes of the SHA-256 of the fence),
one or two of them (16 to 32 bytes): they are read as before (a fence, no evidence), and the
next mint replaces such a file atomically with a one-slot file of the current layout.

A file with no valid slot is damaged store data: JournalCorruptError (exit 8) for ``verify``
and for every writer open, which refuse rather than guess a fence (a guess below one already
handed out would let a superseded writer through). One damaged slot of two is not damage: a
torn mint looks exactly so (and the fence it was writing was never handed to a writer).
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from agentsessions.errors import JournalCorruptError, StorageError
from agentsessions.journal.format import evidence
from agentsessions.journal.format.durable import FileSystem
from agentsessions.valueclass import value

__all__ = [
    "FENCE_SLOT",
    "OLD_SLOT_BYTES",
    "SLOT_BYTES",
    "SOURCE",
    "Fence",
    "Head",
    "encode_old_slot",
    "encode_slot",
    "mint",
    "read",
    "read_fence",
]

FENCE_SLOT = struct.Struct("<4sQQQq32s4s")
SLOT_BYTES = FENCE_SLOT.size
OLD_SLOT_BYTES = 16
_MAGIC = b"AGSH"
_OLD_MAGIC = b"AGSF"
SOURCE = "FENCE head"
"""How the FENCE's claim names itself in errors (:class:`.evidence.Acked` ``source``)."""


@value(frozen=True)
class Head:
    """Where the journal ended when a writer opened it: seq, hash, and the frame holding
    that seq (``segment`` its first seq, ``frame`` its offset; -1 when not known)."""

    last_seq: int
    last_hash: str
    segment: int = 0
    frame: int = -1


@value(frozen=True)
class Fence:
    """The current fence and the head its writer opened on (None in an older file)."""

    fence: int
    head: Head | None = None

    def evidence(self) -> tuple[evidence.Acked, ...]:
        """The claim the head makes (none for an older file or an empty journal)."""
        h = self.head
        if h is None or h.last_seq <= 0:
            return ()
        return (evidence.Acked(h.last_seq, h.last_hash, SOURCE, h.segment, h.frame),)


def encode_slot(fence: int, head: Head | None = None) -> bytes:
    """One slot holding ``fence`` and ``head`` (an empty head when None)."""
    h = head or Head(0, "")
    digest = bytes.fromhex(h.last_hash) if h.last_hash else bytes(32)
    body = FENCE_SLOT.pack(_MAGIC, fence, h.last_seq, h.segment, h.frame, digest, b"")[4:68]
    return _MAGIC + body + hashlib.sha256(body).digest()[:4]


def encode_old_slot(fence: int) -> bytes:
    """One slot of the older layout (kept so that tests can build such files)."""
    body = fence.to_bytes(8, "little")
    return _OLD_MAGIC + body + hashlib.sha256(body).digest()[:4]


def _decode(slot: bytes) -> Fence | None:
    """The fence in one slot of either layout (None for a damaged or torn slot)."""
    if len(slot) == OLD_SLOT_BYTES and slot[:4] == _OLD_MAGIC:
        body = slot[4:12]
        ok = hashlib.sha256(body).digest()[:4] == slot[12:]
        return Fence(int.from_bytes(body, "little")) if ok else None
    if len(slot) != SLOT_BYTES or slot[:4] != _MAGIC:
        return None
    if hashlib.sha256(slot[4:68]).digest()[:4] != slot[68:]:
        return None
    _, fence, seq, segment, frame, digest, _ = FENCE_SLOT.unpack(slot)
    last_hash = digest.hex() if seq else ""
    return Fence(fence, Head(seq, last_hash, segment, frame))


def _current(path: Path, raw: bytes) -> tuple[Fence, int, int]:
    """(current fence, index of its slot, slot size); refuses a file with no valid slot."""
    # a second slot cut short is a mint a crash interrupted while it extended the file
    size = next((n for n in (SLOT_BYTES, OLD_SLOT_BYTES) if n <= len(raw) <= 2 * n), 0)
    slots = [_decode(raw[at : at + size]) for at in range(0, len(raw), size)] if size else []
    valid = [(f.fence, i, f) for i, f in enumerate(slots) if f is not None]
    if not valid:
        raise JournalCorruptError(
            f"damaged fence file {path}: no slot holds a valid writer fence",
            hint="restore it from a backup, or with no writer running remove it: the next "
            "writer mints a fence above every one its journal records",
            path=str(path),
            session=path.parent.name,
        )
    _, at, found = max(valid, key=lambda v: (v[0], v[1]))
    return found, at, size


def read_fence(path: Path) -> Fence | None:
    """The persisted fence and head; None when the file is absent. A damaged file is
    refused, never guessed (one damaged slot is not damage: a mint a crash interrupted)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from exc
    return _current(path, raw)[0]


def read(path: Path) -> int:
    """The persisted fence; 0 when the file is absent (see :func:`read_fence`)."""
    found = read_fence(path)
    return 0 if found is None else found.fence


def mint(fs: FileSystem, path: Path, floor: int = 0, head: Head | None = None) -> int:
    """Persist and return a fence above both the current one and ``floor``, with ``head``:
    where the journal the new writer opened ends (checked by that open).

    The caller holds the session's writer lock, so mints never race each other.
    """
    if not path.exists():
        fence = floor + 1
        fs.write_file_atomic(path, encode_slot(fence, head))
        return fence
    fd = fs.open(path, os.O_RDWR)
    try:
        raw = fs.read_at(fd, 2 * SLOT_BYTES + 1, 0)
        current, at, size = _current(path, raw)
        fence = max(current.fence, floor) + 1
        if size == SLOT_BYTES:
            os.lseek(fd, (1 - at) * SLOT_BYTES, os.SEEK_SET)
            fs.write_all(fd, encode_slot(fence, head))
            fs.sync(fd)
            return fence
    finally:
        fs.close(fd)
    fs.write_file_atomic(path, encode_slot(fence, head))  # an older file, replaced once
    return fence
