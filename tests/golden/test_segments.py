"""Golden segment fixtures: the encoder reproduces them and the reader classifies each one."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from unittest import mock

import pytest

from agentsessions.errors import JournalCorruptError
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentlog, zstdcodec, zstdseek
from agentsessions.journal.format.segmentlog import SegmentLog

ROOT = Path(__file__).parent / "segments"


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_segment_fixtures", ROOT / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mk = _load_builder()
SID = mk.SID


def _copy(case: str, tmp_path: Path) -> Path:
    dst = tmp_path / case
    shutil.copytree(ROOT / case / "journal", dst)
    return dst


def _tree(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _open(d: Path, writable: bool) -> tuple[SegmentLog, segmentlog.OpenScan]:
    return SegmentLog.open(d, session_id=SID, writable=writable)


@pytest.mark.parametrize("case", mk.CASES)
def test_encoder_reproduces_the_fixture_bytes(case: str) -> None:
    built = mk.build(case)
    on_disk = {p.name: p.read_bytes() for p in (ROOT / case / "journal").iterdir()}
    assert sorted(on_disk) == sorted(
        n + ".zst" if n in mk.COMPRESSED.get(case, []) else n for n in built
    )
    for name, raw in built.items():
        if name not in mk.COMPRESSED.get(case, []):
            assert on_disk[name] == raw, name
            continue
        stored = on_disk[name + ".zst"]
        assert zstdcodec.decompress(stored, 1 << 20) == raw  # `zstd -d` gives the .seg back
        fresh = mk.compress_segment(raw)  # compressed bytes may differ by zstd version
        t_stored, t_fresh = (
            zstdseek.read_seek_table(lambda n, o, b=b: b[o : o + n], len(b))
            for b in (stored, fresh)
        )
        assert t_stored.meta == t_fresh.meta and t_stored.raw_size == len(raw)
        assert [(e.key, e.raw_offset) for e in t_stored.entries] == [
            (e.key, e.raw_offset) for e in t_fresh.entries
        ]
        assert len(t_stored.entries) > 1


def test_segmentlog_writes_the_same_bytes_as_the_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segmentlog, "_now_ms", lambda: mk.T_MS)
    monkeypatch.setattr(zstdcodec, "_backend", "none")  # keep sealed segments plain
    d = tmp_path / "journal"
    d.mkdir()
    SegmentLog.create(d, session_id=SID)
    log, _ = SegmentLog.open(d, session_id=SID, writable=True, segment_max_bytes=mk.MAX_BYTES)
    events = mk.chain(14)
    for group in mk.OK_GROUPS:
        last = log.position.last_seq
        log.append_group(mk.group_frames(group, events), carry=lambda last=last: mk.carry_for(last))
    log.close()
    assert {p.name: p.read_bytes() for p in d.iterdir()} == mk.build("ok")


def test_ok(tmp_path: Path) -> None:
    d = _copy("ok", tmp_path)
    before = _tree(d)
    for writable in (False, True):
        log, scan = _open(d, writable)
        assert scan.recovery is None and not scan.torn_tail
        assert [f.seq for f in scan.frames if f.rtype == sg.RTYPE_EVENT] == [11, 12, 13, 14]
        assert scan.base_carry == mk.carry_for(10)
        assert log.position.last_seq == 14 and log.position.segment == 11
        assert [f.seq for f in log.read()] == list(range(1, 15))
        assert [f.seq for f in log.read(2, 5)] == [2, 3, 4, 5]
        frames = list(log.frames())
        assert [f.seq for f in frames if f.rtype == sg.RTYPE_SEAL] == [3, 7, 10]
        events = mk.chain(14)
        assert all(f.payload == events[f.seq][0] for f in frames if f.rtype == sg.RTYPE_EVENT)
        log.close()
    assert _tree(d) == before


def test_torn_header_is_refused(tmp_path: Path) -> None:
    d = _copy("torn-header", tmp_path)
    before = _tree(d)
    for writable in (False, True):
        with pytest.raises(JournalCorruptError) as info:
            _open(d, writable)
        assert info.value.fields["offset"] == 0
    assert _tree(d) == before


@pytest.mark.parametrize(
    ("case", "last_seq", "dropped"),
    [("torn-payload", 3, (4,)), ("torn-group-intact-end", 1, (2, 4))],
)
def test_torn_tails_are_reported_then_cut(
    tmp_path: Path, case: str, last_seq: int, dropped: tuple[int, ...]
) -> None:
    d = _copy(case, tmp_path)
    seg = d / sg.segment_name(1)
    raw = seg.read_bytes()
    before = _tree(d)
    log, scan = _open(d, writable=False)
    assert scan.torn_tail and scan.recovery is not None and not scan.recovery.cut
    assert scan.recovery.dropped_seqs == dropped and log.position.last_seq == last_seq
    log.close()
    assert _tree(d) == before
    log, scan = _open(d, writable=True)
    r = scan.recovery
    assert r is not None and r.cut and r.dropped_seqs == dropped
    end = log.position.offset
    assert seg.stat().st_size == end and Path(r.sidecar).read_bytes() == raw[end:]
    assert [f.seq for f in log.read()] == list(range(1, last_seq + 1))
    log.close()


def test_bad_crc_mid_is_corruption_and_nothing_changes(tmp_path: Path) -> None:
    d = _copy("bad-crc-mid", tmp_path)
    before = _tree(d)
    offs = mk.frame_offsets(mk.build_log([[1], [2, 3], [4]], 1 << 20)[sg.segment_name(1)])
    for writable in (False, True):
        with pytest.raises(JournalCorruptError) as info:
            _open(d, writable)
        assert info.value.fields["offset"] == offs[2] and info.value.fields["seq"] == 2
    assert _tree(d) == before


def test_sealed_without_successor(tmp_path: Path) -> None:
    d = _copy("sealed-no-successor", tmp_path)
    log, scan = _open(d, writable=False)
    assert scan.recovery is None and log.position.last_seq == 3
    assert [f.seq for f in log.frames() if f.rtype == sg.RTYPE_SEAL] == [3]
    log.close()
    log, scan = _open(d, writable=True)
    events = mk.chain(5)
    with mock.patch.object(segmentlog, "_now_ms", lambda: mk.T_MS):
        log.append_group(mk.group_frames([4, 5], events), carry=dict)
    assert (d / "0000000000000004.seg").exists()
    assert [f.seq for f in log.read()] == [1, 2, 3, 4, 5]
    log.close()


def test_free_space_is_not_a_torn_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _copy("free-space", tmp_path)
    seg = d / sg.segment_name(1)
    end = mk.free_commit_end()
    assert seg.stat().st_size == 4096 and seg.read_bytes()[end:] == bytes(4096 - end)
    before = _tree(d)
    for writable in (False, True):
        log, scan = _open(d, writable)
        assert scan.recovery is None and not scan.torn_tail
        assert log.position.offset == end and [f.seq for f in log.read()] == list(range(1, 7))
        log.close()
    assert _tree(d) == before  # free space is kept, not cut
    # the writer produces these bytes, and appends over the free space without growing
    monkeypatch.setattr(segmentlog, "_now_ms", lambda: mk.T_MS)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    SegmentLog.create(fresh, session_id=SID)
    log, _ = SegmentLog.open(fresh, session_id=SID, writable=True)
    events = mk.chain(8)
    for group in mk.FREE_GROUPS:
        log.append_group(mk.group_frames(group, events), carry=dict)
    assert (fresh / sg.segment_name(1)).read_bytes() == seg.read_bytes()
    log.append_group(mk.group_frames([7, 8], events), carry=dict)
    assert (fresh / sg.segment_name(1)).stat().st_size == 4096
    log.close()


def test_sealed_tail_followed_by_free_space(tmp_path: Path) -> None:
    d = _copy("sealed-free-space", tmp_path)
    seg = d / sg.segment_name(1)
    seal_end = len(mk.build_log([[1, 2], [3]], 1 << 20, seal_last=True)[sg.segment_name(1)])
    before = _tree(d)
    log, scan = _open(d, writable=False)
    assert scan.recovery is None and log.position.last_seq == 3
    assert [f.seq for f in log.frames() if f.rtype == sg.RTYPE_SEAL] == [3]
    log.close()
    assert _tree(d) == before
    log, scan = _open(d, writable=True)  # cuts the free space: a SEAL ends its segment
    assert seg.stat().st_size == seal_end
    events = mk.chain(5)
    with mock.patch.object(segmentlog, "_now_ms", lambda: mk.T_MS):
        log.append_group(mk.group_frames([4, 5], events), carry=dict)
    assert [f.seq for f in log.read()] == [1, 2, 3, 4, 5]
    log.close()
    log, scan = _open(d, writable=False)
    assert [f.seq for f in log.read()] == [1, 2, 3, 4, 5] and scan.recovery is None
    assert [f.seq for f in log.frames() if f.rtype == sg.RTYPE_SEAL] == [3]
    log.close()


def test_torn_group_in_free_space_is_cut_alone(tmp_path: Path) -> None:
    d = _copy("torn-in-free-space", tmp_path)
    seg = d / sg.segment_name(1)
    raw = seg.read_bytes()
    end = mk.free_commit_end()
    log, scan = _open(d, writable=False)
    assert scan.torn_tail and scan.recovery is not None and not scan.recovery.cut
    assert scan.recovery.truncated_bytes == 100 and log.position.offset == end
    log.close()
    log, scan = _open(d, writable=True)
    r = scan.recovery
    assert r is not None and r.cut and r.dropped_seqs == ()
    assert Path(r.sidecar).read_bytes() == raw[end : end + 100]  # the torn bytes, no zeros
    assert seg.stat().st_size == end and [f.seq for f in log.read()] == list(range(1, 7))
    log.close()
