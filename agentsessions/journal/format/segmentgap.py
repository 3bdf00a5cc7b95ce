"""Naming what a journal lost when a sealed segment's file is missing from its listing.

Segment files are named by their first seq and carry a ``segment_no`` that counts up from 0
without a hole, so a listing with fewer files than the tail's ``segment_no + 1`` has lost
some. Which ones is told by the first file whose ``segment_no`` is not its place in the
listing: the files before it are whole, and the SEAL of the one just before says where the
lost run begins (its ``last_seq + 1``); the lost run ends just before that file's name. The
error names that first lost seq and the file that held it, not the tail where opening
noticed the count was short. This runs only once a journal is known to be damaged: it costs
a header read per segment up to the gap and one SEAL read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from agentsessions.errors import AgentSessionsError, JournalCorruptError
from agentsessions.journal.format import segment as sg

__all__ = ["SegmentFiles", "find_gap", "gap_error"]


class SegmentFiles(Protocol):
    """What this module reads of a journal's segment files (``segmentread.SegmentFiles``,
    named by a Protocol so that the import goes one way)."""

    journal_dir: Path
    session_id: str

    @property
    def segments(self) -> list[int]:
        """The segments' first seqs in order; the last one is the tail."""
        ...

    def header_of(self, first: int) -> sg.SegmentHeader:
        """The checked header of segment ``first``."""
        ...

    def seal_of(self, first: int) -> sg.SealInfo:
        """The decoded SEAL of sealed segment ``first``."""
        ...


def gap_error(
    files: SegmentFiles, segment_no: int, count: int, first_seq: int | None, last_seq: int,
    hint: str,
) -> JournalCorruptError:  # fmt: skip
    """The error for ``count`` lost segments from ``segment_no`` on, which held seqs
    ``first_seq``..``last_seq`` (``first_seq`` None: lost before the first file, whose
    start a fork child's base sets, so only their end is known); ``hint``: the reader's."""
    which, are, start = f"segment {segment_no}", "is", ""
    if count > 1:
        which, are, start = f"segments {segment_no}..{segment_no + count - 1}", "are", "from "
    if first_seq is None:
        held, name, path = f"the seqs before {last_seq + 1}", "", files.journal_dir
    else:
        name = sg.segment_name(first_seq, compressed=True)
        held, path = f"seqs {first_seq}..{last_seq}", files.journal_dir / name
        name = f" ({start}file {name} or {sg.segment_name(first_seq)})"
    reason = f"{which} of the journal{name} {are} missing: {held} are gone"
    # no seq when the lost run's start is unknown: the reader's next seq is the first lost
    return JournalCorruptError(
        f"{files.journal_dir}: {reason}", hint=hint, path=str(path),
        seq=first_seq, reason=reason, session=files.session_id,
    )  # fmt: skip


def find_gap(
    files: SegmentFiles, tail: sg.SegmentHeader, tail_path: Path, hint: str
) -> JournalCorruptError:
    """The first lost run of segments before the ``tail`` (whose header is read, from
    ``tail_path``), as an error naming it. When the headers show no hole, or a file on the
    way cannot be read (it is damaged in another way, which reading it names), the error
    says only that the count is short."""
    firsts = files.segments
    try:
        for no, first in enumerate(firsts):
            header = tail if first == firsts[-1] else files.header_of(first)
            if header.segment_no <= no:
                continue
            count = header.segment_no - no
            if no == 0:
                return gap_error(files, 0, count, None, first - 1, hint)
            start = files.seal_of(firsts[no - 1]).last_seq + 1
            return gap_error(files, no, count, start, first - 1, hint)
    except (AgentSessionsError, OSError):
        pass
    reason = f"segment_no {tail.segment_no} but {len(firsts)} segments (one is missing)"
    return JournalCorruptError(
        f"{tail_path}: damaged journal at offset 40: {reason}", hint=hint,
        path=str(tail_path), offset=40, seq=tail.first_seq, reason=reason,
        session=files.session_id,
    )  # fmt: skip
