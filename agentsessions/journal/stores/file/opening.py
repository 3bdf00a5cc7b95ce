"""Opening a file store session's journal reading only its tail: the TAIL hint, then what
was committed after it, checked against the evidence of the acknowledged head.

What ``get``, ``read``, ``state``, ``fork`` and opening a writer (a session's or a tool
store's) start from, so the cost of an open does not grow with the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsessions.journal.format import fencefile
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file import statefile
from agentsessions.journal.stores.file.crypt import LazyCipher
from agentsessions.journal.stores.file.sessiondir import SessionDir, acked, proved_head
from agentsessions.journal.stores.file.writer import fold_frames
from agentsessions.journal.stores.store import SessionMeta
from agentsessions.journal.stores.tail import Tail
from agentsessions.valueclass import value

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey


@value(frozen=True, slots=True)
class Opening:
    """What an open uses of its store: durability primitives, segment size, master key."""

    fs: FileSystem
    segment_max_bytes: int
    master: MasterKey | None


def open_tail(
    sdir: SessionDir,
    meta: SessionMeta,
    how: Opening,
    *,
    writable: bool = False,
    check_links: bool = False,
    scope: str = "",
) -> tuple[Tail, fencefile.Head, SegmentLog]:
    """Open the journal reading only its tail: the hint, then what was committed after it;
    the tail, the acknowledged head this open proved (:func:`.sessiondir.proved_head`,
    what a writer records in its FENCE) and the open log.

    The hint, and the head the FENCE's latest writer opened on, are evidence of the
    acknowledged head: a journal that ends before either is refused
    (AcknowledgedDataMissingError). A writable open, or ``check_links``, also
    checks that the segments chain. ``scope``: a tool store's key (``uid/tool``)."""
    position, hinted = sdir.read_hint()
    # the FENCE head counts where it is past the hint: below it, the hint's own claim
    # already proves the journal reaches it (verify checks every claim in full)
    hinted_seq = position.last_seq if position is not None else 0
    fence = sdir.read_fence()
    fenced = tuple(c for c in (fence.evidence() if fence else ()) if c.seq > hinted_seq)
    log, scan = SegmentLog.open(
        sdir.journal,
        session_id=meta.uid,
        writable=writable,
        fs=how.fs,
        segment_max_bytes=how.segment_max_bytes,
        resume=position,
        compress_in_background=writable,
        acked=acked(position) + fenced,
        check_links=writable or check_links,
    )
    try:
        if scan.resumed and hinted is not None:
            tail = hinted
        elif scan.base_carry is not None:
            tail = Tail.from_json(scan.base_carry)
        else:
            tail = sdir.read_base()
        lazy = LazyCipher(sdir.path, meta, how.master, scope)
        fold_frames(tail, scan.frames, lazy)
        statefile.check_acked(log, hinted, tail)
        if writable:  # a writer holds its state: one frame's read, whatever the history
            statefile.load(log, tail, lazy.state_data)
    except BaseException:
        log.close()
        raise
    return tail, proved_head(position, fence), log
