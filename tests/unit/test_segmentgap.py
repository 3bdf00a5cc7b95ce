"""A sealed segment missing from a journal's listing is named by its first lost seq and its
file (:mod:`agentsessions.journal.format.segmentgap`), not by the tail where the count of
files came up short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsessions.errors import JournalCorruptError
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format.segmentlog import SegmentLog

SID = "sess-0123456789abcdef01234567"


def _journal(path: Path, events: int = 60, base_seq: int = 0) -> list[tuple[int, int]]:
    """A journal of one-event groups in small segments; each segment's (first, last) seq."""
    path.mkdir(parents=True)
    base_hash = "ab" * 32 if base_seq else ""
    SegmentLog.create(path, session_id=SID, base_seq=base_seq, base_hash=base_hash)
    log, _ = SegmentLog.open(path, session_id=SID, writable=True, segment_max_bytes=4096)
    for seq in range(base_seq + 1, base_seq + events + 1):
        body = json.dumps({"event": {"n": seq, "pad": "p" * 200}, "seq": str(seq)}).encode()
        log.append_group([(sg.RTYPE_EVENT, seq, 1, body)], carry=dict)
    head = log.position.last_seq
    log.close()
    firsts = sorted(int(p.name[:16], 16) for p in path.iterdir() if ".seg" in p.name)
    return [(a, b - 1) for a, b in zip(firsts, [*firsts[1:], head + 1], strict=True)]


def _drop(path: Path, first: int) -> str:
    (victim,) = [p for p in path.iterdir() if p.name.startswith(f"{first:016x}.seg")]
    victim.unlink()
    return f"{first:016x}.seg"


@pytest.mark.parametrize("writable", [False, True])
@pytest.mark.parametrize("lost", [1, 2], ids=["one", "two-in-a-row"])
def test_a_lost_middle_segment_is_named_by_its_first_seq_and_file(
    tmp_path: Path, writable: bool, lost: int
) -> None:
    spans = _journal(tmp_path / "j")
    assert len(spans) >= 5
    gone = spans[2 : 2 + lost]
    names = [_drop(tmp_path / "j", first) for first, _ in gone]
    before = sorted(p.name for p in (tmp_path / "j").iterdir())
    with pytest.raises(JournalCorruptError) as caught:
        SegmentLog.open(tmp_path / "j", session_id=SID, writable=writable)
    err = caught.value
    first, last = gone[0][0], gone[-1][1]
    assert err.fields["seq"] == first and err.fields["path"].endswith(names[0] + ".zst")
    assert f"seqs {first}..{last} are gone" in str(err) and names[0] in str(err)
    assert ("segments 2..3" if lost == 2 else "segment 2 ") in str(err)
    assert sorted(p.name for p in (tmp_path / "j").iterdir()) == before  # nothing repaired


def test_a_lost_first_segment_says_which_seqs_end_the_loss(tmp_path: Path) -> None:
    spans = _journal(tmp_path / "j", base_seq=7)
    _drop(tmp_path / "j", spans[0][0])
    with pytest.raises(JournalCorruptError, match=f"the seqs before {spans[1][0]} are gone") as e:
        SegmentLog.open(tmp_path / "j", session_id=SID, writable=False)
    assert "seq" not in e.value.fields  # its start (a fork's base) is not in the journal
