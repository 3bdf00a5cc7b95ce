"""A writable open stays flat in the session's length: the TAIL hint's ``sealed`` record.

A writable open (and fork) checks that the sealed segments chain (docs/FORMAT.md 14). The
writer records in its TAIL hint what it verified about each sealed segment (as ``stat``
saw it); the next open re-reads only the segments that changed since. Counted here, not
timed: a second open of an undamaged long session reads no sealed segment at all, and
damage made between two opens is still refused by the second.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from needs import need_zstd
from test_damage_table import REFUSED, ROWS, event, outcome, segments, snapshot

from agentsessions.errors import AcknowledgedDataMissingError, JournalCorruptError
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.segmentread import CheckedLinks
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid

SMALL = 8 * 1024
COMMITS = 40


class ReadCountingFileSystem(FileSystem):
    """Records the name of every file read through it (``read_at``) or opened by it."""

    def __init__(self) -> None:
        super().__init__()
        self.touched: list[str] = []

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
        self.touched.append(Path(path).name)
        return super().open(path, flags, mode)

    def read_at(self, fd: int, n: int, offset: int) -> bytes:
        # segment readers open sealed .seg files with os.open: name the file from its fd
        self.touched.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        return super().read_at(fd, n, offset)


@pytest.fixture(autouse=True)
def _needs_proc_and_zstd() -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to name a descriptor's file")
    need_zstd()


def long_session(home: Path, fs: FileSystem) -> tuple[FileStore, str, Path]:
    """A session of several sealed (compressed) segments and a tail, its writer closed."""
    store = FileStore(home, fs=fs, options=StoreOptions(segment_max_bytes=SMALL))
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    with store.writer(uid) as writer:
        for c in range(COMMITS):
            writer.append([event(2 * c), event(2 * c + 1)], commit_id=f"c{c}")
    sdir = store.session_dir(uid)
    assert len(segments(sdir)) >= 5
    return store, uid, sdir


def tick_past(sdir: Path, probe: Path) -> None:
    """Wait until the file system's clock has moved past every file's ctime in ``sdir``.

    A record counts only for a file changed in an earlier clock tick than the hint was
    written (the same-tick race, see CheckedLinks); tests that open right after writing
    wait for the (coarse) kernel clock to move on first. No time is asserted."""
    newest = max(p.stat().st_ctime_ns for p in sdir.rglob("*") if p.is_file())
    while True:
        probe.write_bytes(b"x")
        if probe.stat().st_mtime_ns > newest:
            return


def settle(store: FileStore, uid: str, sdir: Path, probe: Path) -> None:
    """One writable open and close: it checks every link and records them in TAIL."""
    tick_past(sdir, probe)
    with store.writer(uid):
        pass
    tick_past(sdir, probe)


def sealed_names(sdir: Path) -> set[str]:
    return {p.name for p in segments(sdir)[:-1]}


def test_a_second_writable_open_reads_no_sealed_segment(tmp_path: Path) -> None:
    fs = ReadCountingFileSystem()
    store, uid, sdir = long_session(tmp_path / "home", fs)
    settle(store, uid, sdir, tmp_path / "probe")
    assert "sealed" in json.loads((sdir / "TAIL").read_bytes())
    sealed, tail = sealed_names(sdir), segments(sdir)[-1].name
    fs.touched.clear()
    with store.writer(uid) as writer:
        writer.append([event(999)])
    read = set(fs.touched)
    assert read & sealed == set(), read
    assert tail in read  # the tail is read, as always
    store.close()


def test_a_fork_also_reads_no_sealed_segment(tmp_path: Path) -> None:
    fs = ReadCountingFileSystem()
    store, uid, sdir = long_session(tmp_path / "home", fs)
    settle(store, uid, sdir, tmp_path / "probe")
    head = store.get(uid).last_seq
    fs.touched.clear()
    (child,) = store.fork(uid, head, [SessionMeta(uid=new_uid())])
    # a fork's own get() is a read-only open: it reads the last SEAL (O(1)), as every open
    assert set(fs.touched) & sealed_names(sdir) <= {segments(sdir)[-2].name}
    assert child.last_seq == head + 1  # the fork marker
    store.close()


def test_segments_sealed_since_the_last_open_are_the_only_ones_read(tmp_path: Path) -> None:
    fs = ReadCountingFileSystem()
    store, uid, sdir = long_session(tmp_path / "home", fs)
    settle(store, uid, sdir, tmp_path / "probe")
    before = sealed_names(sdir)
    with store.writer(uid) as writer:  # rotates at least once: new sealed segments
        for c in range(12):
            writer.append([event(500 + c), event(600 + c)])
    new = sealed_names(sdir) - before
    assert new
    tick_past(sdir, tmp_path / "probe")
    fs.touched.clear()
    with store.writer(uid):
        pass
    read = set(fs.touched) & sealed_names(sdir)
    # the new ones, and at most the one before them (its SEAL links to the first new one)
    assert new <= read and len(read - new) <= 1, read
    fs.touched.clear()
    tick_past(sdir, tmp_path / "probe")
    with store.writer(uid):  # and then they are recorded too
        pass
    assert set(fs.touched) & sealed_names(sdir) == set()
    store.close()


def test_an_old_hint_without_the_record_means_a_full_check(tmp_path: Path) -> None:
    fs = ReadCountingFileSystem()
    store, uid, sdir = long_session(tmp_path / "home", fs)
    settle(store, uid, sdir, tmp_path / "probe")
    for value in (None, {"files": "junk"}, {"files": [[1, "zst"]], "link": [0, ""]}):
        hint = json.loads((sdir / "TAIL").read_bytes())
        if value is None:
            del hint["sealed"]  # as a writer before this record wrote it
        else:
            hint["sealed"] = value  # malformed: ignored, the rest of the hint still used
        (sdir / "TAIL").write_bytes(json.dumps(hint).encode())
        tick_past(sdir, tmp_path / "probe")
        fs.touched.clear()
        with store.writer(uid):
            pass
        assert sealed_names(sdir) <= set(fs.touched), value
    store.close()


def test_a_record_counts_only_for_files_changed_before_the_hint_was_written() -> None:
    file = (1, "zst", 100, 7, 1_000, 2_000)
    links = CheckedLinks((file,), (10, "ab" * 32), written_ns=2_001)
    assert links.trusts(0, file)
    assert not links.trusts(1, file)  # a position the record does not cover
    assert not links.trusts(0, None)  # a file that cannot be stat'ed
    for changed in ((1, "seg", *file[2:]), (1, "zst", 101, *file[3:]), (*file[:3], 8, *file[4:]),
                    (*file[:4], 1_001, 2_000), (*file[:5], 2_001)):  # fmt: skip
        assert not links.trusts(0, changed), changed
    # ctime in the hint's own clock tick: a later same-tick change could look identical
    assert not CheckedLinks((file,), (10, "ab" * 32), written_ns=2_000).trusts(0, file)
    assert not CheckedLinks((file,), (10, "ab" * 32)).trusts(0, file)  # never read from a file
    back = CheckedLinks.from_json(json.loads(json.dumps(links.to_json())), 2_001)
    assert back == links


# -- damage made between two opens --------------------------------------------------------
def _empty(sdir: Path) -> None:
    segments(sdir)[1].write_bytes(b"")


def _swap(sdir: Path) -> None:
    a, b = segments(sdir)[1:3]
    raw_a, raw_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(raw_b)
    b.write_bytes(raw_a)


def _delete(sdir: Path) -> None:
    segments(sdir)[1].unlink()


def _overwrite_same_size(sdir: Path) -> None:
    """Same inode, same size, a new mtime: another segment_no in the seek table's copy of
    the header (FORMAT.md 7: meta, then the 48-byte footer whose bytes [8, 12) are meta_len)."""
    seg = segments(sdir)[2]
    st = seg.stat()
    raw = bytearray(seg.read_bytes())
    meta_len = int.from_bytes(raw[-48 + 8 : -48 + 12], "little")
    raw[len(raw) - 48 - meta_len + 40] ^= 0x01
    with seg.open("r+b") as f:  # in place: the inode stays
        f.write(bytes(raw))
    os.utime(seg, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert (seg.stat().st_size, seg.stat().st_ino) == (st.st_size, st.st_ino)


def _cut_last_sealed(sdir: Path) -> None:
    seg = segments(sdir)[-2]
    os.truncate(seg, seg.stat().st_size - 100)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "emptied": _empty,
    "swapped": _swap,
    "deleted": _delete,
    "overwritten-same-size": _overwrite_same_size,
    "last-sealed-cut": _cut_last_sealed,
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damage_between_two_opens_is_refused_by_the_second(name: str, tmp_path: Path) -> None:
    store, uid, sdir = long_session(tmp_path / "home", FileSystem())
    settle(store, uid, sdir, tmp_path / "probe")
    DAMAGE[name](sdir)
    before = snapshot(sdir)
    with pytest.raises(JournalCorruptError) as info:
        store.writer(uid)
    assert info.value.exit_code == 8
    assert snapshot(sdir) == before  # refused before recovery changed anything
    store.close()


BELOW_THE_FENCE_HEAD = {
    "tail-cut-at-group-no-hint",
    "flip-in-last-frame-no-hint",
    "tail-segment-deleted-no-hint",
}


@pytest.mark.parametrize("row", list(ROWS))
def test_every_damage_row_is_seen_the_same_with_a_recorded_hint(row: str, tmp_path: Path) -> None:
    """docs/FORMAT.md's table holds when the hint vouches for the sealed segments too.

    ``settle``'s writer open also recorded the final head in the FENCE, so damage that the
    TAIL hint's loss hides in the table's sample (one writer wrote every commit) lies below
    that head here: it is refused, and the writer that would reuse the lost seqs is too."""
    store, uid, sdir = long_session(tmp_path / "home", FileSystem())
    settle(store, uid, sdir, tmp_path / "probe")
    assert "sealed" in json.loads((sdir / "TAIL").read_bytes())
    damage, want = ROWS[row]
    if row == "seqs-reused-after-cut":
        with pytest.raises(AcknowledgedDataMissingError, match="FENCE head"):
            damage(store, uid, sdir)
        store.close()
        return
    want = REFUSED if row in BELOW_THE_FENCE_HEAD else want
    damage(store, uid, sdir)
    before = snapshot(sdir)
    seen = outcome(store, uid, sdir)
    assert seen == want, seen
    if seen.writer:
        assert snapshot(sdir) == before
    shutil.rmtree(tmp_path / "home", ignore_errors=True)
