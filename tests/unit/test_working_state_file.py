"""Working state in the file store: atomic with its entries under crashes and torn writes,
found without reading history, and checked by every reader and by ``verify``.

The contract suite (tests/contract/test_store_contract.py) holds the promises every store
keeps; these are the file format's own: a STATE frame leads its commit group, so a crash or
a cut at any byte leaves both the state and its entries or neither; the frame is bound to
the chain head it follows, so one moved elsewhere is refused; a flipped byte or a cut in it
fails ``verify`` (fast and strict) as one in an event frame does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsessions.errors import FormatError, JournalCorruptError
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import staterecord
from agentsessions.journal.format.durable import CrashFileSystem, FileSystem, SimulatedCrash
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file.sessiondir import HINT_SUM, hint_sum
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, StateUpdate, new_uid
from agentsessions.journal.stores.tail import Tail
from agentsessions.journal.tools.verify import verify_session
from agentsessions.v1 import construct

SMALL = 8 * 1024


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _store(home: Path, fs: FileSystem | None = None) -> FileStore:
    options = StoreOptions(segment_max_bytes=SMALL)
    return (
        FileStore(home, options=options) if fs is None else FileStore(home, options=options, fs=fs)
    )


def _session(home: Path, fs: FileSystem | None = None) -> tuple[FileStore, str]:
    store = _store(home, fs)
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    return store, uid


def _tail_file(store: FileStore, uid: str) -> Path:
    journal = store.session_dir(uid) / "journal"
    return sorted(p for p in journal.iterdir() if p.name.endswith(".seg"))[-1]


def _state_frames(path: Path) -> list[sg.Frame]:
    raw = path.read_bytes()
    first = int(path.name[:16], 16)
    s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first)
    return [f for f in s.frames if f.rtype == sg.RTYPE_STATE]


def _both_or_neither(store: FileStore, uid: str, base_seq: int) -> tuple[int, int]:
    head, version = store.get(uid).last_seq, store.state(uid).version
    assert (head, version) in ((base_seq, 1), (base_seq + 2, 2)), (head, version)
    with store.writer(uid) as w:  # and the session goes on
        w.append([_say("after")], state=StateUpdate(b"after"), expected_state_version=version)
    return head, version


def test_a_crash_at_any_step_of_a_stateful_commit_keeps_both_or_neither(tmp_path: Path) -> None:
    probe = CrashFileSystem()
    store, uid = _session(tmp_path / "probe", probe)
    with store.writer(uid) as w:
        w.append([_say("a")], state=StateUpdate(b"v1"))
        before = len(probe.ops)
        w.append([_say("b"), _say("c")], state=StateUpdate(b"v2"))
        steps = len(probe.ops) - before
    assert steps >= 2  # the write and its sync, at least
    seen = set()
    for k in range(1, steps + 1):
        fs = CrashFileSystem()
        store, uid = _session(tmp_path / f"k{k}", fs)
        w = store.writer(uid)
        w.append([_say("a")], state=StateUpdate(b"v1"))
        fs.crash_at_op = len(fs.ops) + k
        with pytest.raises(SimulatedCrash):
            w.append([_say("b"), _say("c")], state=StateUpdate(b"v2"))
        fs.crash()  # power loss: what was not synced is gone
        w._lock.release()
        seen.add(_both_or_neither(_store(tmp_path / f"k{k}"), uid, 1))
    assert (1, 1) in seen


def test_an_unsynced_stateful_commit_is_lost_whole_on_power_loss(tmp_path: Path) -> None:
    fs = CrashFileSystem()
    store, uid = _session(tmp_path, fs)
    w = store.writer(uid)
    w.append([_say("a")], state=StateUpdate(b"v1"))
    w.append([_say("b"), _say("c")], state=StateUpdate(b"v2"), sync=False)
    fs.crash()
    w._lock.release()
    assert _both_or_neither(_store(tmp_path), uid, 1) == (1, 1)


def test_a_cut_at_any_byte_of_the_last_group_keeps_both_or_neither(tmp_path: Path) -> None:
    store, uid = _session(tmp_path / "src")
    with store.writer(uid) as w:
        w.append([_say("a")], state=StateUpdate(b"v1"))
        start = store_position(w)
        w.append([_say("b"), _say("c")], state=StateUpdate(b"v2" * 40), commit_id="c2")
        end = store_position(w)
    sdir = store.session_dir(uid)
    raw = _tail_file(store, uid).read_bytes()
    seen = set()
    for cut in range(start, end + 1, 8):
        home = tmp_path / f"cut{cut}"
        shutil.copytree(sdir, home / "sessions" / uid)
        (home / "sessions" / uid / "TAIL").unlink()  # no evidence: a torn, unacked write
        tail = home / "sessions" / uid / "journal" / _tail_file(store, uid).name
        tail.write_bytes(raw[:cut])
        fresh = _store(home)
        fresh.reindex()
        seen.add(_both_or_neither(fresh, uid, 1))
    assert seen == {(1, 1), (3, 2)}


def store_position(w: Any) -> int:
    return int(w._log.position.offset)


def _journal_with_states(tmp_path: Path, commits: int = 30) -> tuple[FileStore, str]:
    store, uid = _session(tmp_path)
    with store.writer(uid) as w:
        for i in range(commits):
            state = StateUpdate(b"state %d " % i * 20) if i % 3 == 0 else None
            w.append([_say(f"m{i} " + "x" * 300)], state=state)
    return store, uid


@pytest.mark.parametrize("strict", [False, True])
def test_verify_finds_a_flipped_byte_in_a_state_frame(tmp_path: Path, strict: bool) -> None:
    store, uid = _journal_with_states(tmp_path)
    assert verify_session(store, uid, strict=strict).ok
    tail = _tail_file(store, uid)
    frame = _state_frames(tail)[0]
    raw = bytearray(tail.read_bytes())
    raw[frame.offset + sg.FRAME_HEADER_SIZE + 20] ^= 0x40  # inside its meta
    tail.write_bytes(bytes(raw))
    report = verify_session(store, uid, strict=strict)
    assert not report.ok and report.exit_code == 8


def test_a_cut_inside_the_latest_state_frame_is_refused_with_the_hint(tmp_path: Path) -> None:
    store, uid = _session(tmp_path)
    with store.writer(uid) as w:
        w.append([_say("a")])
        w.append((), state=StateUpdate(b"s" * 500))
    tail = _tail_file(store, uid)
    frame = _state_frames(tail)[-1]
    with open(tail, "r+b") as f:
        f.truncate(frame.offset + 100)
    assert verify_session(store, uid).exit_code == 8
    for _ in range(2):  # a writer's recovery cuts the torn bytes, and still refuses
        with pytest.raises(JournalCorruptError, match="version 1 was acknowledged"):
            store.get(uid)
        with pytest.raises(JournalCorruptError, match="version 1 was acknowledged"):
            store.writer(uid)


def test_a_state_frame_bound_elsewhere_is_refused(tmp_path: Path) -> None:
    store, uid = _session(tmp_path)
    with store.writer(uid) as w:
        w.append([_say("a")])
        w.append([_say("b")])
    sdir = store.session_dir(uid)
    # a well-formed, CRC-valid STATE frame naming another chain head (a copy from elsewhere)
    moved = staterecord.encode(staterecord.StateRecord(1, b"x", 1, 2, "h", 1, 2, "ab" * 32, None))
    after = _envelope_after(store, uid)
    log, _ = SegmentLog.open(sdir / "journal", session_id=uid, writable=True)
    log.append_group([(sg.RTYPE_STATE, 3, 1, moved)], carry=dict)
    log.append_group([(sg.RTYPE_EVENT, 3, 1, after)], carry=dict)
    log.close()
    (sdir / "TAIL").unlink()
    for strict in (False, True):
        report = verify_session(store, uid, strict=strict)
        assert not report.ok and report.exit_code == 8 and "STATE" in report.reason
    with pytest.raises(JournalCorruptError, match="bound"):
        store.writer(uid)


def _envelope_after(store: FileStore, uid: str) -> bytes:
    from agentsessions.journal.format import canonical

    head = store.get(uid)
    return canonical.envelope(
        canonical.canonical_json(_say("c")), head.last_hash, head.last_seq + 1
    )


def test_a_tail_hint_from_before_working_state_reads_as_version_zero() -> None:
    old = {"last_seq": 3, "last_hash": "ab" * 32, "projection": None, "max_fence": 2,
           "commits": [["c1", 1, 3, "ab" * 32, 2]]}  # fmt: skip
    tail = Tail.from_json(old)
    assert tail.state.version == 0 and tail.commits["c1"].state_version == 0
    assert "state" not in tail.to_json()


def test_a_hint_naming_a_newer_state_than_the_journal_holds_is_refused(tmp_path: Path) -> None:
    store, uid = _session(tmp_path)
    with store.writer(uid) as w:
        w.append([_say("a")], state=StateUpdate(b"v1"))
    hint = store.session_dir(uid) / "TAIL"
    obj = json.loads(hint.read_text())
    obj["tail"]["state"]["version"] = 2  # as if a later state commit had been lost
    obj[HINT_SUM] = hint_sum(obj)  # a whole hint a writer wrote, not a damaged one
    hint.write_text(json.dumps(obj))
    with pytest.raises(JournalCorruptError, match="version 1, not 2"):
        store.writer(uid)


class _CountingFS(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def read_at(self, fd: int, n: int, offset: int) -> bytes:
        out = super().read_at(fd, n, offset)
        self.read += len(out)
        return out


def test_opening_a_writer_reads_one_state_frame_not_history(tmp_path: Path) -> None:
    store, uid = _session(tmp_path)
    with store.writer(uid) as w:
        w.append([_say("first")], state=StateUpdate(b"remember me" * 10))
        for i in range(600):  # ~200 KiB: about 25 sealed, compressed segments
            w.append([_say(f"filler {i} " + "y" * 300)])
    journal = store.session_dir(uid) / "journal"
    total = sum(p.stat().st_size for p in journal.iterdir())
    assert len(list(journal.glob("*.seg.zst"))) >= 20
    store.writer(uid).close()  # this open checks the segments sealed since the last one
    fs = _CountingFS()
    counted = _store(tmp_path, fs)
    with counted.writer(uid) as w:
        assert w.state.data == b"remember me" * 10
    # the tail after the hint, the chunk holding the state frame: not history
    assert fs.read < SMALL < total // 10, (fs.read, total)


META = st.builds(
    staterecord.StateRecord,
    version=st.integers(1, 2**40),
    data=st.binary(max_size=200),
    covers_from=st.integers(0, 2**40),
    covers_to=st.integers(0, 2**40),
    author=st.text(max_size=20),
    time_ns=st.integers(0, 2**63),
    chain_seq=st.integers(0, 2**40),
    chain_hash=st.sampled_from(["", "ab" * 32]),
    prev=st.none()
    | st.tuples(st.integers(1, 2**40), st.integers(128, 2**30), st.integers(1, 2**40)),
)


@settings(max_examples=200, deadline=None)
@given(META, st.data())
def test_the_state_record_codec_round_trips_and_refuses_any_cut(
    record: staterecord.StateRecord, data: st.DataObject
) -> None:
    payload = staterecord.encode(record)
    assert staterecord.decode(payload) == record
    cut = data.draw(st.integers(0, len(payload) - 1))
    with pytest.raises(FormatError):
        staterecord.decode(payload[:cut])
    assert staterecord.binding_problem(payload, record.chain_seq + 1, record.chain_hash) == ""
    assert staterecord.binding_problem(payload, record.chain_seq + 2, record.chain_hash)


def test_a_state_frame_is_found_in_a_compressed_chunk_that_shares_its_seq(tmp_path: Path) -> None:
    """A state-only group's seq is the next event's, so the next chunk of a .seg.zst may
    start with the same seq: the frame is found by its offset, not by seq."""
    store = FileStore(tmp_path, options=StoreOptions(segment_max_bytes=2 << 20))
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    big = bytes(range(256)) * (1100 * 4)  # ~1.1 MB: the next group starts a new chunk
    with store.writer(uid) as w:
        w.append([_say("a")])
        w.append((), state=StateUpdate(big))
        for i in range(12):  # past the 2 MiB segment: sealed and compressed
            w.append([_say(f"{i} " + "z" * 100_000)])
    journal = store.session_dir(uid) / "journal"
    assert (journal / f"{1:016x}.seg.zst").exists()
    with store.writer(uid) as w:
        assert w.state.version == 1 and w.state.data == big
    assert store.state(uid, 3).data == big and verify_session(store, uid).ok


def test_a_writer_names_each_state_frame_where_it_wrote_it(tmp_path: Path) -> None:
    """The writer's tail points at the STATE frame it just wrote (after the group's COMMIT
    frame when the commit has an id), so an open finds it without a scan: the same place a
    scan of the segment finds it, for every shape of a stateful commit."""
    store, uid = _session(tmp_path)
    with store.writer(uid) as w:
        shapes = [
            {"events": [_say("a")], "commit_id": "with-id-and-events"},
            {"events": [], "commit_id": "state-only-with-id"},
            {"events": [_say("b"), _say("c")], "commit_id": None},
            {"events": [], "commit_id": None},
        ]
        for i, shape in enumerate(shapes):
            w.append(shape["events"], commit_id=shape["commit_id"],  # type: ignore[arg-type]
                     state=StateUpdate(b"s%d" % i))  # fmt: skip
            path = _tail_file(store, uid)
            frame = _state_frames(path)[-1]
            assert w._tail.state_at == (frame.segment, frame.offset, frame.seq), shape
    with store.writer(uid) as w:  # and an open reads that frame's bytes
        assert w.state.data == b"s3"
