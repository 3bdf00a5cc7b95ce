"""The read side of a session's segment log: frames in seq order and frames by position.

:class:`LogReads` is what :class:`.segmentlog.SegmentLog` adds to reading the files
(:class:`.segmentread.SegmentFiles`) and to the bulk record reader
(:class:`.segmentrecords.RecordReads`) once a log is open and has a tail: ``read`` (EVENT
frames by seq, through the sparse index or the seek table), ``frames`` and
``segment_frames`` (every frame, checked strictly, the links between segments included)
and ``frame_at`` (the one frame a position names). Opening, appending, rotation,
compression and following another writer's rotations stay with the log.

Invariants:
- nothing here writes, and nothing here moves the tail: the log owns it (``_require_tail``);
- reads of the tail segment go through a duplicate of its descriptor, so a rotation that
  closes the tail's descriptor meanwhile does not cut a reader short;
- every frame returned passed the strict frame reader (CRC or the chunk's zstd checksum,
  sequence and group rules); a STATE frame is also checked against the chain it follows;
  damage raises ``JournalCorruptError(path, offset, seq, reason)``;
- ``frame_at`` answers None, never an error, for anything that is not the intact frame asked
  for; its cost does not grow with the journal.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Generator, Iterator

from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf
from agentsessions.journal.format import staterecord
from agentsessions.journal.format.segment import RTYPE_EVENT, RTYPE_SEAL, Frame
from agentsessions.journal.format.segmentread import Link
from agentsessions.journal.format.segmentrecords import RecordReads

SegmentFrames = Generator[Frame, None, Link | None]
"""The frames of one segment; the generator returns its SEAL link (None for an open tail)."""


class LogReads(RecordReads):
    """Strict frame reads of an open log (:class:`.segmentlog.SegmentLog` is one)."""

    @property
    def base_seq(self) -> int:
        """The seq before this log's first event (a forked child's fork point; else 0)."""
        return min(self._segs) - 1

    def frame_at(
        self, first: int, offset: int, seq: int, rtype: int, *, plain_only: bool = False
    ) -> Frame | None:
        """The intact frame of ``rtype`` and ``seq`` at ``offset`` of segment ``first``, or
        None: one small read of a .seg, or the one chunk of a .seg.zst that holds it
        (``plain_only``: None for a .seg.zst). The cost does not grow with the journal."""
        t = self._require_tail()
        if first not in self._segs or offset < sg.HEADER_SIZE:
            return None
        own = first == t.first and t.fd is not None
        fd = t.fd if own else self._open_plain(first)
        if fd is None:
            return None if plain_only else self._zst_frame_at(first, offset, seq, rtype)
        try:
            head = self.fs.read_at(fd, sg.FRAME_HEADER_SIZE, offset)
            if len(head) < sg.FRAME_HEADER_SIZE:
                return None
            plen = sg.FRAME_STRUCT.unpack_from(head, 0)[1]
            if plen > self.max_record_bytes:
                return None
            raw = head + self.fs.read_at(fd, plen + (-plen % sg.FRAME_ALIGN), offset + len(head))
        finally:
            if not own:
                os.close(fd)
        parsed = sg.check_frame(memoryview(raw), 0, offset, self.max_record_bytes)
        if isinstance(parsed, str) or parsed[1] != seq or parsed[3] != rtype:
            return None
        payload = raw[sg.FRAME_HEADER_SIZE : sg.FRAME_HEADER_SIZE + parsed[0]]
        return Frame(rtype, seq, parsed[2], parsed[4], payload, first, offset)

    def _zst_frame_at(self, first: int, offset: int, seq: int, rtype: int) -> Frame | None:
        """:meth:`frame_at` in a .seg.zst: the chunk whose raw range holds ``offset`` (found
        by offset, not seq: state-only groups share a seq), decompressed and walked."""
        z = self._zst_of(first)
        entries = z.table.entries
        n = bisect.bisect_right([e.raw_offset for e in entries], offset) - 1
        chunks = self._zst_chunks(first, z.table, n)
        try:
            raw = next(chunks)
        finally:
            chunks.close()  # type: ignore[attr-defined]
        skip = sg.HEADER_SIZE if n == 0 else 0
        rules = sf.FrameRules(entries[n].key)
        base = entries[n].raw_offset + skip
        for frame in sf.parse_frames(raw[skip:], base, first, rules, None, 1 << 62, crc=False):
            if frame.offset >= offset:
                hit = (frame.offset, frame.rtype, frame.seq) == (offset, rtype, seq)
                return frame if hit else None
        return None

    def read(self, from_seq: int = 1, to_seq: int = 0) -> Iterator[Frame]:
        """EVENT frames with ``from_seq <= seq <= to_seq`` (0: the head as of this call).

        Seeks through the sparse index or the seek table; CRC-checked; in order.
        """
        t = self._require_tail()
        head = t.next_seq - 1
        hi = head if to_seq <= 0 else min(to_seq, head)
        lo = max(from_seq, self.base_seq + 1)
        return self._read(lo, hi, sorted(self._segs), t.commit_end)

    def _read(self, lo: int, hi: int, firsts: list[int], end: int) -> Iterator[Frame]:
        if lo > hi:
            return
        i = max(bisect.bisect_right(firsts, lo) - 1, 0)
        for first in firsts[i:]:
            if first > hi:
                return
            for frame in self._segment_frames(first, lo, end):
                if frame.rtype == RTYPE_EVENT and frame.seq >= lo:
                    if frame.seq > hi:
                        return
                    yield frame

    def _segment_frames(self, first: int, from_seq: int, tail_end: int) -> Iterator[Frame]:
        """Every frame of segment ``first`` from the index point for ``from_seq``, strictly."""
        t = self._require_tail()
        if first == t.first and t.fd is not None:
            dup = os.dup(t.fd)  # a rotation may close the tail's descriptor meanwhile
            try:
                yield from self._plain_frames(dup, first, from_seq, tail_end, t.index)
            finally:
                os.close(dup)
            return
        fd = self._open_plain(first)
        if fd is not None:
            try:
                index = self._indexes.setdefault(first, sf.SparseIndex([(first, sg.HEADER_SIZE)]))
                yield from self._plain_frames(fd, first, from_seq, os.fstat(fd).st_size, index)
            finally:
                os.close(fd)
            return
        yield from self._zst_frames(first, from_seq)

    def frames(self) -> Iterator[Frame]:
        """Every frame (EVENT, COMMIT, SEAL) of every segment in order, checked strictly.

        Checks headers, SEAL contents and the links between segments; raises
        JournalCorruptError(path, offset, seq, reason) at the first damage.
        """
        t = self._require_tail()
        return self._frames(sorted(self._segs), t.first, t.commit_end)

    def _frames(self, firsts: list[int], tail_first: int, tail_end: int) -> Iterator[Frame]:
        link: Link | None = None
        for no, first in enumerate(firsts):
            link = yield from self._one_segment(first, no, link, tail_first, tail_end)

    def segment_frames(self, first: int, no: int, link: Link | None) -> SegmentFrames:
        """The frames of the ``no``-th segment, ``first``, checked exactly as :meth:`frames`
        checks them; the generator returns the segment's SEAL link (None for an open tail).

        ``link`` is the previous segment's SEAL ``(last_seq, last_hash)`` (None for the
        first segment): ``verify`` re-reads one segment this way when its batch check failed.
        """
        t = self._require_tail()
        return self._one_segment(first, no, link, t.first, t.commit_end)

    def _one_segment(
        self, first: int, no: int, link: Link | None, tail_first: int, tail_end: int
    ) -> SegmentFrames:
        header, path = self._segment_head(first, no, link)
        last = last_event = None
        for frame in self._segment_frames(first, first, tail_end):
            if frame.rtype == RTYPE_EVENT:
                last_event = frame
            elif frame.rtype == sg.RTYPE_STATE:  # bound to the chain it follows
                prev = sg.frame_hash(last_event) if last_event else header.prev_hash
                why = staterecord.binding_problem(frame.payload, frame.seq, prev)
                if why:
                    raise self._corrupt(path, frame.offset, frame.seq, why)
            last = frame
            yield frame
        if first == tail_first and (last is None or last.rtype != RTYPE_SEAL):
            return None
        last_hash = sg.frame_hash(last_event) if last_event else header.prev_hash
        return self._segment_foot(first, header, path, last, last_hash)
