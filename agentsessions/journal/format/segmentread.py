"""Reading a journal directory's segment files: headers, SEALs, strict frames, batch checks.

:class:`SegmentFiles` is the read side of :class:`.segmentlog.SegmentLog`
(which adds opening with recovery, the tail, appending and rotation). Layouts and rules:
``docs/FORMAT.md``; the byte codec is :mod:`.segment`; the batch chain scan that
:meth:`SegmentFiles.check_segment` runs over the bytes it reads is :mod:`.segmentscan`.

Invariants:
- nothing here writes; a ``.seg`` that disappears while being opened was compressed by the
  writer meanwhile, and the reader switches to its ``.seg.zst``;
- every frame the strict readers return has passed :func:`sf.parse_frames` (structure,
  CRC, sequence and group rules; in a ``.seg.zst`` the chunk's zstd content checksum stands
  in for the frame CRCs, and a chunk without one is refused); damage raises
  ``JournalCorruptError(path, offset, seq, reason)``;
- a segment's header is checked before its frames and its SEAL after them by
  ``_segment_head`` / ``_segment_foot``, the same code for the strict and the batch path;
- :meth:`SegmentFiles.check_segment` (the batch path ``verify`` runs) accepts a segment only
  if the strict path accepts it *and* its EVENT payloads continue the hash chain from the
  segment's header. It never names a failure: on damage, or on anything it is unsure about,
  it answers "not ok" and the caller reads that segment strictly, which names it. So the batch
  path can make ``verify`` faster but cannot change a verdict;
- :meth:`SegmentFiles.check_links` re-reads the header and SEAL of a sealed segment unless a
  :class:`CheckedLinks` record (the TAIL hint's ``sealed``) shows that it and its neighbours
  are, by ``stat``, the very files whose links an earlier open checked (FORMAT.md 11, 14).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentsessions.errors import AgentSessionsError, FormatError, JournalCorruptError
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf
from agentsessions.journal.format import zstdseek
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem, storage_error

# the log end's values, re-exported: their home imports nothing of a reader's
from agentsessions.journal.format.logend import SEGMENT_NAME as SEGMENT_NAME
from agentsessions.journal.format.logend import CheckedLinks as CheckedLinks
from agentsessions.journal.format.logend import FileId as FileId
from agentsessions.journal.format.logend import Link as Link
from agentsessions.journal.format.segment import Frame, SegmentHeader
from agentsessions.journal.format.segmentgap import find_gap, gap_error
from agentsessions.journal.format.segmentscan import (
    BLOCK,
    ChainScan,
    PayloadCheck,
    pread_into,
    scan_buffer,
    zero_until,
)
from agentsessions.valueclass import value

CORRUPT_HINT = "run `agentsessions verify` on the session; see docs/FORMAT.md (Recovery)"

_TRAILER_READ = 64 << 10  # first read at the end of a sealed segment (SEAL or seek table)
_ZST_CACHE = 64  # seek tables kept in memory


def listing(fs: FileSystem, journal_dir: Path) -> tuple[dict[int, set[str]], list[str]]:
    """Segment forms by first_seq ({"seg", "zst"}) and the names of ``*.tmp`` files."""
    segs: dict[int, set[str]] = {}
    tmps: list[str] = []
    for name in fs.listdir(journal_dir):
        m = SEGMENT_NAME.fullmatch(name)
        if m:
            segs.setdefault(int(m.group(1), 16), set()).add("zst" if m.group(2) else "seg")
        elif name.endswith(".tmp"):
            tmps.append(name)
    return segs, tmps


@value(frozen=True)
class _Zst:
    """A compressed segment's seek table with its decoded metadata."""

    table: zstdseek.SeekTable
    header: SegmentHeader
    header_raw: bytes
    seal: bytes


@value(frozen=True)
class SegmentCheck:
    """What :meth:`SegmentFiles.check_segment` found; ``ok`` False means "read it strictly".

    When ok, the segment's EVENTs continue the chain from ``(first, prev_hash)`` (its
    header) to ``(next_seq, last_hash)``.
    """

    first: int
    ok: bool
    prev_hash: str = ""  # the header's prev_hash, where the chain was checked from
    next_seq: int = 0  # the EVENT seq after this segment
    last_hash: str = ""  # hash of its last EVENT (prev_hash when it holds none)
    events: int = 0
    end: int = 0  # offset just past its last frame (its size, for a clean segment)
    last_frame: int = -1  # offset of its last EVENT frame, -1 if none
    link: Link | None = None  # its SEAL's (last_seq, last_hash); None when not sealed
    sealed: int = 0  # how many of its EVENTs are encrypted (FLAG_ENCRYPTED)


class SegmentFiles:
    """Read access to the segment files of one journal directory (see the module docstring)."""

    def __init__(
        self, journal_dir: Path, session_id: str, fs: FileSystem, max_record_bytes: int,
        segs: dict[int, set[str]],
    ) -> None:  # fmt: skip
        self.journal_dir = journal_dir
        self.session_id = session_id
        self.fs = fs
        self.max_record_bytes = max_record_bytes
        self._segs = segs
        self._zst: dict[int, _Zst] = {}
        # set by check_links: the sealed segments as stat saw them before their checks, and
        # the last one's SEAL when a record vouches for it (opening then need not read it)
        self._sealed_ids: list[FileId | None] | None = None
        self._known_link: Link | None = None

    @classmethod
    def at(
        cls, journal_dir: Path, *, session_id: str, fs: FileSystem = DEFAULT_FS,
        max_record_bytes: int = sg.DEFAULT_MAX_RECORD_BYTES,
    ) -> SegmentFiles:  # fmt: skip
        """The segment files in ``journal_dir`` now: one directory listing, nothing opened."""
        sg.session_bytes(session_id)
        journal_dir = Path(journal_dir)
        return cls(journal_dir, session_id, fs, max_record_bytes, listing(fs, journal_dir)[0])

    @property
    def segments(self) -> list[int]:
        """The segments' first seqs in order; the last one is the tail."""
        return sorted(self._segs)

    def segment_size(self, first: int) -> int:
        """Raw (uncompressed) bytes of segment ``first``; 0 when unknown."""
        try:
            if "seg" in self._segs.get(first, ()):
                return os.stat(self._path(first)).st_size
            return self._zst_of(first).table.raw_size
        except (AgentSessionsError, OSError):
            return 0

    def _path(self, first: int, form: str = "seg") -> Path:
        return self.journal_dir / sg.segment_name(first, compressed=form == "zst")

    def _corrupt(
        self, path: Path | str, offset: int, seq: int | None, reason: str
    ) -> JournalCorruptError:
        return JournalCorruptError(
            f"{path}: damaged journal at offset {offset}: {reason}", hint=CORRUPT_HINT,
            path=str(path), offset=offset, seq=seq, reason=reason, session=self.session_id,
        )  # fmt: skip

    # -- headers and SEALs --------------------------------------------------------------
    def _check_header(self, header: SegmentHeader, first: int, path: Path) -> None:
        if header.session_id != self.session_id:
            raise self._corrupt(path, 16, None, f"segment belongs to {header.session_id}")
        if header.first_seq != first:
            raise self._corrupt(path, 32, first, f"header first_seq {header.first_seq} != name")

    def _decode_header(self, raw: bytes, first: int, path: Path) -> SegmentHeader:
        try:
            header = sg.decode_header(raw)
        except FormatError as exc:
            raise self._corrupt(path, 0, first, f"segment header: {exc}") from exc
        self._check_header(header, first, path)
        return header

    def header_of(self, first: int) -> SegmentHeader:
        """The checked header of segment ``first`` (one small read, or its seek table)."""
        return self._header_of(first)[0]

    def _header_of(self, first: int) -> tuple[SegmentHeader, Path]:
        fd = self._open_plain(first)
        if fd is None:
            return self._zst_of(first).header, self._path(first, "zst")
        try:
            raw = self.fs.read_at(fd, sg.HEADER_SIZE, 0)
        finally:
            os.close(fd)
        return self._decode_header(raw, first, self._path(first)), self._path(first)

    def _check_tail_number(self, header: SegmentHeader, path: Path) -> None:
        """Opening's first check of the tail ``header``: its number is the segment count - 1."""
        firsts = self.segments
        if header.segment_no > len(firsts) - 1:  # files are lost: name the first lost seq
            raise find_gap(self, header, path, CORRUPT_HINT)
        if header.segment_no != len(firsts) - 1:
            msg = f"segment_no {header.segment_no} but {len(firsts)} segments"
            raise self._corrupt(path, 40, header.first_seq, msg)

    def _check_tail_link(self, header: SegmentHeader, need_carry: bool) -> dict[str, Any] | None:
        """Opening's check that the last sealed segment's SEAL links to the tail ``header``,
        from a few small reads at that segment's end; returns that SEAL's carry.

        When :meth:`check_links` found that segment unchanged since a recorded check and the
        carry is not needed, the recorded SEAL stands in for the reads."""
        firsts = self.segments
        if len(firsts) < 2:
            return None
        if not need_carry and self._known_link == (header.first_seq - 1, header.prev_hash):
            return None
        return self._check_link(firsts[-2], header)

    def checked_links(self, tail: SegmentHeader) -> CheckedLinks | None:
        """What :meth:`check_links` and opening verified, as the TAIL hint records it; None
        when they did not run, or a sealed segment could not be stat'ed."""
        ids = self._sealed_ids
        if not ids or any(i is None for i in ids):
            return None
        return CheckedLinks(tuple(i for i in ids if i is not None),
                            (tail.first_seq - 1, tail.prev_hash))  # fmt: skip

    def _check_link(self, prev: int, header: SegmentHeader) -> dict[str, Any]:
        """Check the last sealed segment's SEAL links to ``header``; return its carry."""
        payload, prev_header, path = self._seal_of(prev)
        try:
            info = sg.decode_seal(payload)
        except FormatError as exc:
            raise self._corrupt(path, 0, prev, str(exc)) from exc
        if (lost := header.segment_no - prev_header.segment_no - 1) > 0:
            no, first = prev_header.segment_no + 1, info.last_seq + 1
            raise gap_error(self, no, lost, first, header.first_seq - 1, CORRUPT_HINT)
        if lost:
            raise self._corrupt(path, 40, prev, "segment numbers are not contiguous")
        if info.last_seq != header.first_seq - 1 or info.last_hash != header.prev_hash:
            msg = f"SEAL (last_seq {info.last_seq}) does not link to the next segment"
            raise self._corrupt(path, 0, header.first_seq, msg)
        return info.carry

    def check_links(self, known: CheckedLinks | None = None) -> None:
        """Check that the sealed segments chain without reading their frames: the first is
        segment_no 0, and each SEAL links to the next header with the next number.

        One ``stat`` per sealed segment, and two small reads (its header and SEAL, or a
        compressed segment's seek table) for each one that ``known`` (an earlier open's
        record) does not vouch for, and for the neighbours of those; so an unchanged journal
        costs no read. The link from the last sealed segment to the tail is opening's to check.
        """
        sealed = self.segments[:-1]
        ids = [self._file_id(first) for first in sealed]  # before any read: a later change shows
        ok = [known is not None and known.trusts(no, i) for no, i in enumerate(ids)]
        if sealed and not ok[0]:
            header = self.header_of(sealed[0])
            if header.segment_no != 0:  # the journal's first segments are lost
                raise gap_error(self, 0, header.segment_no, None, sealed[0] - 1, CORRUPT_HINT)
        for no in range(1, len(sealed)):
            if not (ok[no - 1] and ok[no]):
                self._check_link(sealed[no - 1], self._header_of(sealed[no])[0])
        if known is not None and sealed and ok[-1] and len(known.files) == len(sealed):
            self._known_link = known.link
        self._sealed_ids = ids

    def _file_id(self, first: int) -> FileId | None:
        """Sealed segment ``first`` as ``stat`` sees it now (None if it cannot be stat'ed)."""
        # a str path, not a Path: this runs once per sealed segment on every writable open
        base = os.path.join(self.journal_dir, sg.segment_name(first))
        for form in ("seg", "zst") if "seg" in self._segs.get(first, ()) else ("zst",):
            try:
                st = os.stat(base if form == "seg" else base + ".zst")
            except OSError:
                continue  # a .seg compressed meanwhile, or a missing file the reads will name
            return first, form, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns
        return None

    def seal_of(self, first: int) -> sg.SealInfo:
        """The decoded SEAL of sealed segment ``first`` (a few small reads at its end)."""
        return sg.decode_seal(self._seal_of(first)[0])

    def _seal_of(self, first: int) -> tuple[bytes, SegmentHeader, Path]:
        """SEAL payload and header of a sealed segment, from a few small reads at its end."""
        fd = self._open_plain(first)
        if fd is None:
            z = self._zst_of(first)
            return z.seal, z.header, self._path(first, "zst")
        path = self._path(first)
        try:
            size = os.fstat(fd).st_size
            header = self._decode_header(self.fs.read_at(fd, sg.HEADER_SIZE, 0), first, path)
            window = _TRAILER_READ
            while True:
                n = min(window, size - sg.HEADER_SIZE)
                seal = sg.find_seal(self.fs.read_at(fd, n, size - n), size - n, size, first)
                if seal is not None:
                    return seal.payload, header, path
                if n >= size - sg.HEADER_SIZE:
                    raise self._corrupt(path, size, None, "sealed segment does not end with SEAL")
                window *= 8
        finally:
            os.close(fd)

    def _segment_head(self, first: int, no: int, link: Link | None) -> tuple[SegmentHeader, Path]:
        """The header of the ``no``-th segment, checked, and linked to the SEAL before it."""
        header, path = self._header_of(first)
        if header.segment_no != no:
            raise self._corrupt(path, 40, first, "segment numbers are not contiguous")
        if link is not None and link != (first - 1, header.prev_hash):
            raise self._corrupt(path, 56, first, "header does not link to the previous SEAL")
        return header, path

    def _segment_foot(
        self, first: int, header: SegmentHeader, path: Path, last: Frame | None, last_hash: str
    ) -> Link:
        """Check that ``last`` is a SEAL fitting segment ``first``; returns its link."""
        why = sf.seal_problem(first, last, last_hash)
        if not why and "seg" not in self._segs[first] and last is not None:
            why = "" if self._zst_of(first).seal == last.payload else "SEAL copy differs"
        if why or last is None:
            raise self._corrupt(path, last.offset if last else 0, first, why)
        info = sg.decode_seal(last.payload)
        return info.last_seq, info.last_hash

    # -- strict frames ------------------------------------------------------------------
    def _open_plain(self, first: int) -> int | None:
        """A read-only descriptor on sealed ``first``'s .seg; None if it is (now) compressed."""
        if "seg" not in self._segs.get(first, ()):
            return None
        path = self._path(first)
        try:
            return os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:  # compressed meanwhile by the writer
            self._segs[first] = {"zst"}
            return None
        except OSError as exc:
            raise storage_error("open", path, exc) from exc

    def _plain_frames(
        self, fd: int, first: int, from_seq: int, end: int, index: sf.SparseIndex
    ) -> Iterator[Frame]:
        path = self._path(first)
        seq, pos = index.floor(from_seq)
        rules, want = sf.FrameRules(seq), BLOCK
        while pos < end:
            n = min(want, end - pos)
            buf = self.fs.read_at(fd, n, pos)
            used, why = yield from sf.parse_frames(
                buf, pos, first, rules, index, self.max_record_bytes, from_seq
            )
            if why and not (why in sf.INCOMPLETE and pos + n < end):
                raise self._corrupt(path, pos + used, rules.expected, why)
            want = BLOCK if used else 2 * n
            pos += used
        if rules.in_group:
            raise self._corrupt(path, pos, rules.expected, "segment ends inside a group")

    def _zst_frames(self, first: int, from_seq: int) -> Iterator[Frame]:
        z = self._zst_of(first)
        path, entries = self._path(first, "zst"), z.table.entries
        start = z.table.chunk_for(from_seq)
        rules = sf.FrameRules(entries[start].key)
        for n, raw in enumerate(self._zst_chunks(first, z.table, start), start=start):
            e = entries[n]
            if rules.expected != e.key or rules.in_group:
                raise self._corrupt(path, e.comp_offset, rules.expected, "seek table seq")
            skip = sg.HEADER_SIZE if n == 0 else 0
            if raw[:skip] != z.header_raw[:skip]:
                raise self._corrupt(path, 0, first, "header copy differs from chunk 0")
            base = e.raw_offset + skip
            used, why = yield from sf.parse_frames(  # the zstd checksum stands for the CRCs
                raw[skip:], base, first, rules, None, 1 << 62, from_seq, crc=False
            )
            if why:
                raise self._corrupt(path, base + used, rules.expected, f"in chunk {n}: {why}")
        if not rules.sealed:
            raise self._corrupt(path, 0, rules.expected, "compressed segment lacks its SEAL")

    def _zst_of(self, first: int) -> _Zst:
        """The (cached) seek table of compressed segment ``first``: two small reads at most."""
        if first not in self._zst:
            path = self._path(first, "zst")
            fd = self.fs.open(path, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                table = zstdseek.read_seek_table(lambda n, o: self.fs.read_at(fd, n, o), size)
                header, header_raw, seal = sg.decode_zst_meta(table.meta)
            except FormatError as exc:
                raise self._corrupt(path, 0, first, str(exc)) from exc
            finally:
                self.fs.close(fd)
            self._check_header(header, first, path)
            if len(self._zst) >= _ZST_CACHE:
                del self._zst[next(iter(self._zst))]
            self._zst[first] = _Zst(table, header, header_raw, seal)
        return self._zst[first]

    def _zst_chunks(self, first: int, table: zstdseek.SeekTable, start: int) -> Iterator[bytes]:
        """Decompressed chunks ``start..`` of compressed segment ``first``; each must be one
        zstd frame with a content checksum, which the decoder verified (FORMAT.md 7)."""
        path = self._path(first, "zst")
        fd = self.fs.open(path, os.O_RDONLY)
        try:
            read_at = lambda n, o: self.fs.read_at(fd, n, o)  # noqa: E731
            yield from zstdseek.read_chunks(read_at, table, start, checksummed=True)
        except FormatError as exc:
            raise self._corrupt(path, 0, table.entries[start].key, str(exc)) from exc
        finally:
            self.fs.close(fd)

    # -- batch checks -------------------------------------------------------------------
    def check_segment(self, first: int, no: int, check: PayloadCheck | None = None) -> SegmentCheck:
        """Batch-check the ``no``-th segment, ``first``, with its chain from its own header.

        As strict as reading it with ``frames()`` (header, frames, SEAL; the link to the
        previous segment is the caller's to compare), plus the chain and ``check`` on every
        EVENT payload. Never raises for damage: ``ok`` is False instead (see the module
        docstring). A segment that ends without a SEAL is ok only when it ends on a group
        boundary (a clean tail).
        """
        try:
            return self._check_segment(first, no, check)
        except (AgentSessionsError, OSError):
            return SegmentCheck(first, False)

    def _check_segment(self, first: int, no: int, check: PayloadCheck | None) -> SegmentCheck:
        header, path = self._segment_head(first, no, None)
        st = ChainScan(header.first_seq, header.prev_hash, check)
        fd = self._open_plain(first)
        if fd is None:
            end = self._scan_zst(first, st)
        else:
            try:
                end = self._scan_plain(fd, first, st)
            finally:
                os.close(fd)
        if end < 0:
            return SegmentCheck(first, False)
        last_hash = st.prev.decode()
        link = None
        if st.seal is not None:
            link = self._segment_foot(first, header, path, st.seal, last_hash)
        return SegmentCheck(
            first, True, header.prev_hash, st.rules.expected, last_hash, st.events, end,
            st.last_frame, link, st.sealed,
        )  # fmt: skip

    def _scan_plain(self, fd: int, first: int, st: ChainScan) -> int:
        """Batch-scan a .seg from its first frame to its end; where its data ends (its size,
        or the start of an unsealed tail's free space), or -1 if not ok."""
        size = os.fstat(fd).st_size
        pos = sg.HEADER_SIZE
        buf = bytearray(max(min(BLOCK, size - pos), sg.FRAME_HEADER_SIZE))
        while pos < size:
            n = pread_into(fd, buf, min(len(buf), size - pos), pos)
            used, why = scan_buffer(buf, 0, n, pos, st, self.max_record_bytes, first)
            if why and not (why in sf.INCOMPLETE and pos + n < size):
                free = why in sf.FREE_SPACE and not (st.rules.in_group or st.rules.sealed)
                return pos + used if free and zero_until(fd, pos + used, size, buf) else -1
            if why and used == 0:
                buf = bytearray(2 * len(buf))  # one frame larger than the buffer
            pos += used
        return -1 if st.rules.in_group else size

    def _scan_zst(self, first: int, st: ChainScan) -> int:
        """Batch-scan a .seg.zst chunk by chunk; its raw size, or -1 if not ok.

        As the strict reader does, it relies on each chunk's zstd content checksum instead of
        the frame CRCs inside (about a fifth of the scan's work).
        """
        z = self._zst_of(first)
        entries = z.table.entries
        for n, raw in enumerate(self._zst_chunks(first, z.table, 0)):
            e = entries[n]
            skip = sg.HEADER_SIZE if n == 0 else 0
            if st.rules.expected != e.key or st.rules.in_group or raw[:skip] != z.header_raw[:skip]:
                return -1
            _, why = scan_buffer(raw, skip, len(raw), e.raw_offset, st, 1 << 62, first, False)
            if why:
                return -1
        return z.table.raw_size if st.rules.sealed else -1
