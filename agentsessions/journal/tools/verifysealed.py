"""What ``verify`` needs for encrypted records (docs/FORMAT.md section 15).

Without the key a sealed record is checked through its clear head (its link and, by the
frame CRC or zstd checksum, its bytes); a key holder also decrypts it and recomputes its
content hash. ``cryptography`` is imported only for that: keyless verify runs without it
(the zipapp has none).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from agentsessions.errors import KeyShreddedError

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

Opener = Callable[[int, bytes], str]
"""A key holder's decrypt of one sealed record: ``(seq, payload)`` -> its content hash."""

KEYLESS_NOTE = (
    "encrypted records: each stored byte's checksum and every chain link checked without the "
    "key; content hashes not recomputed"
)


class Sealed(NamedTuple):
    """An encrypted EVENT record as a walk item: its chain is in its clear head; ``opener``
    is a key holder's decrypt, or None without the key."""

    seq: int
    payload: bytes
    opener: Opener | None


def opener_for(sdir: Path, master: MasterKey | None, notes: list[str]) -> Opener | None:
    """How a key holder decrypts the sealed records of session directory ``sdir`` (None: no
    master key, a plaintext session, or a shredded key, which ``notes`` then records). A
    wrong master key raises MasterKeyError: the caller asked to check with it."""
    if master is None:
        return None
    from agentsessions.journal.crypto import sealed
    from agentsessions.journal.crypto.keys import KeyDir

    kdir = KeyDir(sdir, sdir.name)
    if not (kdir.key_path.exists() or kdir.shredded_path.exists()):
        return None
    try:
        data_key = kdir.load(master)
    except KeyShreddedError:
        notes.append(f"{sdir.name}: the data key was shredded")
        return None

    def opener(seq: int, payload: bytes) -> str:
        return sealed.open_record(data_key, sdir.name, payload, seq=seq).content_hash

    return opener
