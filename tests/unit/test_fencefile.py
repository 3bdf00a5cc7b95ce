"""The FENCE file: minted in place, two slots, a torn mint never loses the previous fence."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsessions.errors import JournalCorruptError
from agentsessions.journal.format import fencefile
from agentsessions.journal.format.durable import CrashFileSystem, FileSystem, SimulatedCrash
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_component_dir, verify_dir
from agentsessions.v1 import construct


def test_mints_increase_and_alternate_slots(tmp_path: Path) -> None:
    path = tmp_path / "FENCE"
    assert fencefile.read(path) == 0
    fs = FileSystem()
    assert [fencefile.mint(fs, path) for _ in range(4)] == [1, 2, 3, 4]
    raw = path.read_bytes()
    n = fencefile.SLOT_BYTES
    assert len(raw) == 2 * n
    assert {raw[:n], raw[n:]} == {fencefile.encode_slot(3), fencefile.encode_slot(4)}
    assert fencefile.read(path) == 4
    assert fencefile.mint(fs, path, floor=10) == 11  # above what the journal has seen too


def test_each_mint_records_the_head_its_writer_opened_on(tmp_path: Path) -> None:
    path = tmp_path / "FENCE"
    fs = FileSystem()
    first = fencefile.Head(5, "ab" * 32, 1, 900)
    fencefile.mint(fs, path, head=first)
    assert fencefile.read_fence(path) == fencefile.Fence(1, first)
    later = fencefile.Head(9, "cd" * 32, 7, 128)
    fencefile.mint(fs, path, head=later)
    found = fencefile.read_fence(path)
    assert found == fencefile.Fence(2, later)
    (claim,) = found.evidence()
    assert (claim.seq, claim.hash, claim.segment, claim.frame) == (9, "cd" * 32, 7, 128)
    assert claim.source == fencefile.SOURCE
    fencefile.mint(fs, path)  # an empty journal's writer: no claim
    assert fencefile.read_fence(path) == fencefile.Fence(3, fencefile.Head(0, "", 0, -1))
    assert fencefile.read_fence(path).evidence() == ()  # type: ignore[union-attr]


@pytest.mark.parametrize("slots", [1, 2])
def test_an_older_file_is_read_and_replaced_by_its_next_mint(tmp_path: Path, slots: int) -> None:
    """The layout before the head: 16-byte slots, one or two (fence, no evidence)."""
    path = tmp_path / "FENCE"
    path.write_bytes(b"".join(fencefile.encode_old_slot(7 - i) for i in range(slots)))
    assert fencefile.read(path) == 7
    assert fencefile.read_fence(path) == fencefile.Fence(7)
    assert fencefile.read_fence(path).evidence() == ()  # type: ignore[union-attr]
    head = fencefile.Head(3, "ef" * 32, 1, 400)
    assert fencefile.mint(FileSystem(), path, head=head) == 8
    assert path.read_bytes() == fencefile.encode_slot(8, head)  # one slot of the new layout
    assert fencefile.mint(FileSystem(), path) == 9
    assert fencefile.read(path) == 9 and len(path.read_bytes()) == 2 * fencefile.SLOT_BYTES


def test_a_one_slot_file_is_read_and_minted(tmp_path: Path) -> None:
    path = tmp_path / "FENCE"
    path.write_bytes(fencefile.encode_slot(7))
    assert fencefile.read(path) == 7
    assert fencefile.mint(FileSystem(), path) == 8
    n = fencefile.SLOT_BYTES
    assert path.read_bytes()[:n] == fencefile.encode_slot(7)  # the old slot is kept
    assert fencefile.read(path) == 8


def test_a_torn_slot_leaves_the_previous_fence(tmp_path: Path) -> None:
    path = tmp_path / "FENCE"
    fs = FileSystem()
    for _ in range(3):
        fencefile.mint(fs, path)
    raw = bytearray(path.read_bytes())
    n = fencefile.SLOT_BYTES
    newest = 0 if raw[:n] == fencefile.encode_slot(3) else n
    raw[newest + 9] ^= 0xFF  # the slot of fence 3 torn
    path.write_bytes(bytes(raw))
    assert fencefile.read(path) == 2
    assert fencefile.mint(fs, path) == 3  # rewrites the torn slot, keeps fence 2's
    assert fencefile.read(path) == 3


@pytest.mark.parametrize(
    "raw", [b"", b"junk", bytes(16), bytes(32), b"x" * 48, bytes(72), bytes(144), b"x" * 200]
)
def test_a_file_with_no_valid_slot_is_refused(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "FENCE"
    path.write_bytes(raw)
    with pytest.raises(JournalCorruptError, match="damaged fence file") as caught:
        fencefile.read(path)
    assert caught.value.exit_code == 8 and caught.value.fields["path"] == str(path)
    with pytest.raises(JournalCorruptError):
        fencefile.mint(FileSystem(), path)
    assert path.read_bytes() == raw  # refused, not repaired by guessing


@settings(max_examples=60, deadline=None)
@given(mints=st.integers(1, 5), seed=st.integers(0, 2**32 - 1), at=st.integers(1, 4))
def test_power_loss_during_a_mint_keeps_a_fence_at_least_the_last_acknowledged(
    tmp_path_factory: pytest.TempPathFactory, mints: int, seed: int, at: int
) -> None:
    path = tmp_path_factory.mktemp("fence") / "FENCE"
    fs = CrashFileSystem()
    for _ in range(mints):
        fencefile.mint(fs, path)
    fs.crash_at_op = len(fs.ops) + at  # somewhere inside the next mint
    try:
        fencefile.mint(fs, path)
        acknowledged = mints + 1
    except SimulatedCrash:
        acknowledged = mints
    fs.crash(random.Random(seed))
    assert fencefile.read(path) in (acknowledged, mints + 1)
    assert fencefile.mint(FileSystem(), path) == fencefile.read(path)
    assert fencefile.read(path) > acknowledged


def test_verify_reports_a_damaged_fence_of_a_session_and_of_a_tool_store(
    tmp_path: Path,
) -> None:
    store = FileStore(tmp_path / "home")
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as w:
        w.append(
            [construct.output_event(construct.text_message("assistant", "m"), execution_id="e")]
        )
    sdir = store.session_dir(uid)
    assert verify_dir(sdir).ok
    (sdir / "FENCE").write_bytes(b"AGSF" + bytes(12))
    report = verify_dir(sdir)
    assert (report.ok, report.kind, report.exit_code) == (False, "corrupt", 8)
    assert "damaged fence file" in report.reason and report.last_seq == 1
    with pytest.raises(JournalCorruptError, match="damaged fence file"):
        store.writer(uid)
    part = store.component(uid, "notes")
    with part.writer() as w:
        w.append([construct.output_event(construct.text_message("tool", "n"), execution_id="e")])
    assert verify_component_dir(part.path, uid).ok
    (part.path / "FENCE").write_bytes(bytes(16))
    assert verify_component_dir(part.path, uid).kind == "corrupt"
    store.close()


def say(i: int) -> dict[str, object]:
    return construct.output_event(construct.text_message("assistant", f"m{i}"), execution_id="e")


def test_a_writer_records_the_head_its_open_proved_not_the_scanned_end(tmp_path: Path) -> None:
    """Groups past the TAIL hint may be a killed writer's whose sync never returned (still
    in the page cache): the FENCE names the hint's head (or its own older one), never them."""
    store = FileStore(tmp_path / "home")
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as w:
        w.append([say(1)])
        w.append([say(2)])
    sdir = store.session_dir(uid)
    hint = (sdir / "TAIL").read_bytes()  # names seq 2
    with store.writer(uid) as w:
        w.append([say(3)])
    (sdir / "TAIL").write_bytes(hint)  # as if the writer of seq 3 was killed before its close
    with store.writer(uid):
        pass
    found = fencefile.read_fence(sdir / "FENCE")
    assert found is not None and found.head is not None
    assert found.head.last_seq == 2
    (sdir / "TAIL").unlink()
    with store.writer(uid):  # no hint: the FENCE's own head is carried, not the end (3)
        pass
    carried = fencefile.read_fence(sdir / "FENCE")
    assert carried is not None and carried.head == found.head
    store.close()
