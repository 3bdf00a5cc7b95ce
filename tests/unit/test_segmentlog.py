"""SegmentLog: append, rotate, compress, read, resume, recover, fail and crash safely."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need_zstd

from agentsessions.errors import (
    InvalidArgumentError,
    JournalCorruptError,
    StorageError,
)
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import zstdcodec
from agentsessions.journal.format.durable import (
    CrashFileSystem,
    FileSystem,
    SimulatedCrash,
    storage_error,
)
from agentsessions.journal.format.segmentlog import Position, SegmentLog

SID = "sess-0123456789abcdef01234567"
SMALL = 4096  # segment_max_bytes for rotation tests


def payload(seq: int, size: int = 200) -> bytes:
    return json.dumps({"event": {"n": seq, "pad": "p" * size}, "seq": str(seq)}).encode()


class Writer:
    """Appends numbered groups and remembers what was acknowledged."""

    def __init__(self, log: SegmentLog, *, commit_every: int = 3) -> None:
        self.log = log
        self.acked: list[int] = list(range(log.base_seq + 1, log.position.last_seq + 1))
        self.groups = 0
        self.commit_every = commit_every

    def group(self, n: int = 2, size: int = 200) -> Position:
        seq = self.log.position.last_seq + 1
        frames: list[tuple[int, int, int, bytes]] = []
        if self.groups % self.commit_every == 0:
            frames.append((sg.RTYPE_COMMIT, seq, 1, b"commit-%d" % self.groups))
        frames += [(sg.RTYPE_EVENT, seq + i, 1, payload(seq + i, size)) for i in range(n)]
        pos = self.log.append_group(frames, carry=lambda: {"groups": self.groups, "seq": seq})
        self.groups += 1
        self.acked.extend(range(seq, seq + n))
        return pos


def new_log(d: Path, **kw: Any) -> SegmentLog:
    d.mkdir(parents=True, exist_ok=True)
    SegmentLog.create(
        d, session_id=SID, **{k: kw.pop(k) for k in ("base_seq", "base_hash") if k in kw}
    )
    log, scan = SegmentLog.open(d, session_id=SID, writable=True, **kw)
    assert scan.frames == [] and scan.recovery is None
    return log


def reopen(d: Path, **kw: Any) -> tuple[SegmentLog, Any]:
    kw.setdefault("writable", True)
    return SegmentLog.open(d, session_id=SID, **kw)


def seqs(frames: Iterator[sg.Frame] | list[sg.Frame]) -> list[int]:
    return [f.seq for f in frames if f.rtype == sg.RTYPE_EVENT]


def tree(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "journal"


# -- basics --------------------------------------------------------------------------------
def test_append_read_and_position(journal: Path) -> None:
    log = new_log(journal)
    w = Writer(log)
    assert log.position == Position(1, 128, 0, "", -1)
    pos = w.group(3)
    raw = (journal / sg.segment_name(1)).read_bytes()
    assert pos.last_seq == 3 and len(raw) > pos.offset  # free space follows the commit
    assert raw[pos.offset :] == bytes(len(raw) - pos.offset)
    assert pos.last_hash == hashlib.sha256(payload(3)).hexdigest()
    for _ in range(5):
        w.group(2)
    assert seqs(log.read()) == w.acked
    assert seqs(log.read(4, 6)) == [4, 5, 6]
    assert seqs(log.read(12, 0)) == [12, 13]
    assert seqs(log.read(14)) == [] and seqs(log.read(5, 4)) == []
    frames = list(log.frames())
    assert [f.rtype for f in frames].count(sg.RTYPE_COMMIT) == 2
    end = log.position
    log.close()
    log, scan = reopen(journal)
    assert log.position == end
    assert seqs(scan.frames) == w.acked and not scan.resumed and scan.base_carry is None
    log.close()


def test_append_validation(journal: Path) -> None:
    log = new_log(journal)
    with pytest.raises(InvalidArgumentError):
        log.append_group([(sg.RTYPE_EVENT, 2, 0, b"x")], carry=dict)
    with pytest.raises(InvalidArgumentError):
        log.append_group([], carry=dict)
    log.close()
    ro, _ = reopen(journal, writable=False)
    with pytest.raises(InvalidArgumentError, match="read-only"):
        ro.append_group([(sg.RTYPE_EVENT, 1, 0, b"x")], carry=dict)
    ro.close()
    with pytest.raises(InvalidArgumentError):
        ro.position  # noqa: B018  (closed)


def test_create_refuses_existing_and_bad_arguments(journal: Path) -> None:
    new_log(journal).close()
    with pytest.raises(InvalidArgumentError):
        SegmentLog.create(journal, session_id=SID)
    with pytest.raises(InvalidArgumentError):
        SegmentLog.create(journal.parent, session_id="sess-xyz")
    with pytest.raises(InvalidArgumentError):
        SegmentLog.create(journal.parent, session_id=SID, base_seq=5)  # no base_hash


def test_wrong_session_or_missing_segments(journal: Path) -> None:
    new_log(journal).close()
    with pytest.raises(JournalCorruptError, match="belongs to"):
        SegmentLog.open(journal, session_id="sess-" + "f" * 24, writable=False)
    empty = journal.parent / "empty"
    empty.mkdir()
    with pytest.raises(JournalCorruptError, match="no segment"):
        SegmentLog.open(empty, session_id=SID, writable=False)


def test_forked_child_starts_after_base(journal: Path) -> None:
    base_hash = "ab" * 32
    log = new_log(journal, base_seq=10, base_hash=base_hash, segment_max_bytes=SMALL)
    assert (journal / sg.segment_name(11)).exists()
    assert log.base_seq == 10 and log.base_hash == base_hash
    assert log.position == Position(11, 128, 10, base_hash, -1)
    w = Writer(log)
    for _ in range(30):
        w.group(2)
    assert seqs(log.read(1)) == list(range(11, 71))
    log.close()
    log, _ = reopen(journal, writable=False)
    assert log.base_seq == 10 and log.base_hash == base_hash  # from the compressed first segment
    assert seqs(log.read(5, 12)) == [11, 12]
    log.close()


# -- rotation and compression ----------------------------------------------------------------
def fill(journal: Path, groups: int = 80, **kw: Any) -> Writer:
    log = new_log(journal, segment_max_bytes=SMALL, **kw)
    w = Writer(log)
    for i in range(groups):
        w.group(1 + i % 4)
    return w


def test_rotation_compresses_and_reads_every_seq(
    journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sg, "CHUNK_TARGET", 1024)  # several chunks per sealed segment
    w = fill(journal)
    names = sorted(os.listdir(journal))
    zst = [n for n in names if n.endswith(".seg.zst")]
    assert len(zst) >= 5 and names[-1].endswith(".seg") and len(names) == len(zst) + 1
    log = w.log
    head = log.position.last_seq
    for start in range(1, head + 1):
        assert seqs(log.read(start, start + 2)) == list(range(start, min(start + 3, head + 1)))
    assert seqs(log.read()) == w.acked
    frames = list(log.frames())
    assert sum(f.rtype == sg.RTYPE_SEAL for f in frames) == len(zst)
    log.close()


def test_background_compression_keeps_the_rotating_append_short_and_reads_whole(
    journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With compress_in_background, the append that rotates returns before the sealed
    segment is compressed; reads meanwhile see every seq, and close waits for the thread."""
    need_zstd()
    started, release = threading.Event(), threading.Event()
    real = SegmentLog._compress

    def slow(self: SegmentLog, first: int) -> None:
        started.set()
        release.wait(10)  # hold the compression until the test has read everything
        real(self, first)

    monkeypatch.setattr(SegmentLog, "_compress", slow)
    w = fill(journal, groups=0, compress_in_background=True)
    while not started.is_set():
        w.group(1 + w.groups % 4)
    assert [n for n in os.listdir(journal) if n.endswith(".zst")] == []  # still compressing
    assert seqs(w.log.read()) == w.acked  # the append returned; everything reads
    release.set()
    for _ in range(30):
        w.group(2)  # more rotations: each waits for the one before
    assert seqs(w.log.read()) == w.acked
    w.log.close()  # waits for the last compression
    names = sorted(os.listdir(journal))
    assert all(n.endswith(".seg.zst") for n in names[:-1]) and names[-1].endswith(".seg")
    log, scan = reopen(journal)
    assert scan.recovery is None and seqs(log.read()) == w.acked
    log.close()


def test_zstd_cli_reproduces_sealed_segments_and_cli_backend_reads_same(
    journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = fill(journal, groups=40)
    want = [(f.seq, f.payload, f.offset) for f in w.log.read()]
    w.log.close()
    zst = sorted(journal.glob("*.seg.zst"))[0]
    if zstdcodec.backend() != "none":
        raw = zstdcodec.decompress(zst.read_bytes(), 1 << 30)
        assert sg.decode_header(raw[:128]).first_seq == int(zst.name[:16], 16)
    monkeypatch.setattr(zstdcodec, "_backend", "cli")
    log, _ = reopen(journal, writable=False)
    assert [(f.seq, f.payload, f.offset) for f in log.read()] == want
    log.close()


def test_without_compressor_sealed_segments_stay_plain(
    journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zstdcodec, "_backend", "none")
    w = fill(journal, groups=40)
    assert not list(journal.glob("*.zst")) and len(list(journal.glob("*.seg"))) > 2
    assert seqs(w.log.read(7, 30)) == list(range(7, 31))
    w.log.close()
    monkeypatch.setattr(zstdcodec, "_backend", None)
    log, _ = reopen(journal, segment_max_bytes=SMALL)
    w2 = Writer(log)
    for _ in range(20):
        w2.group(3)
    assert seqs(log.read()) == list(range(1, log.position.last_seq + 1))
    assert list(journal.glob("*.zst"))  # new rotations compress again
    log.close()


def test_open_reads_only_the_tail_and_the_last_seal(journal: Path) -> None:
    w = fill(journal, groups=120)
    pos = w.log.position
    w.log.close()

    class Counting(FileSystem):
        def __init__(self) -> None:
            super().__init__()
            self.read = 0

        def read_at(self, fd: int, n: int, offset: int) -> bytes:
            data = super().read_at(fd, n, offset)
            self.read += len(data)
            return data

    fs = Counting()
    log, scan = SegmentLog.open(journal, session_id=SID, writable=False, fs=fs, resume=pos)
    assert scan.resumed and scan.frames == [] and log.position == pos
    assert fs.read < 3 * 1024  # a hint's frame + the last seek-table trailer, not the log
    log.close()
    fs = Counting()
    log, scan = SegmentLog.open(journal, session_id=SID, writable=False, fs=fs)
    tail_size = os.path.getsize(journal / sg.segment_name(pos.segment))
    assert fs.read < tail_size + 3 * 1024
    assert scan.base_carry is not None and "groups" in scan.base_carry
    log.close()


# -- resume hints ------------------------------------------------------------------------------
def test_resume_hint_valid_and_stale(journal: Path) -> None:
    log = new_log(journal)
    w = Writer(log)
    for _ in range(4):
        w.group(2)
    hint = log.position
    for _ in range(3):
        w.group(2)
    log.close()
    log, scan = reopen(journal, resume=hint)
    assert scan.resumed and seqs(scan.frames) == list(range(9, 15))
    commits = [f.seq for f in scan.frames if f.rtype == sg.RTYPE_COMMIT]
    assert commits == [13]  # the writer's 7th group starts with a COMMIT frame
    full = log.position
    log.close()
    bad_hints = [
        Position(hint.segment, hint.offset, hint.last_seq, "00" * 32, hint.last_frame),
        Position(hint.segment + 1, hint.offset, hint.last_seq, hint.last_hash, hint.last_frame),
        Position(hint.segment, 10**9, hint.last_seq, hint.last_hash, hint.last_frame),
        Position(hint.segment, hint.offset, hint.last_seq, hint.last_hash, hint.last_frame + 8),
        Position(hint.segment, hint.offset - 8, hint.last_seq, hint.last_hash, hint.last_frame),
        Position(hint.segment, hint.offset, hint.last_seq - 1, hint.last_hash, hint.last_frame),
    ]
    for bad in bad_hints:
        log, scan = reopen(journal, resume=bad, writable=False)
        assert not scan.resumed and seqs(scan.frames) == list(range(1, 15))
        assert log.position == full
        log.close()


# -- recovery ------------------------------------------------------------------------------------
def test_torn_tail_is_cut_to_a_sidecar_and_logged(journal: Path) -> None:
    log = new_log(journal)
    w = Writer(log)
    for _ in range(3):
        w.group(2)
    good = log.position
    log.close()
    seg = journal / sg.segment_name(1)
    torn = sg.encode_group([(sg.RTYPE_EVENT, 7, 1, payload(7)), (1, 8, 1, payload(8))], 7, 1 << 20)
    with open(seg, "r+b") as f:  # where the writer writes: over the free space
        f.seek(good.offset)
        f.write(torn[0][:-20])
    before = tree(journal)
    ro, scan = reopen(journal, writable=False)
    assert scan.torn_tail and scan.recovery is not None and not scan.recovery.cut
    assert scan.recovery.dropped_seqs == (7,) and ro.position == good
    ro.close()
    assert tree(journal) == before  # read-only never modifies
    log, scan = reopen(journal)
    r = scan.recovery
    assert r is not None and r.cut and r.truncated_bytes == len(torn[0]) - 20
    assert Path(r.sidecar).read_bytes() == torn[0][:-20]
    assert os.path.getsize(seg) == good.offset and log.position == good
    entry = json.loads((journal / "RECOVERY.log").read_text().splitlines()[-1])
    assert entry["truncated_bytes"] == r.truncated_bytes and entry["dropped_seqs"] == [7]
    Writer(log).group(2)
    assert seqs(log.read()) == list(range(1, 9))
    log.close()


def test_damage_before_a_later_group_is_refused_unchanged(journal: Path) -> None:
    log = new_log(journal)
    w = Writer(log)
    for _ in range(4):
        w.group(2)
    log.close()
    seg = journal / sg.segment_name(1)
    raw = bytearray(seg.read_bytes())
    raw[300] ^= 0x55  # inside the first groups
    seg.write_bytes(bytes(raw))
    (journal / "x.seg.tmp").write_bytes(b"junk")
    before = tree(journal)
    for writable in (True, False):
        with pytest.raises(JournalCorruptError) as info:
            reopen(journal, writable=writable)
        assert info.value.fields["offset"] <= 300 and info.value.fields["seq"] >= 1
        assert tree(journal) == before


def test_damage_in_a_sealed_segment_is_found_by_readers(journal: Path) -> None:
    w = fill(journal, groups=60)
    w.log.close()
    first = sorted(journal.glob("*.seg.zst"))[1]
    raw = bytearray(first.read_bytes())
    raw[40] ^= 0xFF  # inside the first compressed chunk
    first.write_bytes(bytes(raw))
    log, _ = reopen(journal, writable=False)  # O(1) open does not look inside
    with pytest.raises(JournalCorruptError):
        list(log.frames())
    with pytest.raises(JournalCorruptError):
        list(log.read())
    log.close()


def test_broken_link_and_missing_segment_are_refused(journal: Path) -> None:
    w = fill(journal, groups=60)
    w.log.close()
    names = sorted(os.listdir(journal))
    os.unlink(journal / names[1])  # a middle segment vanishes
    with pytest.raises(JournalCorruptError):
        reopen(journal, writable=False)
    journal2 = journal.parent / "j2"
    w = fill(journal2, groups=60)
    w.log.close()
    tail = sorted(journal2.glob("*.seg"))[-1]
    raw = bytearray(tail.read_bytes())
    header = sg.decode_header(bytes(raw[:128]))
    forged = sg.SegmentHeader(SID, header.first_seq, header.segment_no, 0, "cd" * 32)
    raw[:128] = forged.encode()
    tail.write_bytes(bytes(raw))
    with pytest.raises(JournalCorruptError, match="does not link"):
        reopen(journal2, writable=False)


def test_tmp_files_and_duplicate_forms(journal: Path) -> None:
    w = fill(journal, groups=60)
    want = seqs(w.log.read())
    w.log.close()
    zst = sorted(journal.glob("*.seg.zst"))[0]
    plain = journal / zst.name[: -len(".zst")]
    plain.write_bytes(zstdcodec.decompress(zst.read_bytes(), 1 << 30))
    (journal / "junk.seg.zst.tmp").write_bytes(b"partial")
    log, scan = reopen(journal, writable=False)  # prefers the .seg, changes nothing
    assert seqs(log.read()) == want and (journal / "junk.seg.zst.tmp").exists()
    log.close()
    log, scan = reopen(journal)
    r = scan.recovery
    assert r is not None and r.removed_tmp == ("junk.seg.zst.tmp",)
    assert r.removed_duplicates == (zst.name,) and not r.cut
    assert zst.exists() and not plain.exists()  # recompressed from the .seg
    assert seqs(log.read()) == want
    log.close()


def test_sealed_without_successor_gets_one_on_append(journal: Path) -> None:
    fs = CrashFileSystem()
    log = new_log(journal, segment_max_bytes=SMALL, fs=fs)
    w = Writer(log)
    while len(list(journal.glob("*.seg*"))) == 1:
        try:
            w.group(3)
        except SimulatedCrash:
            break
        fs.crash_at_op = len(fs.ops) + 4  # after the SEAL's write + sync: at the tmp create
    fs.crash()
    names = sorted(os.listdir(journal))
    assert len([n for n in names if n.endswith(".seg")]) == 1
    log, scan = reopen(journal)
    assert seqs(scan.frames) == w.acked and scan.base_carry is None
    Writer(log).group(2)
    assert len(list(journal.glob("*.seg*"))) == 2
    assert seqs(log.read()) == [*w.acked, w.acked[-1] + 1, w.acked[-1] + 2]
    log.close()


# -- failures -----------------------------------------------------------------------------------
def test_enospc_leaves_the_log_consistent_and_retry_works(journal: Path) -> None:
    fs = CrashFileSystem()
    log = new_log(journal, fs=fs)
    w = Writer(log)
    w.group(2)
    pos = log.position
    fs.enospc_at_write = fs.writes + 1
    with pytest.raises(StorageError, match="No space left on device") as info:
        w.group(4)
    assert info.value.fields["errno"] == errno.ENOSPC
    assert log.position == pos and os.path.getsize(journal / sg.segment_name(1)) == pos.offset
    w.acked = w.acked[:2]  # the failed group was not acknowledged
    w.group(4)
    assert seqs(log.read()) == list(range(1, 7))
    log.close()
    log, scan = reopen(journal)
    assert scan.recovery is None and seqs(scan.frames) == list(range(1, 7))
    log.close()


def test_a_full_disk_while_writing_free_space_still_commits_the_group(journal: Path) -> None:
    fs = CrashFileSystem()
    log = new_log(journal, fs=fs)
    w = Writer(log)
    fs.enospc_at_write = fs.writes + 2  # the group's write succeeds, its zeros do not
    pos = w.group(3)
    seg = journal / sg.segment_name(1)
    assert os.path.getsize(seg) == pos.offset  # cut back to the group: no half free space
    w.group(2)  # the next group tries the free space again
    assert os.path.getsize(seg) > log.position.offset
    assert seqs(log.read()) == w.acked == list(range(1, 6))
    log.close()
    fs.crash()  # everything acknowledged was synced
    log, scan = reopen(journal)
    assert scan.recovery is None and seqs(log.read()) == list(range(1, 6))
    log.close()


def test_failed_sync_is_undone_and_a_failed_undo_blocks_appends(journal: Path) -> None:
    class FlakySync(FileSystem):
        fail: int = 0

        def sync(self, fd: int, *, full: bool = False) -> None:
            if self.fail:
                self.fail -= 1
                raise storage_error("fsync", self.path_of(fd), OSError(errno.EIO, "EIO"))
            super().sync(fd, full=full)

    fs = FlakySync()
    log = new_log(journal, fs=fs)
    w = Writer(log)
    w.group(1)
    fs.fail = 1
    with pytest.raises(StorageError, match="Input/output error"):
        log.append_group([(sg.RTYPE_EVENT, 2, 1, payload(2))], carry=dict)
    assert os.path.getsize(journal / sg.segment_name(1)) == log.position.offset
    fs.fail = 2  # the sync and the undo's sync both fail
    with pytest.raises(StorageError):
        log.append_group([(sg.RTYPE_EVENT, 2, 1, payload(2))], carry=dict)
    with pytest.raises(StorageError, match="could not be undone"):
        log.append_group([(sg.RTYPE_EVENT, 2, 1, payload(2))], carry=dict)
    log.close()
    log, scan = reopen(journal)  # recovery cuts the unacknowledged group
    assert seqs(scan.frames) == [1]
    log.close()


def test_enospc_during_rotation_keeps_every_acknowledged_group(journal: Path) -> None:
    for nth in range(1, 6):
        d = journal.parent / f"j{nth}"
        fs = CrashFileSystem()
        log = new_log(d, segment_max_bytes=SMALL, fs=fs)
        w = Writer(log)
        while len(list(d.glob("*.seg*"))) == 1:
            w.group(3)
        while len(list(d.glob("*.seg*"))) < 3:  # a second rotation, then fail soon after
            w.group(3)
        fs.enospc_at_write = fs.writes + nth
        for _ in range(40):
            try:
                w.group(3)
            except StorageError:
                break
        else:
            pytest.fail("no write failed")
        w.group(3)
        assert seqs(log.read()) == w.acked
        log.close()
        log, _ = reopen(d)
        assert seqs(log.read()) == w.acked
        log.close()


def rotation_ops(journal: Path) -> tuple[int, int]:
    """(ops before the rotating append, ops it takes) for a fresh 'fill' setup."""
    fs = CrashFileSystem()
    log = new_log(journal, segment_max_bytes=SMALL, fs=fs)
    w = Writer(log)
    while True:
        start = len(fs.ops)
        w.group(3)
        if len(list(journal.glob("*.seg*"))) > 1:
            return start, len(fs.ops) - start


def test_crash_at_every_step_of_a_rotation(tmp_path: Path) -> None:
    start, count = rotation_ops(tmp_path / "probe")
    assert count >= 10  # seal write+sync, create+write+sync+replace+dirsync, compress..., group
    for k in range(1, count + 1):
        d = tmp_path / f"k{k}"
        fs = CrashFileSystem()
        log = new_log(d, segment_max_bytes=SMALL, fs=fs)
        w = Writer(log)
        fs.crash_at_op = start + k
        with pytest.raises(SimulatedCrash):
            while True:
                w.group(3)
        fs.crash()
        log2, _ = reopen(d)
        got = seqs(log2.read())
        assert got[: len(w.acked)] == w.acked, k  # nothing acknowledged is lost
        assert len(got) - len(w.acked) in (0, 3), k  # the in-flight group: all or nothing
        Writer(log2).group(2)
        assert seqs(log2.read()) == list(range(1, len(got) + 3))
        assert list(log2.frames())
        log2.close()


# -- read-only followers -------------------------------------------------------------------
def test_refresh_follows_new_groups_and_rotations(journal: Path) -> None:
    log = new_log(journal, segment_max_bytes=SMALL)
    w = Writer(log)
    w.group(2)
    ro, scan = reopen(journal, writable=False)
    assert seqs(scan.frames) == [1, 2] and ro.refresh() == []
    seen = [1, 2]
    for _ in range(40):
        w.group(2)
        seen += seqs(ro.refresh())
    assert seen == w.acked and ro.position == log.position
    assert seqs(ro.read(5, 9)) == [5, 6, 7, 8, 9]
    with open(journal / sg.segment_name(log.position.segment), "ab") as f:
        f.write(b"JREC" + bytes(20))  # a group being written: not yet committed
    assert ro.refresh() == [] and log.refresh() == []
    ro.close()
    log.close()


# -- the durability seam -------------------------------------------------------------------
def test_filesystem_maps_os_errors(tmp_path: Path) -> None:
    fs = FileSystem()
    with pytest.raises(StorageError, match="No such file or directory") as info:
        fs.open(tmp_path / "missing" / "x", os.O_RDONLY)
    assert info.value.fields["path"].endswith("missing/x") and info.value.exit_code == 13
    err = storage_error("write", "/x", OSError(errno.ENOSPC, "full"))
    assert str(err) == "write /x: No space left on device" and "free disk space" in err.hint
    fs.write_file_atomic(tmp_path / "f", b"one")
    fs.write_file_atomic(tmp_path / "f", b"two")
    assert (tmp_path / "f").read_bytes() == b"two" and sorted(os.listdir(tmp_path)) == ["f"]
    fs.append_durable(tmp_path / "log", b"a\n")
    fs.append_durable(tmp_path / "log", b"b\n")
    assert (tmp_path / "log").read_bytes() == b"a\nb\n"
    assert fs.listdir(tmp_path) == ["f", "log"]


def test_crash_filesystem_loses_exactly_the_unsynced_bytes(tmp_path: Path) -> None:
    fs = CrashFileSystem()
    fs.write_file_atomic(tmp_path / "durable", b"kept")
    fd = fs.open(tmp_path / "durable", os.O_RDWR | os.O_APPEND)
    fs.write_all(fd, b"+synced")
    fs.sync(fd)
    fs.write_all(fd, b"+lost")
    fd2 = fs.open(tmp_path / "new", os.O_WRONLY | os.O_CREAT)
    fs.write_all(fd2, b"data")
    fs.sync(fd2)  # synced data, but the directory entry never was
    fs.crash()
    assert (tmp_path / "durable").read_bytes() == b"kept+synced"
    assert not (tmp_path / "new").exists()
    fs = CrashFileSystem(enospc_at_write=2)
    fd = fs.open(tmp_path / "durable", os.O_RDWR | os.O_APPEND)
    fs.write_all(fd, b"1")
    with pytest.raises(StorageError) as info:
        fs.write_all(fd, b"2222")
    assert info.value.fields["errno"] == errno.ENOSPC
    assert (tmp_path / "durable").read_bytes() == b"kept+synced122"  # half of it landed
    fs.write_all(fd, b"3")  # only the Nth write fails
    fs.crash(random.Random(1))
    size = os.path.getsize(tmp_path / "durable")
    assert len(b"kept+synced") <= size <= len(b"kept+synced1223")


def test_crash_at_op_counts_mutations(tmp_path: Path) -> None:
    fs = CrashFileSystem(crash_at_op=3)
    fs.unlink(tmp_path / "nothing")
    fd = fs.open(tmp_path / "x", os.O_WRONLY | os.O_CREAT)
    with pytest.raises(SimulatedCrash):
        fs.write_all(fd, b"x")
    assert [op for op, _ in fs.ops] == ["unlink", "create"]
    fs.crash()
