"""Property: damage confined to the last, unsynced group always recovers to a group prefix.

For any sequence of groups, and any truncation point or zeroed range inside the last group
(or a simulated power loss that keeps a random subset of its unsynced sectors, with the
group written over free space), a writable open returns exactly the groups before it (or
all of them if the damage changed nothing), keeps the torn bytes in the sidecar, and the
log accepts and returns new appends. Zero bytes after the last commit are free space, never
a tear; any other byte there is cut.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentlog
from agentsessions.journal.format.durable import CrashFileSystem, FileSystem, SimulatedCrash
from agentsessions.journal.format.segmentlog import SegmentLog

SID = "sess-aaaaaaaaaaaaaaaaaaaaaaaa"
GROUPS = st.lists(st.tuples(st.integers(1, 5), st.booleans(), st.integers(10, 400)),
                  min_size=1, max_size=8)  # fmt: skip
"""Each group: (event count, led by a COMMIT frame, payload size)."""


def _frames(seq: int, n: int, commit: bool, size: int) -> list[tuple[int, int, int, bytes]]:
    out = [(sg.RTYPE_COMMIT, seq, 3, b"c-%d" % seq)] if commit else []
    for s in range(seq, seq + n):
        out.append((sg.RTYPE_EVENT, s, 3, json.dumps({"seq": s, "p": "q" * size}).encode()))
    return out


def _write(
    d: Path, groups: list[tuple[int, bool, int]], fs: FileSystem, max_bytes: int
) -> tuple[int, int]:
    """Create a log in ``d`` and append ``groups``; return the ops before the last append
    and the commit end after it (in the tail segment)."""
    d.mkdir()
    SegmentLog.create(d, session_id=SID, fs=fs)
    log, _ = SegmentLog.open(d, session_id=SID, writable=True, fs=fs, segment_max_bytes=max_bytes)
    ops_before_last = 0
    for i, (n, commit, size) in enumerate(groups):
        if i == len(groups) - 1 and isinstance(fs, CrashFileSystem):
            ops_before_last = len(fs.ops)
        log.append_group(_frames(log.position.last_seq + 1, n, commit, size), carry=dict)
    end = log.position.offset
    log.close()
    return ops_before_last, end


def _check_reopen(d: Path, want: list[int]) -> None:
    """A writable open yields exactly ``want``; appending afterwards works and reads back."""
    log, scan = SegmentLog.open(d, session_id=SID, writable=True)
    frames = list(log.read())
    assert [f.seq for f in frames] == want
    nxt = log.position.last_seq + 1
    log.append_group(_frames(nxt, 2, True, 30), carry=dict)
    assert [f.seq for f in log.read()] == [*want, nxt, nxt + 1]
    log.close()
    log, scan = SegmentLog.open(d, session_id=SID, writable=True)
    assert scan.recovery is None and log.position.last_seq == nxt + 1
    assert sum(1 for _ in log.frames()) >= len(want)
    log.close()


def _assert_sidecar(sidecar: bytes, tail: bytes) -> None:
    """The sidecar is ``tail`` up to its last non-zero byte (or the padding of a last whole
    frame); what follows it in ``tail`` is zeros (free space or lost sectors)."""
    kept = len(tail.rstrip(b"\x00"))
    assert kept <= len(sidecar) < kept + 8 and sidecar == tail[: len(sidecar)]
    assert tail[len(sidecar) :] == bytes(len(tail) - len(sidecar))


@settings(max_examples=150, deadline=None)
@given(groups=GROUPS, data=st.data())
def test_cut_or_zeroed_range_in_the_last_group(
    groups: list[tuple[int, bool, int]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "journal"
        _write(d, groups[:-1], FileSystem(), 16 << 20)
        seg = d / sg.segment_name(1)
        log, _ = SegmentLog.open(d, session_id=SID, writable=True)
        start = log.position.offset  # the commit end before the last group
        n, commit, size = groups[-1]
        log.append_group(_frames(log.position.last_seq + 1, n, commit, size), carry=dict)
        end = log.position.offset
        log.close()
        raw = seg.read_bytes()
        assert len(raw) >= end and raw[end:] == bytes(len(raw) - end)  # free space is zeros
        if data.draw(st.booleans(), label="truncate"):
            damaged = raw[: data.draw(st.integers(start, len(raw)), label="cut")]
        else:
            a = data.draw(st.integers(start, end - 1), label="zero_from")
            b = data.draw(st.integers(a + 1, min(end, a + 600)), label="zero_to")
            damaged = raw[:a] + bytes(b - a) + raw[b:]
        seg.write_bytes(damaged)
        total = sum(g[0] for g in groups)
        intact = damaged[start:end] == raw[start:end]
        want = list(range(1, (total if intact else total - n) + 1))
        log, scan = SegmentLog.open(d, session_id=SID, writable=True)
        assert [f.seq for f in scan.frames if f.rtype == sg.RTYPE_EVENT] == want
        if not intact and damaged[start:].strip(b"\x00"):
            assert scan.recovery is not None and scan.recovery.cut
            sidecar = Path(scan.recovery.sidecar).read_bytes()
            assert scan.recovery.truncated_bytes == len(sidecar)
            _assert_sidecar(sidecar, damaged[start:])
            assert seg.stat().st_size == start
        else:  # intact, or every byte of the group lost: only free space follows the commit
            assert scan.recovery is None
            assert seg.read_bytes() == damaged  # nothing to cut: not one byte changed
        log.close()
        _check_reopen(d, want)


@settings(max_examples=50, deadline=None)
@given(groups=GROUPS, junk=st.binary(min_size=1, max_size=64), data=st.data())
def test_a_non_zero_byte_in_free_space_is_a_torn_tail(
    groups: list[tuple[int, bool, int]], junk: bytes, data: st.DataObject
) -> None:
    """Free space must be all zeros: junk after the last commit is cut, never read as data."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "journal"
        _write(d, groups, FileSystem(), 16 << 20)
        seg = d / sg.segment_name(1)
        raw = seg.read_bytes()
        log, _ = SegmentLog.open(d, session_id=SID, writable=False)
        end = log.position.offset
        log.close()
        junk = junk if junk.strip(b"\x00") else b"\x01" + junk
        at = data.draw(st.integers(end, len(raw)), label="at")
        damaged = raw[:at] + junk + raw[at + len(junk) :]
        seg.write_bytes(damaged)
        total = sum(g[0] for g in groups)
        log, scan = SegmentLog.open(d, session_id=SID, writable=True)
        assert log.position.last_seq == total
        assert scan.recovery is not None and scan.recovery.cut
        _assert_sidecar(Path(scan.recovery.sidecar).read_bytes(), damaged[end:])
        log.close()
        _check_reopen(d, list(range(1, total + 1)))


@settings(max_examples=50, deadline=None)
@given(groups=GROUPS, seed=st.integers(0, 2**32 - 1), small=st.booleans())
def test_power_loss_during_the_last_group(
    groups: list[tuple[int, bool, int]], seed: int, small: bool
) -> None:
    max_bytes = 2048 if small else 16 << 20
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(segmentlog, "_now_ms", lambda: 7):
        probe = Path(tmp) / "probe"
        probe_fs = CrashFileSystem()
        before, end = _write(probe, groups, probe_fs, max_bytes)
        last_ops = len(probe_fs.ops) - before
        intended = {p.name: p.read_bytes() for p in probe.iterdir()}
        d = Path(tmp) / "journal"
        fs = CrashFileSystem(crash_at_op=before + last_ops)  # the last group's data sync
        try:
            _write(d, groups, fs, max_bytes)
            raise AssertionError("the simulated crash did not happen")
        except SimulatedCrash:
            pass
        fs.crash(random.Random(seed))
        tail = max(p for p in intended if p.endswith(".seg"))
        # earlier groups were synced; the last one survived if every byte of it did
        survived = (d / tail).read_bytes()[:end] == intended[tail][:end]
        total = sum(g[0] for g in groups)
        want = list(range(1, (total if survived else total - groups[-1][0]) + 1))
        _check_reopen(d, want)
