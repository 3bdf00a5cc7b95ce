"""A segment's frames parsed into records, by the rules a segment's bytes must keep.

:func:`parse_frames` walks a segment's frames from an offset and yields each one that is
whole and valid, checking each against :class:`FrameRules` (the next seq, the group
structure, the record size limit) and keeping a :class:`SparseIndex` of seq to offset
every :data:`~.segment.INDEX_STRIDE` frames; :func:`seal_problem` checks a sealed
segment's SEAL against its last event. :data:`INCOMPLETE` and :data:`FREE_SPACE` name the
problems that mean "a torn tail" and "free space after the data" rather than damage.
"""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Generator

from agentsessions.journal.format.segment import (
    FLAG_GROUP_END,
    FLAG_GROUP_START,
    FRAME_ALIGN,
    FRAME_HEADER_SIZE,
    FRAME_MAGIC,
    FRAME_STRUCT,
    INDEX_STRIDE,
    RTYPE_EVENT,
    RTYPE_SEAL,
    Frame,
    check_frame,
    decode_seal,
    frame_rule,
)

_ZERO_PAD = bytes(FRAME_ALIGN)
_FAST_FLAGS = FLAG_GROUP_START | FLAG_GROUP_END


INCOMPLETE = frozenset({"short frame header", "frame past end of file"})
"""Reasons :func:`check_frame` gives when the buffer merely ends inside a frame."""
FREE_SPACE = frozenset({"short frame header", "bad frame magic"})
"""Why a frame check fails on zero bytes (free space, when every byte after it is zero)."""


class SparseIndex:
    """In-memory sparse index of an uncompressed segment: (seq, offset) of group starts."""

    def __init__(self, entries: list[tuple[int, int]]) -> None:
        self.seqs = [s for s, _ in entries]
        self.offs = [o for _, o in entries]

    def floor(self, seq: int) -> tuple[int, int]:
        """The last entry whose seq <= ``seq``: reading EVENT ``seq`` may start there."""
        i = max(bisect.bisect_right(self.seqs, seq) - 1, 0)
        return self.seqs[i], self.offs[i]

    def note(self, seq: int, off: int) -> None:
        """Record a group start, keeping entries ~INDEX_STRIDE events apart."""
        i = bisect.bisect_right(self.offs, off)
        if i == 0 or self.offs[i - 1] == off or seq - self.seqs[i - 1] < INDEX_STRIDE:
            return
        if i < len(self.offs) and self.seqs[i] - seq < INDEX_STRIDE:
            return
        self.seqs.insert(i, seq)
        self.offs.insert(i, off)


class FrameRules:
    """Running :func:`frame_rule` state for a strict read from a group boundary."""

    def __init__(self, expected: int) -> None:
        self.expected, self.in_group, self.sealed = expected, False, False

    def check(self, rtype: int, seq: int, flags: int, payload: bytes) -> str:
        """ "" if this frame may come next (and advance), else the broken rule."""
        reason = frame_rule(rtype, seq, flags, payload, self.in_group, self.expected, self.sealed)
        if not reason:
            self.expected += rtype == RTYPE_EVENT
            self.in_group = not flags & FLAG_GROUP_END
            self.sealed = rtype == RTYPE_SEAL
        return reason


def parse_frames(
    buf: bytes, base: int, segment: int, rules: FrameRules, index: SparseIndex | None,
    max_record: int, skip_below: int = 0, crc: bool = True,
) -> Generator[Frame, None, tuple[int, str]]:  # fmt: skip
    """Yield the valid frames of ``buf`` (file bytes from ``base``), checked strictly.

    Returns (bytes consumed, "" or why it stopped); a reason in :data:`INCOMPLETE` only
    means the buffer ended inside a frame. EVENT and COMMIT frames with a seq below
    ``skip_below`` are passed over by their headers (the rules still apply, no CRC check,
    nothing yielded). Group starts are noted in ``index``. ``crc``: as in :func:`check_frame`.
    """
    mv, p, n = memoryview(buf), 0, len(buf)
    unpack, crc32, check_crc = FRAME_STRUCT.unpack_from, zlib.crc32, crc
    while p < n:
        if skip_below and n - p >= FRAME_HEADER_SIZE:
            end, reason = _passed_over(mv, p, base, rules, index, skip_below)
            if reason:
                return p, reason
            if end:
                p = end
                continue
        # Fast path for an intact EVENT frame in its place; anything else (or any doubt)
        # goes through check_frame and FrameRules, which also name what is wrong.
        if n - p >= FRAME_HEADER_SIZE:
            magic, plen, seq, fence, rtype, flags, reserved, stored = unpack(mv, p)
            body = p + FRAME_HEADER_SIZE
            end = body + plen + (-plen % FRAME_ALIGN)
            if (
                magic == FRAME_MAGIC
                and rtype == RTYPE_EVENT
                and (not flags & FLAG_GROUP_START) == rules.in_group
                and seq == rules.expected
                and not reserved
                and not flags & ~_FAST_FLAGS
                and plen <= max_record
                and end <= n
                and (
                    not check_crc
                    or crc32(mv[body : body + plen], crc32(mv[p + 4 : p + 28])) == stored
                )
                and mv[body + plen : end] == _ZERO_PAD[: end - body - plen]
            ):
                rules.expected = seq + 1
                rules.in_group = not flags & FLAG_GROUP_END
                if index is not None and flags & FLAG_GROUP_START:
                    index.note(seq, base + p)
                yield Frame(
                    rtype, seq, fence, flags, bytes(mv[body : body + plen]), segment, base + p
                )
                p = end
                continue
        checked = _checked(mv, p, base, segment, rules, index, max_record, check_crc)
        if isinstance(checked, str):
            return p, checked
        frame, p = checked
        yield frame
    return p, ""


def _passed_over(
    mv: memoryview, p: int, base: int, rules: FrameRules, index: SparseIndex | None,
    skip_below: int,
) -> tuple[int, str]:  # fmt: skip
    """Pass over the frame at ``p`` by its header if it is an EVENT or COMMIT below
    ``skip_below`` and whole in ``mv``: (where the next frame starts, ""), or (0, why a rule
    broke); (0, "") when the frame is not one to pass over (the full check reads it).

    The rules still see it (no payload, no CRC check); a group start is noted in ``index``."""
    magic, plen, seq, _, rtype, flags, _, _ = FRAME_STRUCT.unpack_from(mv, p)
    end = p + FRAME_HEADER_SIZE + plen + (-plen % FRAME_ALIGN)
    if magic != FRAME_MAGIC or seq >= skip_below or rtype == RTYPE_SEAL or end > len(mv):
        return 0, ""
    reason = rules.check(rtype, seq, flags, b"")
    if reason:
        return 0, reason
    if index is not None and flags & FLAG_GROUP_START:
        index.note(seq, base + p)
    return end, ""


def _checked(
    mv: memoryview, p: int, base: int, segment: int, rules: FrameRules,
    index: SparseIndex | None, max_record: int, crc: bool,
) -> tuple[Frame, int] | str:  # fmt: skip
    """The frame at ``p`` fully checked (:func:`check_frame`, then ``rules``) and where the
    next one starts, or why it is not valid. A group start is noted in ``index``."""
    parsed = check_frame(mv, p, base, max_record, crc)
    if isinstance(parsed, str):
        return parsed
    plen, seq, fence, rtype, flags, fend = parsed
    body = p + FRAME_HEADER_SIZE
    payload = bytes(mv[body : body + plen])
    reason = rules.check(rtype, seq, flags, payload)
    if reason:
        return reason
    if index is not None and flags & FLAG_GROUP_START and rtype != RTYPE_SEAL:
        index.note(seq, base + p)
    return Frame(rtype, seq, fence, flags, payload, segment, base + p), fend - base


def seal_problem(first_seq: int, seal: Frame | None, last_hash: str) -> str:
    """Why ``seal`` (the last frame of a sealed segment) does not fit the segment, or ""."""
    if seal is None or seal.rtype != RTYPE_SEAL:
        return "sealed segment does not end with SEAL"
    info = decode_seal(seal.payload)
    if info.last_hash != last_hash:
        return "SEAL last_hash differs from the last event's hash"
    if info.event_count != info.last_seq - first_seq + 1 or info.data_bytes != seal.offset:
        return "SEAL event_count or data_bytes does not match the segment"
    return ""
