"""Reading a segment's records in bulk: the files' side of :mod:`.recordscan`.

:class:`RecordReads` reads one segment from the group boundary before a seq: a ``.seg`` in
1 MiB reads (a tail sealed at 1 MiB in one), a ``.seg.zst`` chunk by chunk, and hands each
buffer to :func:`.recordscan.take`. It refuses what the strict frame reader
(:meth:`.segmentread.SegmentFiles._plain_frames` and ``_zst_frames``) refuses, with the
same :class:`~agentsessions.errors.JournalCorruptError`, and also a chain that does not
continue (see :mod:`.recordscan`).
"""

from __future__ import annotations

import bisect
import itertools
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.recordscan import Convert, RecordScan, take
from agentsessions.journal.format.segmentread import SegmentFiles
from agentsessions.journal.format.segmentscan import BLOCK
from agentsessions.journal.format.segmenttail import Tail

_Batches = Iterator[Iterator[Record]]  # a segment's records, batch by batch, built as read
_ZST_LIMIT = 1 << 62  # a compressed chunk's frames: their length was checked when written


class RecordReads(SegmentFiles):
    """The bulk record reader of a log (:class:`.segmentlog.SegmentLog` is one)."""

    _indexes: dict[int, sf.SparseIndex]  # the log's sparse indexes of its sealed .seg files

    if TYPE_CHECKING:  # the log's, which this is a base of

        def _require_tail(self) -> Tail: ...

        def close(self) -> None: ...

    def records(
        self, convert: Convert, from_seq: int = 1, to_seq: int = 0, *, close: bool = False
    ) -> Iterator[Record]:
        """The EVENT frames ``read`` returns, as Records read in bulk (see the module);
        ``convert``: for a frame the bulk loop leaves; ``close``: close the log after them."""
        t = self._require_tail()
        hi = t.next_seq - 1 if to_seq <= 0 else min(to_seq, t.next_seq - 1)
        lo = max(from_seq, min(self._segs))  # a forked child's log starts after its base
        done = self.close if close else None
        batches = self._record_batches(self._require_tail, self._indexes, lo, hi, convert, done)
        return itertools.chain.from_iterable(batches)  # flattened in C: no frame per record

    def _record_batches(
        self, tail: Callable[[], Tail], indexes: dict[int, sf.SparseIndex], lo: int, hi: int,
        convert: Convert, done: Callable[[], None] | None,
    ) -> _Batches:  # fmt: skip
        """Batches of records ``lo..hi``, segment by segment; ``done`` runs after them."""
        firsts = sorted(self._segs)
        try:
            for first in firsts[max(bisect.bisect_right(firsts, lo) - 1, 0) :]:
                if first > hi or lo > hi:
                    return
                t = tail()  # the tail may have rotated since the last segment
                if first == t.first and t.fd is not None:
                    yield from self._tail_records(t, lo, hi, convert)
                    continue
                index = indexes.setdefault(first, sf.SparseIndex([(first, sg.HEADER_SIZE)]))
                yield from self._sealed_records(first, lo, hi, convert, index.floor(lo))
        finally:
            if done is not None:
                done()

    def _tail_records(self, t: Tail, lo: int, hi: int, convert: Convert) -> _Batches:
        """Batches of the records ``lo..hi`` in the tail, up to its last commit."""
        assert t.fd is not None
        seq, pos = t.index.floor(lo)
        prev = t.header.prev_hash if pos == sg.HEADER_SIZE else None
        scan = RecordScan(t.first, seq, prev, lo, hi, convert, derive=False)
        dup = os.dup(t.fd)  # a rotation may close the tail's descriptor meanwhile
        try:
            yield from self._plain_records(dup, pos, t.commit_end, scan)
        finally:
            os.close(dup)

    def _sealed_records(
        self, first: int, lo: int, hi: int, convert: Convert, floor: tuple[int, int]
    ) -> _Batches:
        """Batches of the records ``lo..hi`` of sealed segment ``first``: its .seg from
        ``floor`` (the sparse index's group start at or before ``lo``), else its .seg.zst."""
        fd = self._open_plain(first)
        if fd is None:
            yield from self._zst_records(first, lo, hi, convert)
            return
        try:
            seq, pos = floor
            prev = self.header_of(first).prev_hash if pos == sg.HEADER_SIZE else None
            scan = RecordScan(first, seq, prev, lo, hi, convert, derive=False)
            yield from self._plain_records(fd, pos, os.fstat(fd).st_size, scan)
        finally:
            os.close(fd)

    def _plain_records(self, fd: int, pos: int, end: int, st: RecordScan) -> _Batches:
        """Batches of the records of a .seg's bytes ``[pos, end)`` (``pos`` a group start),
        frame CRCs checked."""
        path, want = self._path(st.first), BLOCK
        while pos < end and not st.done():
            n = min(want, end - pos)
            buf = self.fs.read_at(fd, n, pos)
            used, why = take(buf, 0, len(buf), pos, st, self.max_record_bytes, True)
            yield st.batch()
            if why and not (why in sf.INCOMPLETE and pos + n < end):
                raise self._corrupt(path, pos + used, st.rules.expected, why)
            if st.rules.sealed and pos + used != end:
                raise self._corrupt(path, pos + used, st.rules.expected, "bytes after SEAL")
            want = BLOCK if used else 2 * n
            pos += used
        if st.rules.in_group and not st.done():
            raise self._corrupt(path, pos, st.rules.expected, "segment ends inside a group")

    def _zst_records(self, first: int, lo: int, hi: int, convert: Convert) -> _Batches:
        """Batches of the records of a .seg.zst from the chunk holding ``lo``; the zstd
        content checksum stands for the frame CRCs, hashes are derived (:mod:`.recordscan`)."""
        z = self._zst_of(first)
        path, entries = self._path(first, "zst"), z.table.entries
        start = z.table.chunk_for(lo)
        prev = z.header.prev_hash if start == 0 else None
        st = RecordScan(first, entries[start].key, prev, lo, hi, convert, derive=True)
        for n, raw in enumerate(self._zst_chunks(first, z.table, start), start=start):
            e = entries[n]
            if st.rules.expected != e.key or st.rules.in_group:
                raise self._corrupt(path, e.comp_offset, st.rules.expected, "seek table seq")
            skip = sg.HEADER_SIZE if n == 0 else 0
            if raw[:skip] != z.header_raw[:skip]:
                raise self._corrupt(path, 0, first, "header copy differs from chunk 0")
            used, why = take(raw, skip, len(raw), e.raw_offset, st, _ZST_LIMIT, False)
            yield st.batch()
            if why:
                raise self._corrupt(
                    path, e.raw_offset + used, st.rules.expected, f"in chunk {n}: {why}"
                )
            if st.done():
                return
            if st.rules.sealed and used != len(raw):
                raise self._corrupt(
                    path, e.raw_offset + used, st.rules.expected, "bytes after SEAL"
                )
        if not st.rules.sealed:
            raise self._corrupt(path, 0, st.rules.expected, "compressed segment lacks its SEAL")
