"""The batch chain scan of segment bytes: frames and the hash chain in one pass.

``verify`` accepts a segment through this scan when it can, and reads it strictly
(:mod:`.segmentread`) when it cannot. :class:`ChainScan` is a scan's running state;
:func:`scan_events` is the hot loop over EVENT frames, :func:`step_frame` takes any other
frame exactly as the strict reader would, :func:`scan_buffer` alternates the two over one
buffer. :func:`zero_until` is the free-space check the scan and recovery share.

Invariants:
- nothing here writes, opens or names a file: callers hand in buffers or descriptors;
- a frame the scan passes is one the strict path (:func:`.segmentframes.parse_frames`) also
  passes, and its EVENT payload continues the chain; anything else stops the scan at that
  frame, so a caller that reads it strictly names the damage (the scan never does);
- ``crc=False`` is only for bytes a zstd content checksum has just verified.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Callable, Sequence

from agentsessions.journal.format import sealedhead, staterecord
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf
from agentsessions.journal.format.segment import RTYPE_EVENT, RTYPE_SEAL, Frame

BLOCK = 1 << 20
"""Bytes read at a time from a ``.seg``."""
PayloadCheck = Callable[[Sequence[bytes | bytearray]], bool]
"""Extra per-payload checks of a batch scan (``verify --strict``); False rejects the batch."""


# -- the batch scan -------------------------------------------------------------------------
_HEAD = struct.Struct("<IIQ8xII")  # magic, payload_len, seq, (fence), kind, frame_crc
_IN = 1 << 32  # "a group is open", above every 32-bit kind word
_EVENT_NEXT = {0x601: 0, 0x201: _IN, 0x001 | _IN: _IN, 0x401 | _IN: 0}
"""kind | group state -> group state after an EVENT frame that keeps the group rules.

The kind word is bytes [24, 28) of a frame header as a u32: ``rtype | rflags << 8 |
reserved << 16``; only EVENT with known flags and a zero reserved field is listed."""
_PREFIX = b'{"event":'
_TAIL = b',"prev_hash":"%s","seq":"%d"}'  # the envelope's fixed end (canonical.envelope)
_PADS = tuple(bytes(n) for n in range(sg.FRAME_ALIGN))


class ChainScan:
    """Running state of a batch scan: the frame rules, the chain's last hash, what was seen."""

    __slots__ = ("check", "events", "keep", "last_frame", "prev", "rules", "seal", "sealed")

    def __init__(self, first_seq: int, prev_hash: str, check: PayloadCheck | None) -> None:
        self.rules = sf.FrameRules(first_seq)
        self.prev = prev_hash.encode()  # hex of the last EVENT's hash
        self.events = 0
        self.last_frame = -1
        self.seal: Frame | None = None
        self.sealed = 0
        self.check = check
        self.keep: list[bytes | bytearray] | None = [] if check is not None else None

    def flush(self) -> bool:
        """Run the payload check over the payloads kept since the last flush."""
        if not self.keep:
            return True
        ok = self.check is None or self.check(self.keep)
        self.keep.clear()
        return ok


def scan_events(
    buf: bytes | bytearray, pos: int, end: int, base: int, st: ChainScan, max_record: int,
    crc: bool = True,
) -> int:  # fmt: skip
    """Pass over intact EVENT frames of ``buf[pos:end]`` that continue the log and the chain.

    ``buf[0]`` is file offset ``base``. Checks what :func:`sf.parse_frames` checks on
    its fast path (magic, seq, group flag order, reserved bits, length, CRC, zero padding)
    and what ``verify.walk`` checks (the envelope prefix, its ``prev_hash``/``seq`` tail) and
    hashes each payload. Returns where it stopped: ``end``, or a frame that is anything else
    (a COMMIT or SEAL, damage, or a frame the buffer cuts) for :func:`step_frame`.

    ``crc=False`` skips the EVENT frames' CRCs: only for bytes a zstd content checksum has
    just verified, which the writer CRC-checked before compressing them (FORMAT.md 7).
    """
    rules = st.rules
    if rules.sealed:
        return pos
    # hot loop (one pass per record): payloads are memoryview slices, not copies
    unpack, crc32, sha256 = _HEAD.unpack_from, zlib.crc32, hashlib.sha256
    nexts, pads, tail, keep, magic_ok = _EVENT_NEXT, _PADS, _TAIL, st.keep, sg.FRAME_MAGIC
    startswith, endswith, mv = buf.startswith, buf.endswith, memoryview(buf)
    expected, prev, last, check_crc = rules.expected, st.prev, -1, crc
    group = _IN if rules.in_group else 0
    start_seq, limit = expected, end - sg.FRAME_HEADER_SIZE
    while pos <= limit:
        magic, plen, seq, kind, crc = unpack(buf, pos)
        body = pos + sg.FRAME_HEADER_SIZE
        stop = body + plen
        fend = stop + (-plen & 7)
        after = nexts.get(kind | group)
        if after is None or magic != magic_ok or seq != expected or fend > end:
            break
        payload = mv[body:stop]
        if plen > max_record or (
            check_crc and crc32(payload, crc32(mv[pos + 4 : pos + 28])) != crc
        ):
            break
        if not (startswith(_PREFIX, body) and endswith(tail % (prev, seq), body, stop)):
            break
        if fend != stop and not startswith(pads[fend - stop], stop):
            break
        prev = sha256(payload).hexdigest().encode()
        if keep is not None:
            keep.append(bytes(payload))
        last, expected, group, pos = pos, seq + 1, after, fend
    if last >= 0:
        rules.expected, rules.in_group = expected, bool(group)
        st.prev, st.last_frame, st.events = prev, base + last, st.events + expected - start_seq
    return pos


def step_frame(
    buf: bytes | bytearray, pos: int, end: int, base: int, st: ChainScan, max_record: int,
    segment: int, crc: bool = True,
) -> Frame | str:  # fmt: skip
    """Take the frame at ``buf[pos]`` exactly as the strict path would, or say why not.

    :func:`segment.check_frame`, then :class:`sf.FrameRules`, then (for an EVENT) the
    chain link; a reason in :data:`sf.INCOMPLETE` only means ``buf[:end]`` cuts the frame.
    """
    mv = memoryview(buf)[:end]
    parsed = sg.check_frame(mv, pos, base, max_record, crc)
    if isinstance(parsed, str):
        return parsed
    plen, seq, fence, rtype, flags, _ = parsed
    body = pos + sg.FRAME_HEADER_SIZE
    payload = bytes(mv[body : body + plen])
    why = st.rules.check(rtype, seq, flags, payload)
    if why:
        return why
    if rtype == RTYPE_EVENT and flags & sg.FLAG_ENCRYPTED:  # the chain is the clear head
        chain = sealedhead.chain_of(payload)
        if chain is None or chain[0].encode() != st.prev:
            return f"seq {seq} does not continue the chain (sealed record)"
        st.prev, st.sealed = chain[1].encode(), st.sealed + 1
        st.events, st.last_frame = st.events + 1, base + pos
        if st.keep is not None:
            st.keep.append(payload)
    elif rtype == RTYPE_EVENT:
        if not (payload.startswith(_PREFIX) and payload.endswith(_TAIL % (st.prev, seq))):
            return f"seq {seq} does not continue the chain"
        st.prev = hashlib.sha256(payload).hexdigest().encode()
        st.events, st.last_frame = st.events + 1, base + pos
        if st.keep is not None:
            st.keep.append(payload)
    elif rtype == sg.RTYPE_STATE and staterecord.binding_problem(payload, seq, st.prev.decode()):
        return f"STATE frame at seq {seq} is malformed or bound elsewhere"
    frame = Frame(rtype, seq, fence, flags, payload, segment, base + pos)
    if rtype == RTYPE_SEAL:
        st.seal = frame
    return frame


def scan_buffer(
    buf: bytes | bytearray, pos: int, end: int, base: int, st: ChainScan, max_record: int,
    segment: int, crc: bool = True,
) -> tuple[int, str]:  # fmt: skip
    """Batch-scan ``buf[pos:end]``; returns (where it stopped, "" or why).

    "" means the buffer was consumed to ``end``; a reason in :data:`sf.INCOMPLETE`
    means the frame at the returned offset continues past ``end``. ``crc``: as in
    :func:`scan_events` (other frames are always CRC-checked).
    """
    while True:
        pos = scan_events(buf, pos, end, base, st, max_record, crc)
        if pos >= end:
            return pos, "" if st.flush() else "payload check failed"
        frame = step_frame(buf, pos, end, base, st, max_record, segment, crc)
        if isinstance(frame, str):
            return pos, frame if st.flush() else "payload check failed"
        pos = frame.end - base


def pread_into(fd: int, buf: bytearray, n: int, offset: int) -> int:
    """Read up to ``n`` bytes at ``offset`` into the start of the reused ``buf``."""
    got = 0
    with memoryview(buf) as view:
        while got < n:
            if hasattr(os, "preadv"):
                k = os.preadv(fd, [view[got:n]], offset + got)
            else:  # pragma: no cover - platforms without preadv
                piece = os.pread(fd, n - got, offset + got)
                k = len(piece)
                view[got : got + k] = piece
            if k <= 0:
                break
            got += k
    return got


def zero_until(fd: int, pos: int, size: int, buf: bytearray | None = None) -> bool:
    """True when the file holds only zero bytes (free space) from ``pos`` to ``size``;
    reads through ``buf`` (or a fresh block) and compares with memcmp, no other copy."""
    if buf is None:
        buf = bytearray(min(BLOCK, max(size - pos, 0)))
    while pos < size:
        n = pread_into(fd, buf, min(len(buf), size - pos), pos)
        if n <= 0 or not sg.is_zero(buf, 0, n):
            return False
        pos += n
    return True
