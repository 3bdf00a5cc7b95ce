"""Acknowledged data is never taken for a torn tail: exhaustive cuts and flips of a sample.

The sample journal has 30 commits and 8 KiB segments (compressed sealed segments and a tail
of several groups), its writer closed, so its TAIL hint names the head. Every cut at a group
boundary of every segment, and a flip of every byte of the tail's last groups and of the
last sealed segment, must be either refused (verify exits 8 or 9; for cuts the store's open
too) or provably outside acknowledged data: the journal still verifies to the same head
(seq and hash). The default run takes every ``STEP``-th byte; ``AGENTSESSIONS_TORTURE`` set
to a positive number takes every byte.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from needs import need_zstd
from test_damage_table import group_ends, sample, segments

from agentsessions.errors import JournalError
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import zstdcodec
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.tools.verify import verify_dir

TORTURE = int(os.environ.get("AGENTSESSIONS_TORTURE", "0")) > 0
STEP = 1 if TORTURE else 23  # a prime, so the sample hits every field of a frame in turn


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FileStore, str, Path]]:
    need_zstd()
    store, uid = sample(tmp_path_factory.mktemp("prop") / "home")
    yield store, uid, store.session_dir(uid)
    store.close()


def _head(sdir: Path) -> tuple[int, str]:
    report = verify_dir(sdir, workers=1)
    assert report.ok, report.reason
    return report.last_seq, report.last_hash


def _refused_or_intact(sdir: Path, head: tuple[int, str], what: str) -> None:
    report = verify_dir(sdir, workers=1)
    if report.ok:
        assert (report.last_seq, report.last_hash) == head, f"{what}: acknowledged data lost"
    else:
        assert report.exit_code in (8, 9), (what, report.exit_code, report.reason)


def _open_refused_or_intact(store: FileStore, uid: str, head: tuple[int, str], what: str) -> None:
    try:
        info = store.get(uid)
    except JournalError as exc:
        assert exc.exit_code in (8, 9), what
        return
    assert (info.last_seq, info.last_hash) == head, f"{what}: open lost acknowledged data"


def test_every_cut_at_a_group_boundary_is_refused(journal: tuple[FileStore, str, Path]) -> None:
    store, uid, sdir = journal
    head = _head(sdir)
    for path in segments(sdir):
        original = path.read_bytes()
        raw = zstdcodec.decompress(original, 1 << 30) if path.name.endswith(".zst") else original
        plain = path.with_name(path.name.removesuffix(".zst"))
        try:
            if plain != path:  # cut the segment's plain bytes, as a .seg in its place
                path.unlink()
            for cut in [sg.HEADER_SIZE, *_cuts_of(raw, plain)]:
                plain.write_bytes(raw[:cut])
                what = f"{plain.name} cut at {cut}"
                _refused_or_intact(sdir, head, what)
                _open_refused_or_intact(store, uid, head, what)
        finally:
            if plain != path:
                plain.unlink(missing_ok=True)
            path.write_bytes(original)
    assert _head(sdir) == head


def _cuts_of(raw: bytes, plain: Path) -> list[int]:
    first = int(plain.name[:16], 16)
    s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first)
    return [f.end for f in s.frames if f.flags & sg.FLAG_GROUP_END]


def _flip_all(path: Path, lo: int, hi: int, sdir: Path, head: tuple[int, str]) -> int:
    original = path.read_bytes()
    tried = 0
    try:
        for at in range(lo, hi, STEP):
            raw = bytearray(original)
            raw[at] ^= 0x40
            path.write_bytes(bytes(raw))
            _refused_or_intact(sdir, head, f"{path.name} byte {at} flipped")
            tried += 1
    finally:
        path.write_bytes(original)
    return tried


def test_every_flip_in_the_last_groups_of_the_tail_is_refused(
    journal: tuple[FileStore, str, Path],
) -> None:
    _store, _uid, sdir = journal
    head = _head(sdir)
    tail = segments(sdir)[-1]
    groups = group_ends(tail)
    assert _flip_all(tail, groups[-2][0], groups[-1][1], sdir, head) > 20


def test_every_flip_in_the_last_sealed_segment_is_refused(
    journal: tuple[FileStore, str, Path],
) -> None:
    _store, _uid, sdir = journal
    head = _head(sdir)
    sealed = segments(sdir)[-2]
    assert sealed.name.endswith(".zst")
    assert _flip_all(sealed, 0, sealed.stat().st_size, sdir, head) > 20


def test_the_sample_is_what_the_properties_need(journal: tuple[FileStore, str, Path]) -> None:
    """Sealed compressed segments and a tail of several groups (else the sweeps are empty)."""
    _store, _uid, sdir = journal
    assert len(segments(sdir)) >= 4 and len(group_ends(segments(sdir)[-1])) >= 3
