"""The CLI on a journal that lost acknowledged data: every command refuses with exit 8,
naming the missing seqs, and nothing is changed on disk (docs/FORMAT.md section 14)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentsessions.journal.format import segment as sg

if TYPE_CHECKING:
    from clirun import Cli

EXIT_CORRUPT = 8


def chat(cli: Cli, turns: int) -> str:
    """A chat session of ``turns`` turns (one exec each: its writer closes, the hint is current)."""
    run = cli.fast(
        "exec", "--harness", "chat", "--model", "scripted:seed=7", "--input", "t0", "--json"
    )
    uid = str(run.ok().json()["uid"])
    for i in range(1, turns):
        cli.fast("exec", uid, "--input", f"t{i}").ok()
    return uid


def tail_groups(home: Path, uid: str) -> tuple[Path, list[tuple[int, int]]]:
    """The tail segment and ``(end offset, last seq)`` of each of its committed groups."""
    tail = sorted((home / "sessions" / uid / "journal").glob("*.seg"))[-1]
    raw = tail.read_bytes()
    first = int(tail.name[:16], 16)
    s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first)
    return tail, [(f.end, f.seq) for f in s.frames if f.flags & sg.FLAG_GROUP_END]


def files(home: Path, uid: str) -> dict[str, bytes]:
    sdir = home / "sessions" / uid
    return {str(p): p.read_bytes() for p in sdir.rglob("*") if p.is_file() and p.name != "LOCK"}


def test_a_tail_cut_inside_acknowledged_data_is_refused_everywhere(cli: Cli, home: Path) -> None:
    uid = chat(cli, 3)
    tail, groups = tail_groups(home, uid)
    (cut, kept), head = groups[-3], groups[-1][1]
    os.truncate(tail, cut)
    before = files(home, uid)
    line = (
        f"journal ends at seq {kept} but seq {head} was acknowledged (TAIL hint): "
        f"seqs {kept + 1}..{head} are missing or damaged"
    )
    sdir = str(home / "sessions" / uid)
    for args in (
        ("verify", uid),
        ("verify", sdir),
        ("verify", "--all"),
        ("get", uid),
        ("log", uid),
        ("export", uid, "-o", str(home.parent / "out.agx")),
        ("exec", uid, "--input", "again"),
        ("resume", uid),
        ("fork", uid, "--at", "1"),
    ):
        run = cli.fast(*args).fails(EXIT_CORRUPT)
        assert line in run.err, (args, run.err)
    assert files(home, uid) == before  # no recovery cut, no new record
    assert not (home.parent / "out.agx").exists()


def test_a_flip_in_the_last_acknowledged_frame_is_not_a_torn_tail(cli: Cli, home: Path) -> None:
    """Before: verify DIR exited 0 ("a torn, unacknowledged tail was ignored") and the next
    writer cut the group to a sidecar."""
    uid = chat(cli, 2)
    tail, groups = tail_groups(home, uid)
    data = bytearray(tail.read_bytes())
    data[groups[-1][0] - 40] ^= 0x01  # in the payload of the frame the hint names
    tail.write_bytes(bytes(data))
    before = files(home, uid)
    run = cli.fast("verify", str(home / "sessions" / uid)).fails(EXIT_CORRUPT)
    assert "frame CRC mismatch" in run.err and "acknowledged, not torn" in run.err, run.err
    cli.fast("exec", uid, "--input", "again").fails(EXIT_CORRUPT)
    assert files(home, uid) == before
    assert not list(tail.parent.glob("*.torn-*"))
