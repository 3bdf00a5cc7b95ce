"""Damaged store data met through the CLI: ``verify`` names it (exit 8), every writer refuses
it the same way, and the refused command changes no byte of the home."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsessions.journal.format import fencefile
from agentsessions.journal.format import segment as sg
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid

if TYPE_CHECKING:
    from clirun import Cli

Unchanged = Callable[[Path], Callable[[], None]]
EXIT_CORRUPT = 8


def _say(i: int) -> dict[str, Any]:
    text = f"message number {i} " + "x" * 200
    return {"kind": "EVENT_INPUT", "message": {"role": "user", "parts": [{"text": {"text": text}}]}}


def seed(home: Path, commits: int, *, segment_max_bytes: int = 0) -> str:
    """A session of ``commits`` one-event commits (small segments when asked)."""
    options = StoreOptions(segment_max_bytes=segment_max_bytes) if segment_max_bytes else None
    store = FileStore(home, options=options)
    try:
        uid = store.create(SessionMeta(uid=new_uid(), create_time_ns=time.time_ns())).uid
        with store.writer(uid) as writer:
            for i in range(commits):
                writer.append([_say(i)])
    finally:
        store.close()
    return uid


def last_seq(cli: Cli, uid: str) -> int:
    return int(cli.fast("get", uid, "--json").ok().json()["last_seq"])


# --- a fork child whose parent is gone -----------------------------------------------------


def test_a_child_whose_parent_is_gone_is_refused_by_verify_and_by_every_writer(
    cli: Cli, home: Path, unchanged: Unchanged, tmp_path: Path
) -> None:
    parent = cli.fast("exec", "--input", "hi", "--json").ok().json()["uid"]
    child = cli.fast("fork", parent, "--json").ok().json()[0]["uid"]
    shutil.move(home / "sessions" / parent, tmp_path / "elsewhere")
    head = last_seq(cli, child)
    check = unchanged(home)
    run = cli.fast("verify", child).fails(EXIT_CORRUPT)
    assert f"parent session {parent}" in run.err and "seq 1" in run.err, run.err
    cli.fast("verify", str(home / "sessions" / child)).fails(EXIT_CORRUPT)
    run = cli.fast("exec", child, "--input", "again").fails(EXIT_CORRUPT)
    assert f"parent session {parent}" in run.err and "nothing was written" in run.err
    cli.fast("log", child).fails(EXIT_CORRUPT)
    cli.fast("fork", child).fails(EXIT_CORRUPT)
    assert cli.fast("resume", child).code == EXIT_CORRUPT
    check()
    assert last_seq(cli, child) == head
    shutil.move(tmp_path / "elsewhere", home / "sessions" / parent)  # restored: all is well
    cli.fast("verify", child).ok()
    cli.fast("exec", child, "--input", "again").ok()


# --- a sealed segment missing from the middle of a journal ---------------------------------


def test_a_lost_middle_segment_is_named_by_its_first_seq_and_file(
    cli: Cli, home: Path, unchanged: Unchanged
) -> None:
    uid = seed(home, 60, segment_max_bytes=4096)
    journal = home / "sessions" / uid / "journal"
    files = sorted(p.name for p in journal.iterdir() if ".seg" in p.name)
    assert len(files) >= 5, files
    victim = files[2]
    first_lost = int(victim[:16], 16)
    (journal / victim).unlink()
    check = unchanged(home)
    for run in (cli.fast("verify", uid), cli.fast("exec", uid, "--input", "more")):
        run.fails(EXIT_CORRUPT)
        assert f"seqs {first_lost}.." in run.err and victim in run.err, run.err
    report = cli.fast("verify", uid, "--json")
    assert report.code == EXIT_CORRUPT and report.json()["first_bad_seq"] == first_lost
    check()


# --- a flipped byte in FENCE ---------------------------------------------------------------


def test_a_damaged_fence_is_corruption_for_verify_and_every_writer(
    cli: Cli, home: Path, unchanged: Unchanged
) -> None:
    uid = cli.fast("exec", "--input", "hi", "--json").ok().json()["uid"]
    other = cli.fast("exec", "--input", "hi", "--json").ok().json()["uid"]
    fence = home / "sessions" / uid / "FENCE"
    raw = bytearray(fence.read_bytes())
    assert len(raw) == fencefile.SLOT_BYTES  # one writer open so far: one slot, no torn mint
    raw[6] ^= 0x01
    fence.write_bytes(bytes(raw))
    check = unchanged(home)
    run = cli.fast("verify", uid).fails(EXIT_CORRUPT)
    assert "damaged fence file" in run.err and str(fence) in run.err, run.err
    assert cli.fast("verify", "--all").code == EXIT_CORRUPT
    cli.fast("verify", str(home / "sessions" / uid)).fails(EXIT_CORRUPT)
    cli.fast("fork", uid).fails(EXIT_CORRUPT)
    cli.fast("resume", uid).fails(EXIT_CORRUPT)
    run = cli.fast("exec", uid, "--input", "more").fails(EXIT_CORRUPT)
    assert "damaged fence file" in run.err and "hint: " in run.err
    rows = {row["uid"]: row for row in cli.fast("list", "--json").ok().json()["sessions"]}
    assert "damaged fence file" in rows[uid]["damaged"] and not rows[other].get("damaged")
    check()
    cli.fast("verify", other).ok()


# --- the TAIL hint lost and the tail cut inside acknowledged data --------------------------


def _group_ends(tail: Path) -> list[int]:
    """The end offset of each committed group of a ``.seg`` tail."""
    first = int(tail.name[:16], 16)
    s = sg.scan(tail.read_bytes(), base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first)
    return [f.end for f in s.frames if f.flags & sg.FLAG_GROUP_END]


def test_a_cut_below_the_head_the_latest_writer_opened_on_is_refused_without_the_hint(
    cli: Cli, home: Path, unchanged: Unchanged
) -> None:
    """The FENCE records the head each writer open found: with TAIL gone, a cut into an
    earlier turn is still found (exit 8), and resume does not rewrite the lost seqs."""
    uid = cli.fast("exec", "--input", "one", "--json").ok().json()["uid"]
    cli.fast("exec", uid, "--input", "two").ok()
    opened_on = last_seq(cli, uid)  # the head the next writer (the third turn) opens on
    cli.fast("exec", uid, "--input", "three").ok()
    head = last_seq(cli, uid)
    sdir = home / "sessions" / uid
    (tail,) = [p for p in (sdir / "journal").iterdir() if p.name.endswith(".seg")]
    ends = _group_ends(tail)
    cut = max(e for e in ends if e < tail.stat().st_size and _seq_at(tail, e) < opened_on)
    os.truncate(tail, cut)
    (sdir / "TAIL").unlink()
    check = unchanged(home)
    run = cli.fast("verify", uid).fails(EXIT_CORRUPT)
    assert f"seq {opened_on} was acknowledged (FENCE head)" in run.err, run.err
    for args in (["resume", uid], ["exec", uid, "--input", "four"]):
        run = cli.fast(*args).fails(EXIT_CORRUPT)
        assert "FENCE head" in run.err, run.err
    check()
    assert opened_on < head


def _seq_at(tail: Path, end: int) -> int:
    """The last seq of the group ending at ``end``."""
    first = int(tail.name[:16], 16)
    s = sg.scan(tail.read_bytes(), base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first)
    return max(f.seq for f in s.frames if f.end <= end)
