"""docs/FORMAT.md "What damage is detectable", one test per row, and the table held to them.

Each row damages a sample journal (30 commits, 8 KiB segments: sealed compressed segments
and a tail of several groups) and checks what every reader says: ``verify`` by uid (through
the store) and by session directory, a read-only ``get``, a writer's open (recovery) and a
fork. A refusal is exit 8 (or 9) and changes nothing on disk; the undetectable rows assert
that they are not detected, so the table cannot claim more than the code does.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from needs import need_zstd

from agentsessions.errors import AcknowledgedDataMissingError, AgentSessionsError
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format.segmentread import SEGMENT_NAME
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_dir, verify_session
from agentsessions.v1 import construct

DOC = Path(__file__).resolve().parents[2] / "docs" / "FORMAT.md"
SMALL = 8 * 1024
COMMITS = 30


def event(i: int) -> dict[str, Any]:
    """An OUTPUT event of about 500 bytes."""
    text = f"message {i} " + "lorem ipsum dolor sit amet " * 15
    return construct.output_event(
        construct.text_message("assistant", text), execution_id=f"{i:016x}"
    )


def open_store(home: Path) -> FileStore:
    return FileStore(home, options=StoreOptions(segment_max_bytes=SMALL))


def sample(home: Path, commits: int = COMMITS) -> tuple[FileStore, str]:
    """A session of ``commits`` two-event commits, its writer closed (the TAIL hint current)."""
    store = open_store(home)
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    with store.writer(uid) as writer:
        for c in range(commits):
            writer.append([event(2 * c), event(2 * c + 1)], commit_id=f"c{c}")
    return store, uid


def segments(sdir: Path) -> list[Path]:
    """Segment files of a session in order (the last is the tail)."""
    names = [p for p in (sdir / "journal").iterdir() if SEGMENT_NAME.fullmatch(p.name)]
    return sorted(names)


def group_ends(path: Path) -> list[tuple[int, int, int]]:
    """``(group start, group end, last seq)`` of each committed group of a .seg tail."""
    raw = path.read_bytes()
    first = int(path.name[:16], 16)
    s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first)
    out, start = [], sg.HEADER_SIZE
    for frame in s.frames:
        if frame.flags & sg.FLAG_GROUP_END:
            out.append((start, frame.end, frame.seq))
            start = frame.end
    return out


def flip(path: Path, offset: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0x40
    path.write_bytes(bytes(raw))


def snapshot(sdir: Path) -> dict[str, bytes]:
    """Every file of a session but LOCK (a refused writer still takes the lock)."""
    return {
        str(p.relative_to(sdir)): p.read_bytes()
        for p in sorted(sdir.rglob("*"))
        if p.is_file() and p.name != "LOCK"
    }


@dataclass(frozen=True)
class Seen:
    """What each reader said: 0 ok, else the exit code of the error or failed report."""

    verify: int
    verify_dir: int
    get: int
    writer: int
    fork: int


def outcome(store: FileStore, uid: str, sdir: Path) -> Seen:
    def code(run: Callable[[], object]) -> int:
        try:
            run()
        except AgentSessionsError as exc:
            return exc.exit_code
        return 0

    def write() -> None:
        with store.writer(uid):
            pass

    def fork() -> None:
        children = store.fork(uid, store.get(uid).last_seq, [SessionMeta(uid=new_uid())])
        for child in children:  # leave the home as it was
            shutil.rmtree(store.session_dir(child.uid))

    return Seen(
        verify_session(store, uid).exit_code,
        verify_dir(sdir).exit_code,
        code(lambda: store.get(uid)),
        code(write),
        code(fork),
    )


# -- the rows -----------------------------------------------------------------------------
Damage = Callable[[FileStore, str, Path], None]
REFUSED = Seen(8, 8, 8, 8, 8)
UNDETECTED = Seen(0, 0, 0, 0, 0)
VERIFY_ONLY = Seen(8, 8, 0, 0, 0)  # opens read only after the hint: no seq is reused


def cut_tail_at_group(keep_hint: bool) -> Damage:
    def damage(store: FileStore, uid: str, sdir: Path) -> None:
        tail = segments(sdir)[-1]
        groups = group_ends(tail)
        assert len(groups) >= 3
        os.truncate(tail, groups[-2][1])  # the last acknowledged group is gone, cleanly
        if not keep_hint:
            (sdir / "TAIL").unlink()

    return damage


def next_writer_then(damage: Damage) -> Damage:
    """One more writer (a turn) appends a commit; then ``damage``. That writer's open
    recorded the head it found in the FENCE it minted: evidence the TAIL hint's loss leaves."""

    def run(store: FileStore, uid: str, sdir: Path) -> None:
        with store.writer(uid) as writer:
            writer.append([event(800)], commit_id="next")
        damage(store, uid, sdir)

    return run


def cut_below_the_fence_head(store: FileStore, uid: str, sdir: Path) -> None:
    """The tail cut at a group boundary below the head the latest writer opened on (the
    FENCE's), and the TAIL hint lost."""
    tail = segments(sdir)[-1]
    groups = group_ends(tail)
    assert len(groups) >= 3
    os.truncate(tail, groups[-3][1])  # the latest writer's group and the one before it
    (sdir / "TAIL").unlink()


def flip_last_group(keep_hint: bool, *, last_frame: bool = True) -> Damage:
    """A flipped payload byte in the last group: in its last frame (the one a TAIL hint
    names), or in its first EVENT frame."""

    def damage(store: FileStore, uid: str, sdir: Path) -> None:
        tail = segments(sdir)[-1]
        start, end, _seq = group_ends(tail)[-1]
        flip(tail, end - 40 if last_frame else start + 64)
        if not keep_hint:
            (sdir / "TAIL").unlink()

    return damage


def flip_middle_group(store: FileStore, uid: str, sdir: Path) -> None:
    tail = segments(sdir)[-1]
    groups = group_ends(tail)
    start = groups[len(groups) // 2][0]
    flip(tail, start + sg.FRAME_HEADER_SIZE + 20)


def flip_sealed(store: FileStore, uid: str, sdir: Path) -> None:
    seg = segments(sdir)[1]  # compressed: byte 100 is inside its first chunk's zstd frame
    flip(seg, 100)


def cut_sealed(store: FileStore, uid: str, sdir: Path) -> None:
    seg = segments(sdir)[-2]  # the last sealed segment: its SEAL goes
    os.truncate(seg, seg.stat().st_size - 100)


def empty_middle(store: FileStore, uid: str, sdir: Path) -> None:
    segments(sdir)[1].write_bytes(b"")


def swap_middle(store: FileStore, uid: str, sdir: Path) -> None:
    a, b = segments(sdir)[1:3]
    raw_a, raw_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(raw_b)
    b.write_bytes(raw_a)


def delete_middle(store: FileStore, uid: str, sdir: Path) -> None:
    segments(sdir)[1].unlink()


def delete_tail(keep_hint: bool) -> Damage:
    def damage(store: FileStore, uid: str, sdir: Path) -> None:
        segments(sdir)[-1].unlink()
        if not keep_hint:
            (sdir / "TAIL").unlink()

    return damage


def stale_hint(store: FileStore, uid: str, sdir: Path) -> None:
    """A power loss kept an older TAIL (it is written without fsync) and all the data; the
    commits since rotated, so the hint names a sealed, compressed segment."""
    old = (sdir / "TAIL").read_bytes()
    tail = segments(sdir)[-1]
    with store.writer(uid) as writer:
        for i in range(12):
            writer.append([event(900 + i)])
    assert not tail.exists() and tail.with_name(tail.name + ".zst").exists()
    (sdir / "TAIL").write_bytes(old)


def seqs_reused(store: FileStore, uid: str, sdir: Path) -> None:
    """A cut, then a writer that had no evidence appended new records at the lost seqs;
    the TAIL hint from before the cut survived (restored here)."""
    old = (sdir / "TAIL").read_bytes()
    cut_tail_at_group(keep_hint=False)(store, uid, sdir)
    with store.writer(uid) as writer:
        writer.append([event(901), event(902)])
    (sdir / "TAIL").write_bytes(old)


def torn_unacknowledged(store: FileStore, uid: str, sdir: Path) -> None:
    """A crash in the middle of a write: a group without its GROUP_END after the head."""
    tail = segments(sdir)[-1]
    _start, end, seq = group_ends(tail)[-1]
    frame = sg.encode_frame(sg.RTYPE_EVENT, seq + 1, 1, sg.FLAG_GROUP_START, b"{}" * 40)
    with tail.open("r+b") as f:
        f.seek(end)
        f.write(frame[:-24])


ROWS: dict[str, tuple[Damage, Seen]] = {
    "tail-cut-at-group": (cut_tail_at_group(keep_hint=True), REFUSED),
    "tail-cut-at-group-no-hint": (cut_tail_at_group(keep_hint=False), UNDETECTED),
    "tail-cut-below-fence-head-no-hint": (next_writer_then(cut_below_the_fence_head), REFUSED),
    "flip-in-last-frame": (flip_last_group(keep_hint=True), REFUSED),
    "flip-in-last-frame-no-hint": (flip_last_group(keep_hint=False), UNDETECTED),
    "flip-in-last-group": (flip_last_group(keep_hint=True, last_frame=False), VERIFY_ONLY),
    "flip-in-middle-group": (flip_middle_group, VERIFY_ONLY),
    "flip-in-sealed-segment": (flip_sealed, VERIFY_ONLY),
    "sealed-segment-cut": (cut_sealed, REFUSED),
    "middle-segment-emptied": (empty_middle, Seen(8, 8, 0, 8, 8)),
    "middle-segment-swapped": (swap_middle, Seen(8, 8, 0, 8, 8)),
    "middle-segment-deleted": (delete_middle, REFUSED),
    "tail-segment-deleted": (delete_tail(keep_hint=True), REFUSED),
    "tail-segment-deleted-no-hint": (delete_tail(keep_hint=False), UNDETECTED),
    "stale-hint": (stale_hint, UNDETECTED),
    "seqs-reused-after-cut": (seqs_reused, REFUSED),
    "torn-unacknowledged-tail": (torn_unacknowledged, UNDETECTED),
}


@pytest.fixture(scope="module", autouse=True)
def _needs_zstd() -> None:
    need_zstd()  # the sample's sealed segments are compressed


@pytest.mark.parametrize("row", list(ROWS))
def test_damage_row(row: str, tmp_path: Path) -> None:
    store, uid = sample(tmp_path / "home")
    sdir = store.session_dir(uid)
    assert len(segments(sdir)) >= 4
    damage, want = ROWS[row]
    damage(store, uid, sdir)
    before = snapshot(sdir)
    seen = outcome(store, uid, sdir)
    assert seen == want, seen
    if seen.writer:  # a refused writer (recovery) changed nothing
        assert snapshot(sdir) == before
    store.close()


def test_refusals_name_the_missing_seqs(tmp_path: Path) -> None:
    """The message says where the journal ends, which seq was acknowledged, and by what."""
    store, uid = sample(tmp_path / "home")
    sdir = store.session_dir(uid)
    head = store.get(uid).last_seq
    cut_tail_at_group(keep_hint=True)(store, uid, sdir)
    with pytest.raises(AcknowledgedDataMissingError) as caught:
        store.writer(uid)
    assert f"journal ends at seq {head - 2} but seq {head} was acknowledged (TAIL hint)" in str(
        caught.value
    )
    assert f"seqs {head - 1}..{head} are missing" in str(caught.value)
    report = verify_session(store, uid)
    assert report.first_bad_seq == head - 1 and report.kind == "corrupt"
    store.close()


def test_a_fork_point_is_evidence_for_the_parent(tmp_path: Path) -> None:
    """A child's fork point proves its parent reached that seq: a parent cut below it (its
    own hint lost) fails the child's verify with exit 8, naming the fork point."""
    store, uid = sample(tmp_path / "home")
    sdir = store.session_dir(uid)
    at = store.get(uid).last_seq
    (child,) = store.fork(uid, at, [SessionMeta(uid=new_uid())])
    cut_tail_at_group(keep_hint=False)(store, uid, sdir)
    assert verify_dir(sdir).ok  # the parent alone cannot tell (no evidence left in it)
    report = verify_dir(store.session_dir(child.uid))
    assert report.exit_code == 8 and f"fork point of child {child.uid}" in report.reason
    assert report.first_bad_seq == at - 1
    store.close()


# -- the table in the doc -------------------------------------------------------------------
def doc_rows() -> list[list[str]]:
    text = DOC.read_text()
    at = text.index("<!-- table: damage -->")
    rows = []
    for line in text[at:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if set("".join(cells)) <= set("-: "):
            continue
        rows.append(cells)
    return rows[1:]


def test_the_doc_table_lists_exactly_the_tested_rows() -> None:
    ids = [cells[0].strip("`") for cells in doc_rows()]
    assert ids == list(ROWS)


def test_the_doc_table_states_the_tested_exit_codes() -> None:
    """The "user sees" column names `verify` exits and whether a writer is refused."""
    for cells in doc_rows():
        row, seen = cells[0].strip("`"), ROWS[cells[0].strip("`")][1]
        sees = cells[-1]
        m = re.search(r"verify (\d+)", sees)
        assert m and int(m.group(1)) == seen.verify, row
        assert ("writer refused (8)" in sees) == (seen.writer == 8), row
        if seen == UNDETECTED:
            assert "undetected" in sees.lower(), row
