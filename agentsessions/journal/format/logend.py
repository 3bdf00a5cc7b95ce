"""Where a segment log ends, as a reader finds it without reading a frame: the segment
files' names and fixed sizes (``docs/FORMAT.md`` 2-3), and the values the TAIL hint
persists: :class:`Position` (the committed end) and :class:`CheckedLinks` (what an open
verified of the sealed segments, FORMAT.md 11).

The codec (:mod:`.segment`), the readers (:mod:`.segmentread`, :mod:`.segmenttail`) and the
log name these too (they re-export them). A listing checks a TAIL hint against a journal
directory with this module alone (``stores/file/sessiondir.py``), so it imports no codec,
reader or compressor: most of what opening a journal costs a command's start.
"""

from __future__ import annotations

import re
from typing import Any

from agentsessions.valueclass import field, value

HEADER_SIZE = 128
"""Bytes of a segment's header, at offset 0 (a journal of one header holds no frame yet)."""
FRAME_HEADER_SIZE = 32
"""Bytes of a record frame's header; the first frame starts right after the segment's."""

SEGMENT_NAME = re.compile(r"([0-9a-f]{16})\.seg(\.zst)?")
"""Segment file names (match with ``fullmatch``): first seq in hex, ``.zst`` when compressed."""


def segment_name(first_seq: int, *, compressed: bool = False) -> str:
    """File name of the segment whose first sequence number is ``first_seq``."""
    return f"{first_seq:016x}.seg" + (".zst" if compressed else "")


Link = tuple[int, str]
"""A SEAL's ``(last_seq, last_hash)``: what the next segment's header must continue."""

FileId = tuple[int, str, int, int, int, int]
"""A sealed segment file as ``stat`` sees it: ``(first_seq, form, size, inode, mtime_ns,
ctime_ns)``, ``form`` being ``"seg"`` or ``"zst"`` (the file a reader uses)."""


@value(frozen=True)
class CheckedLinks:
    """What an open verified about the sealed segments; the TAIL hint carries it as ``sealed``.

    ``files``: each sealed segment in order (``segment_no`` 0 first), as ``stat`` saw it just
    before its header and SEAL were read and found to chain (or, unchanged, an earlier record);
    ``link``: the last one's SEAL, which the next header continued. ``written_ns``: the hint
    file's mtime as read back (0 for a record not read from a file). A record counts only for
    a file whose ctime is older than that: a change within the same clock tick as the check
    could leave every stat field equal (the "racy git" problem), one a tick later cannot.
    """

    files: tuple[FileId, ...]
    link: Link
    written_ns: int = 0

    def trusts(self, no: int, now: FileId | None) -> bool:
        """True when the ``no``-th sealed segment is, by ``stat``, the file checked before."""
        if now is None or no >= len(self.files):
            return False
        return self.files[no] == now and now[5] < self.written_ns

    def to_json(self) -> dict[str, Any]:
        """The TAIL hint's ``sealed`` value (docs/FORMAT.md 11)."""
        return {"files": [list(f) for f in self.files], "link": list(self.link)}

    @classmethod
    def from_json(cls, obj: Any, written_ns: int) -> CheckedLinks | None:
        """The record in a TAIL hint, or None when it is absent or malformed (a full check)."""
        try:
            files = tuple(
                (int(a), str(b), int(c), int(d), int(e), int(f))
                for a, b, c, d, e, f in obj["files"]
            )
            last_seq, last_hash = obj["link"]
            return cls(files, (int(last_seq), str(last_hash)), written_ns)
        except (KeyError, TypeError, ValueError):
            return None


@value(frozen=True)
class Position:
    """Where the committed log ends; the store persists it as a resume hint."""

    segment: int  # first_seq of the tail segment (its file name)
    offset: int  # commit_end in the tail segment
    last_seq: int
    last_hash: str  # hex; "" when the log is empty (or base_hash)
    last_frame: int  # offset of the frame holding last_seq in the tail segment, -1 if none
    # what an open verified about the sealed segments, so the next one need not re-read
    # them (FORMAT.md 11); not part of where the log ends, hence not compared
    links: CheckedLinks | None = field(default=None, compare=False)
