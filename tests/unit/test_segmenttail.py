"""The tail state on its own: a Tail built from a header and a scan, and a resume hint
checked against it, say what a SegmentLog that appended those bytes says."""

from __future__ import annotations

import os
from pathlib import Path

from test_segmentlog import SID, Writer, new_log

from agentsessions.journal.format import segment as sg
from agentsessions.journal.format.durable import DEFAULT_FS
from agentsessions.journal.format.segmenttail import Position, Tail, resume_scan


def _tail_of(path: Path) -> tuple[Tail, int, bytes]:
    fd = os.open(path, os.O_RDONLY)
    raw = DEFAULT_FS.read_at(fd, os.fstat(fd).st_size, 0)
    return Tail.start(sg.decode_header(raw[: sg.HEADER_SIZE]), fd), fd, raw


def test_a_fresh_tail_ends_at_its_header() -> None:
    header = sg.SegmentHeader(SID, 8, 1, 0, "ab" * 32)
    t = Tail.start(header, None)
    assert t.position == Position(8, sg.HEADER_SIZE, 7, "ab" * 32, -1)
    assert (t.first, t.sealed, t.size, t.index.floor(8)) == (8, False, 0, (8, sg.HEADER_SIZE))


def test_a_scanned_tail_and_a_resumed_one_end_where_the_writer_did(tmp_path: Path) -> None:
    log = new_log(tmp_path / "j")
    writer = Writer(log)
    for n in (1, 3, 2):
        writer.group(n)
    written = log.position
    log.close()
    path = tmp_path / "j" / sg.segment_name(1)

    t, fd, raw = _tail_of(path)
    try:
        s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=1, segment=1)
        t.absorb(s)
        assert t.position == written and t.damage(s) == ""
    finally:
        os.close(fd)

    t, fd, _raw = _tail_of(path)
    try:
        resumed = resume_scan(DEFAULT_FS, t, written, writable=False, max_record=1 << 20)
        assert resumed is not None and resumed.frames == []
        t.absorb(resumed)
        assert t.position == written
        w = written
        stale = Position(w.segment, w.offset, w.last_seq, "0" * 64, w.last_frame)  # another hash
        assert resume_scan(DEFAULT_FS, Tail.start(t.header, fd), stale, writable=False,
                           max_record=1 << 20) is None  # fmt: skip
    finally:
        os.close(fd)


def test_a_hint_followed_by_more_than_a_window_of_commits_still_resumes(tmp_path: Path) -> None:
    """A reader between two hints scans only what came after the hint, however much that
    is (it used to fall back to scanning the whole segment once more than the first read
    window, 64 KiB, had been committed since the hint, so a read grew with the segment)."""
    log = new_log(tmp_path / "j")
    writer = Writer(log)
    for _ in range(40):  # some history before the hint
        writer.group(2, size=2000)
    hint = log.position
    for _ in range(200):  # ~800 KB after it: many windows, and data to the file's end
        writer.group(2, size=2000)
    written = log.position
    log.close()
    t, fd, _raw = _tail_of(tmp_path / "j" / sg.segment_name(1))
    try:
        s = resume_scan(DEFAULT_FS, t, hint, writable=False, max_record=1 << 20)
        assert s is not None  # resumed: no full scan
        assert s.frames[0].offset == hint.offset and s.frames[-1].seq == written.last_seq
        t.absorb(s)
        assert t.position == written
    finally:
        os.close(fd)
