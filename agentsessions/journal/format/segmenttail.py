"""The tail segment's state, and what opening a log does with the tail's bytes.

Opening a :class:`~.segmentlog.SegmentLog` and appending to it share one :class:`Tail`:
opening builds it (from a resume hint or a full scan, then recovery), appending and
rotation advance it, reading and following read through it. This module holds that
object and the opening steps that need nothing but the tail: checking a resume hint, and
recovery (cutting a torn tail, the RECOVERY.log line). Listing, headers and the other
segments stay with :class:`~.segmentread.SegmentFiles` and the log.

Invariants:
- a :class:`Tail` describes committed bytes only: ``commit_end`` is just past the last
  group-end frame, ``next_seq``/``last_hash``/``last_frame`` are those of that group;
- a resume hint is used only after the frame it names is re-checked (CRC, seq, group end,
  content hash) and what follows it scans as committed groups, free space or a torn tail;
  anything else answers "scan in full", never an error;
- recovery cuts only bytes after ``commit_end`` of the tail segment, after saving them to
  a durable sidecar, and logs each recovery durably to ``RECOVERY.log`` (docs/FORMAT.md).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.logend import Position as Position  # (re-exported)
from agentsessions.journal.format.segment import RTYPE_EVENT, Frame, SegmentHeader
from agentsessions.journal.format.segmentscan import zero_until
from agentsessions.valueclass import value

RECOVERY_LOG = "RECOVERY.log"
_RESUME_WINDOW = 64 << 10
"""How much past a resume hint an open reads at first (the rest only if not free space)."""


def now_ms() -> int:
    """Wall-clock milliseconds: segment headers, SEALs, sidecar names, RECOVERY.log lines."""
    return time.time_ns() // 1_000_000


@value(frozen=True)
class RecoveryReport:
    """What opening found beyond the last commit, and what a writable open did about it."""

    truncated_bytes: int  # bytes after the last commit in the tail segment
    dropped_seqs: tuple[int, ...]  # seqs of valid EVENT frames in those bytes
    sidecar: str  # path of the forensic copy ("" when nothing was cut)
    removed_tmp: tuple[str, ...]
    removed_duplicates: tuple[str, ...] = ()  # .seg.zst copies deleted because .seg exists
    cut: bool = False  # True when the torn tail was actually cut (writable open)
    reason: str = ""  # why the scan stopped


@value
class OpenScan:
    """What :meth:`SegmentLog.open` read from the tail segment."""

    frames: list[Frame]  # committed EVENT and COMMIT frames after the hint (or from the start)
    base_carry: dict[str, Any] | None  # previous SEAL's carry when scanned from the start
    resumed: bool
    recovery: RecoveryReport | None

    @property
    def torn_tail(self) -> bool:
        """True when bytes after the last commit were found (cut if the open was writable)."""
        return self.recovery is not None and self.recovery.truncated_bytes > 0


@value
class Tail:
    """State of the tail (highest) segment: where its commits end and what they end with."""

    header: SegmentHeader
    fd: int | None  # None when the tail exists only compressed (read-only view)
    commit_end: int
    next_seq: int
    last_hash: str
    last_frame: int
    sealed: bool
    index: sf.SparseIndex
    size: int = 0  # file size: commit_end plus free space (writable tails only)

    @classmethod
    def start(cls, header: SegmentHeader, fd: int | None, size: int = 0) -> Tail:
        """The state of a segment with nothing committed after ``header`` (yet)."""
        first = header.first_seq
        index = sf.SparseIndex([(first, sg.HEADER_SIZE)])
        return cls(header, fd, sg.HEADER_SIZE, first, header.prev_hash, -1, False, index, size)

    @property
    def first(self) -> int:
        """The tail's first seq (its file name)."""
        return self.header.first_seq

    @property
    def position(self) -> Position:
        """Where the committed part of the tail ends."""
        return Position(self.first, self.commit_end, self.next_seq - 1, self.last_hash,
                        self.last_frame)  # fmt: skip

    def absorb(self, s: sg.Scan) -> None:
        """Advance over the committed part of scan ``s`` (which starts at ``commit_end``)."""
        self.commit_end, self.next_seq = s.commit_end, s.next_seq
        if s.last_event is not None:
            self.last_hash = sg.frame_hash(s.last_event)
            self.last_frame = s.last_event.offset
        self.sealed = self.sealed or s.seal is not None
        for seq, off in s.index:
            if off < s.commit_end:
                self.index.note(seq, off)

    def damage(self, s: sg.Scan) -> str:
        """What the tail holds after its last commit, for an error message ("" if nothing)."""
        if s.end <= s.commit_end:
            return ""
        why = s.reason or "an incomplete group"
        return (
            f"segment {self.first:016x} holds {s.end - s.commit_end} bytes after its last "
            f"commit at offset {s.commit_end} ({why}), which were acknowledged, not torn"
        )


def resume_scan(
    fs: FileSystem, t: Tail, hint: Position | None, *, writable: bool, max_record: int
) -> sg.Scan | None:
    """Validate ``hint`` cheaply against the .seg tail ``t`` and scan from it; None means
    "do a full scan". On success ``t`` holds the hint's last hash and frame."""
    assert t.fd is not None
    if hint is None or hint.segment != t.first or hint.last_seq < t.first:
        return None
    size = os.fstat(t.fd).st_size
    if not sg.HEADER_SIZE <= hint.last_frame < hint.offset <= size:
        return None
    # read up to a window past the hint: enough for what a crash can leave unless it is
    # followed by a long run of free space, whose zeros are then checked without copies;
    # a window that ends inside committed data is doubled (up to the file's end): a reader
    # between two hints used to fall back to a full scan of the segment once more than a
    # window had been committed since the hint, so its cost grew with the segment
    window = min(size, hint.offset + _RESUME_WINDOW)
    while True:
        s = _scan_window(fs, t, hint, window, max_record)
        if s is None or window >= size or s.free:
            break
        window = min(size, window + (window - hint.last_frame))
    if s is None or not s.hit_report_from or 0 <= s.stop < hint.offset:
        return None
    if window < size:  # the scan saw only part of what follows the hint: free space
        if writable and not zero_until(t.fd, s.end + s.free, size):
            return None  # a full scan classifies it
        s.free = size - s.end
    t.last_hash, t.last_frame = hint.last_hash, hint.last_frame
    return s


def _scan_window(
    fs: FileSystem, t: Tail, hint: Position, window: int, max_record: int
) -> sg.Scan | None:
    """Scan from ``hint`` to file offset ``window``; None if the hint's frame is not there."""
    assert t.fd is not None
    buf = fs.read_at(t.fd, window - hint.last_frame, hint.last_frame)
    mv = memoryview(buf)
    parsed = sg.check_frame(mv, 0, hint.last_frame, max_record)
    if isinstance(parsed, str):
        return None
    plen, seq, _, rtype, flags, fend = parsed
    payload = mv[sg.FRAME_HEADER_SIZE : sg.FRAME_HEADER_SIZE + plen]
    if rtype != RTYPE_EVENT or seq != hint.last_seq or not flags & sg.FLAG_GROUP_END:
        return None
    if fend > hint.offset or sg.event_hash(flags, payload) != hint.last_hash:
        return None
    return sg.scan(buf, base=hint.last_frame, start=fend, next_seq=seq + 1, segment=t.first,
                   max_record=max_record, report_from=hint.offset)  # fmt: skip


def report(
    s: sg.Scan, removed_tmp: tuple[str, ...], dups: tuple[str, ...], sidecar: str = ""
) -> RecoveryReport | None:
    """The report of an open that scanned ``s`` (None when there is nothing to report)."""
    torn = s.end - s.commit_end
    if not torn and not removed_tmp and not dups:
        return None
    return RecoveryReport(torn, s.dropped_seqs, sidecar, removed_tmp, dups,
                          bool(sidecar), s.reason)  # fmt: skip


def recover(
    fs: FileSystem, journal_dir: Path, segs: dict[int, set[str]], t: Tail, s: sg.Scan,
    tmps: list[str],
) -> tuple[RecoveryReport | None, list[int]]:  # fmt: skip
    """Writable part of opening: delete tmp files and .zst duplicates, cut a torn tail.

    ``segs`` (first seq -> forms on disk) loses the deleted duplicates. Returns the report
    and the sealed segments that lost their .zst copy, for the log to compress again.
    """
    dups = tuple(sg.segment_name(f, compressed=True) for f, forms in segs.items()
                 if forms == {"seg", "zst"})  # fmt: skip
    for name in (*tmps, *dups):
        fs.unlink(journal_dir / name)
    if tmps or dups:
        fs.sync_dir(journal_dir)
    sidecar = _cut(fs, journal_dir, t, s) if s.end > s.commit_end else ""
    found = report(s, tuple(tmps), dups, sidecar)
    if found is not None:
        _log_recovery(fs, journal_dir, t, found)
    if t.fd is not None:
        if t.sealed and s.free:  # a crash lost the cut that precedes every SEAL
            fs.truncate(t.fd, t.commit_end)
            fs.sync(t.fd, full=True)
        t.size = os.fstat(t.fd).st_size
    recompress = []
    for first, forms in segs.items():
        if forms == {"seg", "zst"}:
            forms.discard("zst")
            if first != t.first:
                recompress.append(first)
    return found, recompress


def _cut(fs: FileSystem, journal_dir: Path, t: Tail, s: sg.Scan) -> str:
    """Save the torn bytes (``[commit_end, end)``) to a sidecar, then cut the tail to
    ``commit_end`` (dropping its free space too) and sync it."""
    assert t.fd is not None
    path = journal_dir / sg.segment_name(t.first)
    data = fs.read_at(t.fd, s.end - s.commit_end, s.commit_end)
    stamp = now_ms()
    while (sidecar := path.with_name(f"{path.name}.torn-{stamp}")).exists():
        stamp += 1
    fs.write_file_atomic(sidecar, data)
    fs.truncate(t.fd, s.commit_end)
    fs.sync(t.fd, full=True)
    return str(sidecar)


def _log_recovery(fs: FileSystem, journal_dir: Path, t: Tail, r: RecoveryReport) -> None:
    line = {
        "unix_ms": now_ms(), "segment": sg.segment_name(t.first), "commit_end": t.commit_end,
        "truncated_bytes": r.truncated_bytes, "dropped_seqs": list(r.dropped_seqs),
        "sidecar": os.path.basename(r.sidecar), "removed_tmp": list(r.removed_tmp),
        "removed_duplicates": list(r.removed_duplicates), "reason": r.reason,
    }  # fmt: skip
    data = json.dumps(line, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    fs.append_durable(journal_dir / RECOVERY_LOG, data)
