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


def _data_key(sdir: Path, master: MasterKey | None, notes: list[str], scope: str) -> bytes | None:
    if master is None:
        return None
    from agentsessions.journal.crypto.keys import KeyDir

    kdir = KeyDir(sdir, scope)
    if not (kdir.key_path.exists() or kdir.shredded_path.exists()):
        return None
    try:
        return kdir.load(master)
    except KeyShreddedError:
        notes.append(f"{scope}: the data key was shredded")
        return None


def opener_for(
    sdir: Path, master: MasterKey | None, notes: list[str], scope: str = ""
) -> Opener | None:
    """How a key holder decrypts the sealed records of store directory ``sdir`` (a
    session's, or a tool store's of ``scope`` ``uid/tool``; None: no master key, a
    plaintext store, or a shredded key, which ``notes`` then records). A wrong master key
    raises MasterKeyError: the caller asked to check with it."""
    scope = scope or sdir.name
    data_key = _data_key(sdir, master, notes, scope)
    if data_key is None:
        return None
    from agentsessions.journal.crypto import sealed

    def opener(seq: int, payload: bytes) -> str:
        return sealed.open_record(data_key, scope, payload, seq=seq).content_hash

    return opener


def check_blobs(
    sdir: Path, session_id: str, master: MasterKey | None, scope: str = "", host: bool = True
) -> None:
    """A key holder's check of the sealed bytes that are not records: every STATE frame's
    data in ``sdir``'s journal and, for a session (``host``), every tool receipt and kept
    workload. A failed tag raises JournalCorruptError (exit 8); without the key, or for a
    plaintext or shredded store, nothing is checked (the keyless walk saw their CRCs)."""
    scope = scope or sdir.name
    data_key = _data_key(sdir, master, [], scope)
    if data_key is None:
        return
    from agentsessions.journal.crypto.cipher import SessionCipher
    from agentsessions.journal.format import segment, staterecord
    from agentsessions.journal.format.segmentlog import SegmentLog
    from agentsessions.journal.stores import receipts

    cipher = SessionCipher(data_key, scope)
    from agentsessions.journal.stores.file.sessiondir import SessionDir

    log, _scan = SegmentLog.open(SessionDir(sdir).journal, session_id=session_id, writable=False)
    try:
        for frame in log.frames():
            if frame.rtype == segment.RTYPE_STATE:
                cipher.open_state(staterecord.decode(frame.payload))
    finally:
        log.close()
    if not host:
        return
    path = sdir / receipts.RECEIPTS_NAME
    if path.exists():
        for line in receipts.sealed_lines(path.read_bytes()):
            receipts.open_line(cipher, line, path)
    from agentsessions.journal.stores.file.host import check_workloads

    check_workloads(sdir, cipher)
