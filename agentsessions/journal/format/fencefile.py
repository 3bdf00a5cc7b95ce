"""The FENCE file: a session's current writer fence, minted in place with one small sync.

Layout: two 16-byte slots, each ``b"AGSF"``, the fence as a little-endian u64, and the
first 4 bytes of the SHA-256 of those 8 bytes. The current fence is the largest valid slot.

A mint writes ``current + 1`` (or more, see :func:`mint`) into the slot that does *not*
hold the current fence and fdatasyncs the file: a write torn by a crash can damage only that
slot, so the previous fence survives, and a mint that did not finish was never handed to a
writer. That costs one 16-byte write and one fdatasync (about 0.2 ms here) where replacing
the file costs a tmp file, an fsync, a rename and a directory fsync (about 0.95 ms), on
every writer open, that is on every turn.

A missing file means fence 0; the first mint creates it with one slot, atomically. A
16-byte file (one slot) is valid too; its next mint fills the second slot. Every FENCE ever
written has had this layout and checksum, so there is no older form to read.

A file with no valid slot is damaged store data: JournalCorruptError (exit 8) for ``verify``
and for every writer open, which refuse rather than guess a fence (a guess below one already
handed out would let a superseded writer through). One damaged slot of two is not damage: a
torn mint looks exactly so (and the fence it was writing was never handed to a writer).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from agentsessions.errors import JournalCorruptError, StorageError
from agentsessions.journal.format.durable import FileSystem

__all__ = ["SLOT_BYTES", "encode_slot", "mint", "read"]

SLOT_BYTES = 16
_MAGIC = b"AGSF"


def encode_slot(fence: int) -> bytes:
    """One slot holding ``fence``."""
    body = fence.to_bytes(8, "little")
    return _MAGIC + body + hashlib.sha256(body).digest()[:4]


def _slots(raw: bytes) -> list[int | None]:
    """The fence in each slot of ``raw`` (None for a damaged slot)."""
    out: list[int | None] = []
    for at in range(0, len(raw), SLOT_BYTES):
        slot = raw[at : at + SLOT_BYTES]
        body = slot[4:12]
        ok = slot[:4] == _MAGIC and hashlib.sha256(body).digest()[:4] == slot[12:]
        out.append(int.from_bytes(body, "little") if ok else None)
    return out


def _current(path: Path, raw: bytes) -> tuple[int, int]:
    """(current fence, index of the slot holding it); refuses a file with no valid slot."""
    # a second slot cut short is a mint a crash interrupted while it extended the file
    slots = _slots(raw) if SLOT_BYTES <= len(raw) <= 2 * SLOT_BYTES else []
    valid = [(fence, i) for i, fence in enumerate(slots) if fence is not None]
    if not valid:
        raise JournalCorruptError(
            f"damaged fence file {path}: no slot holds a valid writer fence",
            hint="restore it from a backup, or with no writer running remove it: the next "
            "writer mints a fence above every one its journal records",
            path=str(path),
            session=path.parent.name,
        )
    return max(valid)


def read(path: Path) -> int:
    """The persisted fence; 0 when the file is absent. A damaged file is refused, never
    guessed (one damaged slot is not damage: it is a mint a crash interrupted)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from exc
    return _current(path, raw)[0]


def mint(fs: FileSystem, path: Path, floor: int = 0) -> int:
    """Persist and return a fence above both the current one and ``floor``.

    The caller holds the session's writer lock, so mints never race each other.
    """
    if not path.exists():
        fence = floor + 1
        fs.write_file_atomic(path, encode_slot(fence))
        return fence
    fd = fs.open(path, os.O_RDWR)
    try:
        raw = fs.read_at(fd, 2 * SLOT_BYTES + 1, 0)
        current, at = _current(path, raw)
        fence = max(current, floor) + 1
        os.lseek(fd, (1 - at) * SLOT_BYTES, os.SEEK_SET)
        fs.write_all(fd, encode_slot(fence))
        fs.sync(fd)
    finally:
        fs.close(fd)
    return fence
