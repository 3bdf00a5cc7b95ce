"""A session's multi-segment log: open (with recovery), append groups, rotate, compress, read.

Layout and rules: ``docs/FORMAT.md``. The byte codec lives in :mod:`.segment`, the read side
of the files in :mod:`.segmentread`, the log's strict frame reads in :mod:`.segmentlogread`,
its bulk record reads in :mod:`.segmentrecords`, the tail's state (the
:class:`~.segmenttail.Tail` that opening builds and appending advances), the resume hint's
check and recovery's cut in :mod:`.segmenttail`; every durable step goes through an injected
:class:`~agentsessions.journal.format.durable.FileSystem`.

Invariants:
- one writer per log (the caller holds the session lock); readers never modify anything;
- a group is acknowledged (``append_group`` returns) only after one ``os.write`` loop and one
  fdatasync; no byte of the next group is written before that sync returned;
- a failed append leaves no byte behind: the file is cut back to the previous commit end and
  synced before the error is re-raised (if even that fails, the log refuses further appends);
- the highest-named segment is the tail; every other segment ends with a SEAL frame whose
  ``last_seq``/``last_hash`` equal the next header's ``first_seq - 1``/``prev_hash``;
- a sealed segment is compressed only after its successor is durable, and the original is
  removed only after the ``.seg.zst`` copy is verified and durable; when both forms exist
  readers use ``.seg`` and writable recovery deletes the ``.seg.zst``;
- recovery cuts only a torn, unacknowledged tail of the tail segment, after saving it to a
  sidecar; anything else that is damaged raises JournalCorruptError and changes nothing;
- the tail segment may end in free space: zero bytes the writer wrote ahead of its commits
  so that a commit's fdatasync overwrites allocated blocks instead of also committing a new
  file size (measured ~1.6x more syncs/s); zero bytes after the last commit are free, any
  other byte there is a torn tail; a segment is cut to its exact end before it is sealed;
- not thread-safe: the owner serialises calls. The one exception is its own compressor:
  with ``compress_in_background``, a rotation hands the sealed segment to a thread (zstd
  releases the GIL), so the append that rotates does not wait for it; that thread touches
  only the sealed segment's files and entries, readers already handle a ``.seg`` turning
  into a ``.seg.zst``, and :meth:`SegmentLog.close` waits for it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentsessions.errors import (
    FormatError,
    InvalidArgumentError,
    JournalCorruptError,
    StorageError,
    UnavailableError,
)
from agentsessions.journal.format import evidence, zstdcodec, zstdseek
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem, storage_error
from agentsessions.journal.format.evidence import Acked
from agentsessions.journal.format.segment import (
    RTYPE_COMMIT,
    RTYPE_EVENT,
    RTYPE_SEAL,
    Frame,
    SegmentHeader,
)
from agentsessions.journal.format.segmentlogread import LogReads
from agentsessions.journal.format.segmentread import (
    CORRUPT_HINT,
    CheckedLinks,
    listing,
)
from agentsessions.journal.format.segmenttail import (
    OpenScan,
    Position,
    RecoveryReport,
    Tail,
    now_ms,
    recover,
    report,
    resume_scan,
)

__all__ = [
    "RTYPE_COMMIT", "RTYPE_EVENT", "RTYPE_SEAL", "Frame", "OpenScan", "Position",
    "RecoveryReport", "SegmentLog",
]  # fmt: skip

PREALLOC_MIN = 4096
"""Free space is written in whole 4 KiB pages; a small tail about doubles its size."""
PREALLOC_MAX = 256 << 10
"""A large tail grows by at most 256 KiB of zeros at a time (measured here with 10 KB
commits: as many syncs/s as 1 MiB steps, 1.2x more than 64 KiB steps; opens read less)."""


def _now_ms() -> int:
    # a name of this module's own: the golden tests pin it for byte-exact headers and SEALs
    return now_ms()


class SegmentLog(LogReads):
    """One session's journal directory of segments. Build with :meth:`create` / :meth:`open`.

    The read side is its bases: :class:`~.segmentlogread.LogReads` (frames by seq and by
    position), :class:`~.segmentrecords.RecordReads` (records in bulk) and
    :class:`~.segmentread.SegmentFiles` (headers, SEALs, strict frames, batch checks).
    """

    def __init__(
        self, journal_dir: Path, session_id: str, writable: bool, fs: FileSystem,
        segment_max_bytes: int, max_record_bytes: int, segs: dict[int, set[str]],
    ) -> None:  # fmt: skip
        """Private: use :meth:`open`."""
        super().__init__(journal_dir, session_id, fs, max_record_bytes, segs)
        self.writable = writable
        self.segment_max_bytes = segment_max_bytes
        self._tail: Tail | None = None
        self._indexes: dict[int, sf.SparseIndex] = {}
        self._base_hash: str | None = None
        self._broken: StorageError | None = None
        # offset of the first group written since the tail's last sync (None: all synced)
        self._unsynced_from: int | None = None
        self.compress_in_background = False
        self._compressor: threading.Thread | None = None
        # what opening verified about the sealed segments (the TAIL hint records it)
        self._links: CheckedLinks | None = None

    # -- creation and opening -------------------------------------------------------------
    @classmethod
    def create(
        cls, journal_dir: Path, *, session_id: str, base_seq: int = 0, base_hash: str = "",
        fs: FileSystem = DEFAULT_FS,
    ) -> None:  # fmt: skip
        """Write the first segment (header only), fsync it and the directory.

        A forked child passes ``base_seq``/``base_hash`` (its parent's prefix end); its first
        segment then starts at ``base_seq + 1`` with ``prev_hash = base_hash``.
        """
        if type(base_seq) is not int or not 0 <= base_seq < 1 << 63:
            raise InvalidArgumentError(f"base_seq must be a non-negative int, got {base_seq!r}")
        sg.hash_bytes(base_hash)
        if (base_seq == 0) != (base_hash == ""):
            raise InvalidArgumentError("base_hash must be given exactly when base_seq > 0")
        journal_dir = Path(journal_dir)
        if listing(fs, journal_dir)[0]:
            raise InvalidArgumentError(f"{journal_dir} already holds a journal")
        header = SegmentHeader(session_id, base_seq + 1, 0, _now_ms(), base_hash)
        fs.write_file_atomic(journal_dir / sg.segment_name(base_seq + 1), header.encode())

    @classmethod
    def open(
        cls, journal_dir: Path, *, session_id: str, writable: bool, fs: FileSystem = DEFAULT_FS,
        segment_max_bytes: int = sg.SEGMENT_MAX, resume: Position | None = None,
        max_record_bytes: int = sg.DEFAULT_MAX_RECORD_BYTES, compress_in_background: bool = False,
        acked: Sequence[Acked] = (), check_links: bool | None = None,
    ) -> tuple[SegmentLog, OpenScan]:  # fmt: skip
        """Open the log; a writable open recovers (see the module docstring and FORMAT.md).

        Costs O(bytes after a valid ``resume`` hint) plus O(1) per sealed segment.
        ``compress_in_background``: a rotation compresses the sealed segment on a thread
        instead of inside the append that rotates (the module docstring says how).
        ``acked``: durable evidence of acknowledged seqs (:mod:`.evidence`); a journal that
        ends before one, or holds another hash there, raises AcknowledgedDataMissingError
        before recovery changes anything. ``check_links`` (default: when writable) checks
        every SEAL against the next header, so no writer extends a journal whose segments
        do not chain: one ``stat`` per sealed segment, and two small reads for each one that
        ``resume.links`` (the hint's record of an earlier check) does not vouch for.
        """
        sg.session_bytes(session_id)
        journal_dir = Path(journal_dir)
        segs, tmps = listing(fs, journal_dir)
        if not segs:
            raise JournalCorruptError(
                f"{journal_dir}: no segment files", path=str(journal_dir), hint=CORRUPT_HINT
            )
        log = cls(journal_dir, session_id, writable, fs, segment_max_bytes, max_record_bytes, segs)
        log.compress_in_background = compress_in_background
        try:
            if writable if check_links is None else check_links:
                log.check_links(resume.links if resume is not None else None)
            s, base_carry, resumed = log._load(resume)
            log._check_acked(acked, s, resume if resumed else None)
            recovery = log._recover(s, tmps) if writable else report(s, (), ())
        except BaseException:
            log.close()
            raise
        return log, OpenScan(s.frames, None if resumed else base_carry, resumed, recovery)

    def _load(self, resume: Position | None) -> tuple[sg.Scan, dict[str, Any] | None, bool]:
        """Read-only part of opening: tail header, link to the last sealed segment, scan."""
        first = self.segments[-1]
        header, fd, raw = self._open_tail(first)
        self._tail = tail = Tail.start(header, fd)
        path = self._path(first, "seg" if fd is not None else "zst")
        self._check_tail_number(header, path)
        s = None
        if raw is None:
            s = resume_scan(self.fs, tail, resume, writable=self.writable,
                            max_record=self.max_record_bytes)  # fmt: skip
        resumed = s is not None
        carry = self._check_tail_link(header, need_carry=not resumed)  # (resume_scan never raises)
        self._links = self.checked_links(header)
        if s is None:
            if raw is None:
                assert fd is not None
                raw = self.fs.read_at(fd, os.fstat(fd).st_size, 0)
            s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first,
                        max_record=self.max_record_bytes)  # fmt: skip
        if s.status == sg.STATUS_CORRUPT:
            reason = f"{s.reason}; a later committed group follows at offset {s.later}"
            if s.later == s.stop:
                reason = s.reason
            raise self._corrupt(path, s.stop, s.next_seq, reason)
        if fd is None and (s.status != sg.STATUS_CLEAN or s.seal is None):
            raise self._corrupt(path, s.stop, s.next_seq, "compressed tail is not sealed")
        tail.absorb(s)
        return s, carry, resumed

    def _open_tail(self, first: int) -> tuple[SegmentHeader, int | None, bytes | None]:
        """Open the tail: (header, fd, None) for a .seg, (header, None, raw bytes) for a .zst."""
        if "seg" in self._segs[first]:
            path = self._path(first)
            try:
                fd = self.fs.open(path, os.O_RDWR if self.writable else os.O_RDONLY)
            except StorageError as exc:
                if self.writable or not isinstance(exc.__cause__, FileNotFoundError):
                    raise
                # a reader listed both forms and the writer's compression removed the .seg
                # (only once its .seg.zst was durable) before this open: read the .seg.zst
                self._segs = listing(self.fs, self.journal_dir)[0]
                if "zst" not in self._segs.get(first, ()):
                    raise
                z = self._zst_of(first)
                return z.header, None, b"".join(self._zst_chunks(first, z.table, 0))
            try:
                header = self._decode_header(self.fs.read_at(fd, sg.HEADER_SIZE, 0), first, path)
            except BaseException:
                self.fs.close(fd)
                raise
            return header, fd, None
        z = self._zst_of(first)
        return z.header, None, b"".join(self._zst_chunks(first, z.table, 0))

    # -- evidence of the acknowledged head ----------------------------------------------
    def _check_acked(self, claims: Sequence[Acked], s: sg.Scan, resumed: Position | None) -> None:
        """Refuse a journal that ends before, or differs at, an acknowledged seq."""
        t = self._require_tail()
        head, where = t.next_seq - 1, str(self.journal_dir)
        for claim in claims:
            if claim.seq > head:
                raise evidence.missing(where, self.session_id, head, claim, t.damage(s))
            if claim.seq < self.base_seq:
                continue  # in a forked child's parent: the parent's open checks it
            if resumed is not None and (resumed.last_seq, resumed.last_hash) == (
                claim.seq, claim.hash,
            ):  # fmt: skip
                continue  # the resume hint's frame was just checked (CRC and hash)
            found = self._hash_at(claim)
            if found != claim.hash:
                raise evidence.differs(where, self.session_id, claim, found)

    def _hash_at(self, claim: Acked) -> str:
        """Content hash of the EVENT at ``claim.seq`` ("" if there is none): one small read at
        the frame the claim names when it holds that seq, else a read through the index."""
        if claim.seq == self.base_seq:
            return self.base_hash
        if claim.segment in self._segs and claim.frame >= sg.HEADER_SIZE:
            found = self._hash_of_frame(claim.segment, claim.frame, claim.seq)
            if found is not None:
                return found
        for frame in self.read(claim.seq, claim.seq):
            return sg.event_hash(frame.flags, frame.payload)
        return ""

    def _hash_of_frame(self, first: int, offset: int, seq: int) -> str | None:
        """Hash of the intact EVENT ``seq`` at ``offset`` of .seg ``first``; None otherwise."""
        frame = self.frame_at(first, offset, seq, RTYPE_EVENT, plain_only=True)
        return None if frame is None else sg.event_hash(frame.flags, frame.payload)

    # -- recovery -------------------------------------------------------------------------
    def _recover(self, s: sg.Scan, tmps: list[str]) -> RecoveryReport | None:
        """Writable part of opening (:func:`.segmenttail.recover`), then compress again the
        sealed segments whose duplicate .zst it deleted."""
        found, recompress = recover(self.fs, self.journal_dir, self._segs, self._require_tail(),
                                    s, tmps)  # fmt: skip
        for first in recompress:
            self._compress_quietly(first)
        return found

    # -- state ----------------------------------------------------------------------------
    @property
    def position(self) -> Position:
        """Where the committed log ends (valid as a resume hint), with what opening verified
        about the sealed segments (``links``, None unless it checked them all)."""
        t = self._require_tail()  # built directly: every append returns one (replace is slow)
        return Position(t.first, t.commit_end, t.next_seq - 1, t.last_hash, t.last_frame,
                        links=self._links)  # fmt: skip

    @property
    def base_hash(self) -> str:
        """Hash of event ``base_seq`` ("" if none): the first segment's ``prev_hash``."""
        if self._base_hash is None:
            self._base_hash = self._header_of(min(self._segs))[0].prev_hash
        return self._base_hash

    def _require_tail(self) -> Tail:
        if self._tail is None:
            raise InvalidArgumentError("the segment log is closed")
        return self._tail

    def close(self) -> None:
        """Wait for a background compression, release the tail segment's descriptor; the
        object is unusable afterwards."""
        self._join_compressor()
        t, self._tail = self._tail, None
        if t is not None and t.fd is not None:
            self.fs.close(t.fd)

    # -- appending -----------------------------------------------------------------------
    def append_group(
        self,
        frames: Sequence[tuple[int, int, int, bytes]],
        *,
        carry: Callable[[], dict[str, Any]],
        sync: bool = True,
        last_hash: str | None = None,
        encrypted: bool = False,
    ) -> Position:
        """Append ``(rtype, seq, fence, payload)`` frames as one durable group.

        ``encrypted``: the EVENT payloads are sealed records (``FLAG_ENCRYPTED``, FORMAT.md 15).

        EVENT seqs must continue ``last_seq + 1, ...``; an optional COMMIT frame may come
        first (its seq is the group's first EVENT seq). Rotates first when the tail holds an
        EVENT and the group would push it past ``segment_max_bytes`` (``carry()`` goes into the
        SEAL). Returns the new position only after the data sync; with ``sync=False`` the
        group is written but waits for the next sync (:meth:`sync`, a synced group, or the
        SEAL of a rotation), which then covers every group written since the last one.
        ``last_hash``: the last EVENT payload's SHA-256 hex when the caller already has it
        (a writer sealed the records), so it is not computed twice.
        """
        self.append_frames(frames, carry=carry, sync=sync, last_hash=last_hash,
                           encrypted=encrypted)  # fmt: skip
        return self.position

    def append_frames(
        self,
        frames: Sequence[tuple[int, int, int, bytes]],
        *,
        carry: Callable[[], dict[str, Any]],
        sync: bool = True,
        last_hash: str | None = None,
        encrypted: bool = False,
    ) -> tuple[int, int]:
        """:meth:`append_group` for a writer that keeps its own head: the same group, the
        same bytes and the same sync, returning only where the group begins (its segment,
        named by its first seq, and the offset) instead of a new :class:`Position` (the writer
        already knows the rest)."""
        t = self._require_tail()
        if not self.writable:
            raise InvalidArgumentError("the segment log was opened read-only")
        if self._broken is not None:
            raise StorageError(
                f"{self.journal_dir}: a failed append could not be undone ({self._broken})",
                hint="reopen the session to recover",
            )
        flags = sg.FLAG_ENCRYPTED if encrypted else 0
        buf, next_seq, last_rel, last_payload = sg.encode_group(
            frames, t.next_seq, self.max_record_bytes, flags
        )
        if t.sealed or (t.next_seq > t.first and t.commit_end + len(buf) > self.segment_max_bytes):
            self._rotate(carry, frames[0][2])
            t = self._require_tail()
        start = t.commit_end
        self._write_tail(buf, prealloc=True, sync=sync)
        t.next_seq = next_seq
        if last_payload is not None:
            digest = last_hash if last_hash is not None else sg.event_hash(flags, last_payload)
            t.last_hash, t.last_frame = digest, start + last_rel
        t.index.note(frames[0][1], start)
        return t.header.first_seq, start

    def sync(self) -> None:
        """Make the groups appended with ``sync=False`` durable (nothing to do if none).

        A failed sync cannot be undone group by group (the caller has moved past them, and
        after a failed fsync the kernel's view of what is on disk is not to be trusted): the
        log is broken until it is reopened, which recovers what the disk holds."""
        t = self._require_tail()
        if self._unsynced_from is None or t.fd is None:
            return
        try:
            self.fs.sync(t.fd)
        except StorageError as exc:
            self._broken = exc
            raise
        self._unsynced_from = None

    def _write_tail(self, buf: bytes, *, prealloc: bool = False, sync: bool = True) -> None:
        """Write ``buf`` at the commit end with one write loop and one sync, or undo it.

        With ``prealloc``, a group that does not fit the free space also writes zeros after
        itself (before the same sync), so later commits overwrite allocated blocks. Without
        ``sync`` the group waits for the next sync (see :meth:`append_group`).
        """
        t = self._require_tail()
        assert t.fd is not None
        start = t.commit_end
        end = start + len(buf)
        try:
            os.lseek(t.fd, start, os.SEEK_SET)
            self.fs.write_all(t.fd, buf)
            t.size = max(t.size, end)
            if prealloc and end > t.size - sg.FRAME_HEADER_SIZE:
                self._preallocate(end)
            if sync:
                self.fs.sync(t.fd)
        except StorageError as exc:
            if self._unsynced_from is not None and sync:
                self._broken = exc  # earlier unsynced groups: what is durable is unknown
                raise
            try:
                self.fs.truncate(t.fd, start)
                if sync:
                    self.fs.sync(t.fd)
                t.size = start
            except StorageError as undo:
                self._broken = undo
            raise
        t.commit_end = end
        if sync:
            self._unsynced_from = None
        elif self._unsynced_from is None:
            self._unsynced_from = start

    def _preallocate(self, end: int) -> None:
        """Extend the tail with zeros past ``end``: about ``end`` more bytes, at most
        ``PREALLOC_MAX``, never past ``segment_max_bytes``; skipped if the disk is full.

        Zeros are written, not ``fallocate``d: on ext4 a first write into an unwritten
        extent still makes fdatasync commit metadata (no faster than a growing file).
        """
        t = self._require_tail()
        assert t.fd is not None
        target = min(end + min(max(end, PREALLOC_MIN), PREALLOC_MAX), self.segment_max_bytes)
        target -= target % PREALLOC_MIN
        if target - end < sg.FRAME_HEADER_SIZE:
            return
        try:
            self.fs.write_all(t.fd, bytes(target - end))
        except StorageError:  # the group itself is written; free space is only an optimisation
            self.fs.truncate(t.fd, end)
            t.size = end
            return
        t.size = target

    def _rotate(self, carry: Callable[[], dict[str, Any]], fence: int) -> None:
        """Seal the tail (unless already sealed), create its successor, compress the old one."""
        t = self._require_tail()
        if not t.sealed:
            assert t.fd is not None
            if t.size > t.commit_end:  # a sealed segment ends exactly at its SEAL
                self.fs.truncate(t.fd, t.commit_end)
                t.size = t.commit_end
            last = t.next_seq - 1
            info = sg.SealInfo(
                last, t.last_hash, last - t.first + 1, t.commit_end, _now_ms(), carry()
            )
            payload = sg.encode_seal(info)
            if len(payload) > self.max_record_bytes:
                raise InvalidArgumentError(f"SEAL carry is {len(payload)} bytes, over the limit")
            self._write_tail(sg.encode_frame(RTYPE_SEAL, last, fence, sg.SEAL_FLAGS, payload))
            t.sealed = True
        no = t.header.segment_no + 1
        header = SegmentHeader(self.session_id, t.next_seq, no, _now_ms(), t.last_hash)
        path = self._path(header.first_seq)
        self.fs.write_file_atomic(path, header.encode())
        fd = self.fs.open(path, os.O_RDWR)
        self._tail = Tail.start(header, fd, sg.HEADER_SIZE)
        self._segs[header.first_seq] = {"seg"}
        self._indexes[t.first] = t.index
        if t.fd is not None:
            self.fs.close(t.fd)
        if "seg" in self._segs[t.first] and zstdcodec.can_compress():
            self._join_compressor()  # at most one at a time (rotations are far apart)
            if self.compress_in_background:
                self._compressor = threading.Thread(
                    target=self._compress_quietly, args=(t.first,), daemon=True,
                    name=f"compress-{t.first:016x}",
                )  # fmt: skip
                self._compressor.start()
            else:
                self._compress_quietly(t.first)

    def _join_compressor(self) -> None:
        thread, self._compressor = self._compressor, None
        if thread is not None:
            thread.join()

    def _compress_quietly(self, first: int) -> None:
        """Compress a sealed segment; on any failure leave it uncompressed (still valid)."""
        try:
            self._compress(first)
        except (StorageError, UnavailableError, FormatError):
            tmp = self._path(first, "zst")
            self.fs.discard(tmp.with_name(tmp.name + ".tmp"))

    def _compress(self, first: int) -> None:
        """Rewrite sealed ``first`` as a verified ``.seg.zst``, then remove the ``.seg``."""
        path = self._path(first)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise storage_error("read", path, exc) from exc
        seal, cuts = sg.chunk_plan(raw, first)
        blob = zstdseek.encode_seekable(raw, cuts, sg.encode_zst_meta(raw, seal))
        if zstdcodec.decompress(blob, len(raw)) != raw:
            raise FormatError(f"{path}: compressed copy does not round-trip")
        self.fs.write_file_atomic(self._path(first, "zst"), blob)
        self._segs[first].add("zst")
        self.fs.unlink(path)
        self.fs.sync_dir(self.journal_dir)
        self._segs[first].discard("seg")
        self._indexes.pop(first, None)

    # -- following another writer (read-only logs) -----------------------------------------
    def refresh(self) -> list[Frame]:
        """Read-only logs: absorb groups committed by another process since the last look.

        Follows rotations into new segments; bytes after the last commit are "not yet
        committed", never an error. Returns the new committed EVENT and COMMIT frames.
        """
        if self.writable:
            return []
        new: list[Frame] = []
        while True:
            t = self._require_tail()
            if t.fd is not None and not t.sealed:
                new += self._refresh_tail(t)
            if not t.sealed:
                return new
            segs, _ = listing(self.fs, self.journal_dir)
            if t.next_seq not in segs:
                return new
            self._segs = segs
            self._follow_rotation(t)

    def _refresh_tail(self, t: Tail) -> list[Frame]:
        assert t.fd is not None
        path = self._path(t.first)
        size = os.fstat(t.fd).st_size
        if size < t.commit_end:
            raise self._corrupt(path, size, t.next_seq, "segment shrank below a commit")
        if size == t.commit_end:
            return []
        peek = self.fs.read_at(t.fd, min(size - t.commit_end, sg.FRAME_HEADER_SIZE), t.commit_end)
        if peek == bytes(len(peek)):
            return []  # free space: nothing committed since the last look
        buf = self.fs.read_at(t.fd, size - t.commit_end, t.commit_end)
        s = sg.scan(buf, base=t.commit_end, start=t.commit_end, next_seq=t.next_seq,
                    segment=t.first, max_record=self.max_record_bytes)  # fmt: skip
        if s.status == sg.STATUS_CORRUPT:
            raise self._corrupt(path, s.stop, s.next_seq, s.reason)
        t.absorb(s)
        return s.frames

    def _follow_rotation(self, old: Tail) -> None:
        """Move the read-only tail to the successor of sealed ``old``."""
        first = old.next_seq
        header, fd, raw = self._open_tail(first)
        if header.prev_hash != old.last_hash or header.segment_no != old.header.segment_no + 1:
            if fd is not None:
                self.fs.close(fd)
            raise self._corrupt(self._path(first), 0, first, "successor does not link")
        self._tail = tail = Tail.start(header, fd)
        self._indexes[old.first] = old.index
        if old.fd is not None:
            self.fs.close(old.fd)
        if raw is not None:
            tail.absorb(sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=first,
                                segment=first, max_record=self.max_record_bytes))  # fmt: skip
