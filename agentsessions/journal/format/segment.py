"""Segment file codec: header, record frames, SEAL payload, scanning and recovery classification.

Pure functions over bytes (no I/O), so the golden fixtures, the log and ``verify`` share them.
``docs/FORMAT.md`` documents every layout here; ``tests/unit/test_format_doc.py`` holds the
doc's tables against the constants below.

Invariants:
- every value is little-endian; every frame starts 8-byte aligned (the header is 128 bytes);
- a frame's CRC covers bytes ``[4, 28)`` of its header and its payload, so length, seq,
  fence, type and flags are protected; padding is zero;
- only EVENT frames consume sequence numbers, contiguous across the log; a COMMIT frame (the
  optional first frame of a group) carries the seq of the group's first EVENT (the next seq);
  a SEAL frame carries the segment's last EVENT seq and is its own group, the last in the file;
- a group is committed only by its GROUP_END frame; :func:`scan` never returns frames of a
  group without one;
- a stop at a CRC-valid frame that breaks the rules (wrong seq, flag order, unknown type,
  bytes after SEAL) is never classified as a torn write: a tear cannot forge a CRC;
- a structural stop (short, bad magic, bad length, CRC mismatch) is a torn tail unless a
  complete valid GROUP_START frame of a later group follows it (the writer never writes group
  k+1 before group k's sync returned), in which case it is corruption.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

from agentsessions.errors import FormatError, InvalidArgumentError
from agentsessions.journal.format import sealedhead

# a segment's name and fixed sizes: the log end's module holds them (a listing reads them)
from agentsessions.journal.format.logend import FRAME_HEADER_SIZE as FRAME_HEADER_SIZE
from agentsessions.journal.format.logend import HEADER_SIZE as HEADER_SIZE
from agentsessions.journal.format.logend import segment_name as segment_name
from agentsessions.valueclass import field, value

# -- segment header --------------------------------------------------------------------
SEGMENT_MAGIC = b"AGSJSEG\x00"
FORMAT_VERSION = 1
CRC_ALGO_CRC32 = 1
HASH_ALGO_SHA256 = 1
CODEC_CANONICAL_JSON = 1
HEADER_STRUCT = struct.Struct("<8sHHBBBB16sQIIq32s36sI")
HEADER_CRC_OFFSET = 124

# -- record frame ------------------------------------------------------------------------
FRAME_MAGIC = 0x4345524A  # b"JREC" read as u32 LE
FRAME_MAGIC_BYTES = b"JREC"
FRAME_STRUCT = struct.Struct("<IIQQBBHI")
FRAME_ALIGN = 8
_FRAME_MID = struct.Struct("<IQQBBH")  # bytes [4, 28): the CRC-covered header fields

RTYPE_EVENT = 1
RTYPE_SEAL = 2
RTYPE_COMMIT = 3
RTYPE_STATE = 4  # a working-state version (payload: staterecord), before its group's events

FLAG_COMPRESSED = 0x01  # reserved: never set, a frame with it is invalid
FLAG_GROUP_START = 0x02
FLAG_GROUP_END = 0x04
FLAG_ENCRYPTED = 0x08  # an EVENT whose payload is a sealed record (FORMAT.md 15)
KNOWN_FLAGS = FLAG_GROUP_START | FLAG_GROUP_END | FLAG_ENCRYPTED
SEAL_FLAGS = FLAG_GROUP_START | FLAG_GROUP_END

DEFAULT_MAX_RECORD_BYTES = 16 << 20
SEGMENT_MAX = 1 << 20
"""Seal the tail at 1 MiB: sealed segments are compressed (~8x on chat journals), so only
the tail stays raw; a rotation (a SEAL sync, a file create) comes every ~2,000 events."""
INDEX_STRIDE = 256
"""The in-memory sparse index keeps one group-start offset per ~256 events."""

STATUS_CLEAN, STATUS_TORN, STATUS_CORRUPT = "clean", "torn", "corrupt"
_STRUCTURAL = frozenset(
    {"short frame header", "bad frame magic", "payload too long", "frame past end of file",
     "frame CRC mismatch", "non-zero padding"}
)  # fmt: skip
_ZERO_HASH = bytes(32)


def session_bytes(session_id: str) -> bytes:
    """The 16-byte header field for ``sess-<24 hex>``: 12 raw bytes then 4 zero bytes."""
    hexpart = session_id[5:] if session_id.startswith("sess-") else ""
    if len(hexpart) != 24 or hexpart.lower() != hexpart:
        raise InvalidArgumentError(f"invalid session id {session_id!r}")
    try:
        return bytes.fromhex(hexpart) + bytes(4)
    except ValueError as exc:
        raise InvalidArgumentError(f"invalid session id {session_id!r}") from exc


def hash_bytes(hex_hash: str) -> bytes:
    """32 raw bytes for a hex SHA-256 (all zero for ``""``)."""
    if hex_hash == "":
        return _ZERO_HASH
    try:
        raw = bytes.fromhex(hex_hash)
    except ValueError:
        raw = b""
    if len(raw) != 32 or hex_hash != raw.hex():
        raise InvalidArgumentError(f"invalid hash {hex_hash!r}: expected 64 lowercase hex digits")
    return raw


def hash_hex(raw: bytes) -> str:
    """Hex of a stored 32-byte hash, ``""`` when all zero (no previous event)."""
    return "" if raw == _ZERO_HASH else raw.hex()


def content_hash(payload: bytes | memoryview) -> str:
    """SHA-256 hex of an EVENT payload (the canonical envelope)."""
    return hashlib.sha256(payload).hexdigest()


def event_hash(flags: int, payload: bytes | memoryview) -> str:
    """Content hash of an EVENT frame: stored in the clear head of a sealed payload."""
    if flags & FLAG_ENCRYPTED:
        chain = sealedhead.chain_of(payload)
        return chain[1] if chain else ""
    return hashlib.sha256(payload).hexdigest()


def frame_hash(frame: Frame) -> str:
    """Content hash of an EVENT :class:`Frame` (see :func:`event_hash`)."""
    return event_hash(frame.flags, frame.payload)


@value(frozen=True, slots=True)
class SegmentHeader:
    """The 128-byte header at offset 0 of every segment."""

    session_id: str
    first_seq: int
    segment_no: int
    created_unix_ms: int
    prev_hash: str  # hex, "" for none

    def encode(self) -> bytes:
        """The header's 128 bytes, CRC included."""
        body = HEADER_STRUCT.pack(
            SEGMENT_MAGIC, FORMAT_VERSION, HEADER_SIZE, CRC_ALGO_CRC32, HASH_ALGO_SHA256,
            CODEC_CANONICAL_JSON, 0, session_bytes(self.session_id), self.first_seq,
            self.segment_no, 0, self.created_unix_ms, hash_bytes(self.prev_hash), bytes(36), 0,
        )  # fmt: skip
        crc = zlib.crc32(body[:HEADER_CRC_OFFSET])
        return body[:HEADER_CRC_OFFSET] + crc.to_bytes(4, "little")

    @property
    def crc(self) -> int:
        """The header's CRC (binds a compressed segment's footer to its header)."""
        return int.from_bytes(self.encode()[HEADER_CRC_OFFSET:], "little")


def decode_header(raw: bytes) -> SegmentHeader:
    """Parse and check a segment header; raise FormatError saying what is wrong."""
    if len(raw) < HEADER_SIZE:
        raise FormatError(f"segment header is {len(raw)} bytes, expected {HEADER_SIZE}")
    (magic, version, size, crc_algo, hash_algo, codec, res1, sid, first_seq, segment_no,
     res2, created, prev, res3, crc) = HEADER_STRUCT.unpack_from(raw, 0)  # fmt: skip
    if magic != SEGMENT_MAGIC:
        raise FormatError("not a segment: bad header magic")
    if zlib.crc32(raw[:HEADER_CRC_OFFSET]) != crc:
        raise FormatError("segment header CRC mismatch")
    if version != FORMAT_VERSION or size != HEADER_SIZE:
        raise FormatError(f"unsupported segment format version {version} (header {size} bytes)")
    if (crc_algo, hash_algo, codec) != (CRC_ALGO_CRC32, HASH_ALGO_SHA256, CODEC_CANONICAL_JSON):
        raise FormatError(f"unsupported segment algorithms {crc_algo}/{hash_algo}/{codec}")
    if res1 or res2 or any(res3) or any(sid[12:]):
        raise FormatError("segment header reserved bytes are not zero")
    return SegmentHeader("sess-" + sid[:12].hex(), first_seq, segment_no, created, hash_hex(prev))


class Frame(NamedTuple):
    """One record frame as stored: type, seq, writer fence, flags, payload, and where it lies.

    A NamedTuple rather than a frozen dataclass: readers build one per record, and a tuple
    is several times cheaper to construct on that hot path.
    """

    rtype: int
    seq: int
    fence: int
    flags: int
    payload: bytes
    segment: int  # first_seq of the segment holding it
    offset: int  # byte offset of the frame in the (uncompressed) segment

    @property
    def end(self) -> int:
        """Offset just past this frame (payload plus padding)."""
        n = len(self.payload)
        return self.offset + FRAME_HEADER_SIZE + n + (-n % FRAME_ALIGN)


def encode_frame(rtype: int, seq: int, fence: int, flags: int, payload: bytes) -> bytes:
    """One frame: 32-byte header, payload, zero padding to 8 bytes."""
    mid = _FRAME_MID.pack(len(payload), seq, fence, rtype, flags, 0)
    crc = zlib.crc32(payload, zlib.crc32(mid))
    pad = bytes(-len(payload) % FRAME_ALIGN)
    return b"".join((FRAME_MAGIC_BYTES, mid, crc.to_bytes(4, "little"), payload, pad))


def encode_group(
    frames: Sequence[tuple[int, int, int, bytes]], expected: int, max_record: int,
    event_flags: int = 0,
) -> tuple[bytes, int, int, bytes | None]:  # fmt: skip
    """Encode ``(rtype, seq, fence, payload)`` frames as one group (GROUP_START on the first,
    GROUP_END on the last), checking them against the next EVENT seq ``expected``;
    ``event_flags`` (``FLAG_ENCRYPTED`` or 0) is set on every EVENT frame.

    Returns (bytes, next seq, offset of the last EVENT frame in the bytes or -1, its payload).
    """
    if not frames:
        raise InvalidArgumentError("an append group needs at least one frame")
    parts: list[bytes] = []
    rel, last_rel, last_payload = 0, -1, None
    pack, crc32, last = _FRAME_MID.pack, zlib.crc32, len(frames) - 1
    for i, (rtype, seq, fence, payload) in enumerate(frames):
        if not isinstance(payload, bytes) or len(payload) > max_record:
            raise InvalidArgumentError(f"frame {i}: payload must be bytes, at most {max_record}")
        if type(fence) is not int or not 0 <= fence < 1 << 64:
            raise InvalidArgumentError(f"frame {i}: fence must be a u64, got {fence!r}")
        if rtype == RTYPE_EVENT and seq == expected:
            last_rel, last_payload = rel, payload
            expected += 1
        elif not (seq == expected and _leads(rtype, i, frames)):
            msg = f"frame {i}: rtype {rtype} seq {seq} does not continue the log at {expected}"
            raise InvalidArgumentError(msg)
        flags = (FLAG_GROUP_START if i == 0 else 0) | (FLAG_GROUP_END if i == last else 0)
        flags |= event_flags if rtype == RTYPE_EVENT else 0
        # encode_frame inlined: the pieces go straight into the group's one join, so each
        # payload is copied once on the append path instead of twice.
        n = len(payload)
        mid = pack(n, seq, fence, rtype, flags, 0)
        pad = -n % FRAME_ALIGN
        parts += (FRAME_MAGIC_BYTES, mid, crc32(payload, crc32(mid)).to_bytes(4, "little"))
        parts += (payload, _ZERO_PAD[:pad]) if pad else (payload,)
        rel += FRAME_HEADER_SIZE + n + pad
    return b"".join(parts), expected, last_rel, last_payload


def _leads(rtype: int, i: int, frames: Sequence[tuple[int, int, int, bytes]]) -> bool:
    """A COMMIT frame may only come first, a STATE frame first or just after the COMMIT."""
    if rtype == RTYPE_COMMIT:
        return i == 0
    return rtype == RTYPE_STATE and (i == 0 or (i == 1 and frames[0][0] == RTYPE_COMMIT))


FrameFields = tuple[int, int, int, int, int, int]
"""(payload_len, seq, fence, rtype, flags, frame_end) of a structurally valid frame."""


_ZERO_PAD = bytes(FRAME_ALIGN)
_FAST_FLAGS = FLAG_GROUP_START | FLAG_GROUP_END


def check_frame(
    buf: memoryview, pos: int, base: int, max_record: int, crc: bool = True
) -> FrameFields | str:
    """Parse the frame at ``buf[pos]`` (file offset ``base + pos``) or say why it is invalid.

    Checks structure only (magic, length, bounds, reserved bits, CRC, zero padding); the
    returned end is a file offset. ``crc=False`` is for bytes of a compressed segment,
    whose zstd content checksum stands in for the frame CRCs (FORMAT.md 7).
    """
    if len(buf) - pos < FRAME_HEADER_SIZE:
        return "short frame header"
    magic, plen, seq, fence, rtype, flags, reserved, stored = FRAME_STRUCT.unpack_from(buf, pos)
    if magic != FRAME_MAGIC:
        return "bad frame magic"
    body = pos + FRAME_HEADER_SIZE
    end = body + plen + (-plen % FRAME_ALIGN)
    if plen > max_record and end > len(buf):
        return "payload too long"
    if end > len(buf):
        return "frame past end of file"
    if crc and zlib.crc32(buf[body : body + plen], zlib.crc32(buf[pos + 4 : pos + 28])) != stored:
        return "payload too long" if plen > max_record else "frame CRC mismatch"
    if plen > max_record:  # intact, just over this reader's limit: never a tear
        return f"payload of {plen} bytes is over max_record_bytes {max_record}"
    if end - body - plen and buf[body + plen : end] != _ZERO_PAD[: end - body - plen]:
        return "non-zero padding"
    if reserved or flags & ~KNOWN_FLAGS:
        return "reserved bits set"
    return plen, seq, fence, rtype, flags, base + end


@value(frozen=True)
class SealInfo:
    """The decoded SEAL payload of a sealed segment."""

    last_seq: int
    last_hash: str
    event_count: int
    data_bytes: int  # bytes of the segment before the SEAL frame (header included)
    sealed_unix_ms: int
    carry: dict[str, Any]


def encode_seal(info: SealInfo) -> bytes:
    """SEAL payload: compact JSON with sorted keys."""
    obj = {
        "last_seq": info.last_seq, "last_hash": info.last_hash, "event_count": info.event_count,
        "data_bytes": info.data_bytes, "sealed_unix_ms": info.sealed_unix_ms, "carry": info.carry,
    }  # fmt: skip
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"carry is not JSON-serialisable: {exc}") from exc


def decode_seal(payload: bytes) -> SealInfo:
    """Parse a SEAL payload; FormatError if it is not the documented object."""
    try:
        obj = json.loads(payload)
        info = SealInfo(
            int(obj["last_seq"]), str(obj["last_hash"]), int(obj["event_count"]),
            int(obj["data_bytes"]), int(obj["sealed_unix_ms"]), obj["carry"],
        )  # fmt: skip
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        raise FormatError(f"malformed SEAL payload: {exc}") from exc
    if not isinstance(info.carry, dict):
        raise FormatError("malformed SEAL payload: carry is not an object")
    return info


@value
class Scan:
    """What :func:`scan` found in one segment (offsets are file offsets)."""

    frames: list[Frame]  # committed EVENT and COMMIT frames at offsets >= report_from
    start: int
    end: int  # file offset of the end of the scanned bytes
    commit_end: int  # just past the last GROUP_END frame (== start if none)
    good_end: int  # just past the last structurally and semantically valid frame
    next_seq: int  # the next EVENT seq after the committed frames
    last_event: Frame | None  # the last committed EVENT frame (any offset)
    seal: Frame | None  # the committed SEAL frame, if the segment is sealed
    index: list[tuple[int, int]]  # sparse (seq, offset) of committed group starts
    status: str = STATUS_CLEAN
    stop: int = -1  # offset D of the first bad frame, -1 if the scan reached the end
    reason: str = ""
    later: int = -1  # offset of a later group's valid GROUP_START frame after D (corrupt)
    dropped_seqs: tuple[int, ...] = ()
    hit_report_from: bool = False  # report_from was the start or a commit boundary
    pending: list[Frame] = field(default_factory=list)
    free: int = 0  # zero bytes after ``end``: space the writer preallocated (never torn)


def scan(
    buf: bytes | memoryview, *, base: int, start: int, next_seq: int, segment: int,
    max_record: int = DEFAULT_MAX_RECORD_BYTES, stride: int = INDEX_STRIDE, report_from: int = 0,
) -> Scan:  # fmt: skip
    """Scan frames from file offset ``start`` in ``buf`` (which holds file bytes from ``base``).

    ``start`` must be a group boundary whose next EVENT seq is ``next_seq``. The result is
    classified: clean, torn (cut back to ``commit_end``), or corrupt (refuse).
    """
    raw = buf if isinstance(buf, bytes) else bytes(buf)
    mv = memoryview(raw)
    out = Scan([], start, base + len(mv), start, start, next_seq, None, None, [(next_seq, start)])
    out.hit_report_from = report_from <= start
    expected, pending, anchor = next_seq, out.pending, next_seq
    pos = start
    while pos < out.end:
        parsed = check_frame(mv, pos - base, base, max_record)
        if isinstance(parsed, str):
            out.stop, out.reason = pos, parsed
            break
        plen, seq, fence, rtype, flags, fend = parsed
        body = pos - base + FRAME_HEADER_SIZE
        frame = Frame(rtype, seq, fence, flags, bytes(mv[body : body + plen]), segment, pos)
        reason = frame_rule(rtype, seq, flags, frame.payload, bool(pending), expected,
                            out.seal is not None)  # fmt: skip
        if reason:
            out.stop, out.reason = pos, reason
            break
        if rtype == RTYPE_EVENT:
            expected += 1
        pending.append(frame)
        pos = out.good_end = fend
        if flags & FLAG_GROUP_END:
            anchor = _commit(out, pending, expected, anchor, stride, report_from)
            out.commit_end = fend
    if out.stop == out.commit_end and is_zero(raw, out.stop - base, len(raw)):
        out.free, out.end, out.stop, out.reason = out.end - out.stop, out.stop, -1, ""
    _classify(out, raw, base, max_record)
    if out.status == STATUS_TORN:
        out.end = max(out.good_end, base + data_end(raw, out.commit_end - base))
    return out


def is_zero(buf: bytes | bytearray | memoryview, start: int, end: int) -> bool:
    """True when ``buf[start:end]`` holds only zero bytes (free space), at memcmp speed."""
    if start == 0 and end == len(buf) and not isinstance(buf, memoryview):
        return buf == _zeros(end)
    step = 1 << 20
    return all(
        bytes(buf[a : min(a + step, end)]) == _zeros(min(a + step, end) - a)
        for a in range(start, end, step)
    )


def _zeros(n: int) -> bytes:
    """``n`` zero bytes; the common block size is allocated once."""
    return _ZERO_BLOCK if n == len(_ZERO_BLOCK) else bytes(n)


_ZERO_BLOCK = bytes(1 << 20)


def data_end(buf: bytes | bytearray | memoryview, start: int) -> int:
    """Offset in ``buf`` just past its last non-zero byte at or after ``start`` (``start``
    when there is none): where torn bytes end and free space or lost sectors begin."""
    return start + len(bytes(buf[start:]).rstrip(b"\x00"))


def frame_rule(
    rtype: int, seq: int, flags: int, payload: bytes, in_group: bool, expected: int, sealed: bool
) -> str:
    """The rules a structurally valid frame must keep, given the state before it.

    ``in_group``: a group is open (its GROUP_END not yet seen); ``expected``: the next EVENT
    seq; ``sealed``: a SEAL frame was already seen. Returns "" or the broken rule. The
    payload is only looked at for SEAL frames.
    """
    if sealed:
        return "data after SEAL"
    starts = bool(flags & FLAG_GROUP_START)
    if starts == in_group:
        return "GROUP_START out of order"
    if rtype == RTYPE_EVENT:
        return "" if seq == expected else f"seq {seq}, expected {expected}"
    if flags & FLAG_ENCRYPTED:
        return "FLAG_ENCRYPTED on a frame that is not an EVENT"
    if rtype == RTYPE_COMMIT:
        return "" if starts and seq == expected else "misplaced COMMIT frame"
    if rtype == RTYPE_STATE:  # its payload's binding is checked where the chain is known
        return "" if seq == expected else "misplaced STATE frame"
    if rtype == RTYPE_SEAL:
        if flags != SEAL_FLAGS or seq != expected - 1:
            return "misplaced SEAL frame"
        try:
            ok = decode_seal(payload).last_seq == seq
        except FormatError:
            ok = False
        return "" if ok else "malformed SEAL payload"
    return f"unknown record type {rtype}"


def _commit(
    out: Scan, pending: list[Frame], expected: int, anchor: int, stride: int, report_from: int
) -> int:
    """Promote the pending group to committed; returns the new index anchor seq."""
    head = pending[0]
    if head.rtype != RTYPE_SEAL and head.seq - anchor >= stride:
        out.index.append((head.seq, head.offset))
        anchor = head.seq
    for frame in pending:
        if frame.rtype == RTYPE_SEAL:
            out.seal = frame
        else:
            if frame.rtype == RTYPE_EVENT:
                out.last_event = frame
            if frame.offset >= report_from:
                out.frames.append(frame)
    out.next_seq = expected
    if pending[-1].end == report_from:
        out.hit_report_from = True
    pending.clear()
    return anchor


def _classify(out: Scan, raw: bytes, base: int, max_record: int) -> None:
    """Set ``status``, ``later`` and ``dropped_seqs`` once the scan has stopped."""
    dropped = [f.seq for f in out.pending if f.rtype == RTYPE_EVENT]
    if out.stop < 0:
        out.status = STATUS_CLEAN if out.good_end == out.commit_end else STATUS_TORN
        out.dropped_seqs = tuple(dropped)
        return
    if out.reason not in _STRUCTURAL:
        out.status, out.later = STATUS_CORRUPT, out.stop
        return
    mv = memoryview(raw)
    pos = raw.find(FRAME_MAGIC_BYTES, out.stop - base)
    while pos >= 0:
        parsed = check_frame(mv, pos, base, max_record) if (base + pos) % FRAME_ALIGN == 0 else ""
        if not isinstance(parsed, str):
            _, seq, _, rtype, flags, _ = parsed
            if flags & FLAG_GROUP_START and (seq >= out.next_seq or rtype == RTYPE_SEAL):
                out.status, out.later = STATUS_CORRUPT, base + pos
                return
            if rtype == RTYPE_EVENT:
                dropped.append(seq)
        pos = raw.find(FRAME_MAGIC_BYTES, pos + 1)
    out.status = STATUS_TORN
    out.dropped_seqs = tuple(dropped)


def find_seal(tail: bytes, tail_base: int, file_size: int, segment: int) -> Frame | None:
    """Find the SEAL frame that ends exactly at ``file_size`` in ``tail`` (file bytes from
    ``tail_base``), searching backwards; None if ``tail`` holds none."""
    mv = memoryview(tail)
    pos = len(tail) - FRAME_HEADER_SIZE
    pos -= (tail_base + pos) % FRAME_ALIGN
    while pos >= 0:
        if mv[pos : pos + 4] == FRAME_MAGIC_BYTES:
            parsed = check_frame(mv, pos, tail_base, 1 << 62)
            if not isinstance(parsed, str) and parsed[5] == file_size:
                plen, seq, fence, rtype, flags, _ = parsed
                if rtype != RTYPE_SEAL:
                    return None
                body = pos + FRAME_HEADER_SIZE
                return Frame(rtype, seq, fence, flags, bytes(mv[body : body + plen]), segment,
                             tail_base + pos)  # fmt: skip
        pos -= FRAME_ALIGN
    return None


# -- compressed sealed segment (.seg.zst) ------------------------------------------------
CHUNK_TARGET = 1 << 20
"""Raw bytes per compressed chunk (~1 MiB); a chunk always starts at a group boundary."""


def chunk_plan(
    raw: bytes, segment: int, target: int = CHUNK_TARGET
) -> tuple[bytes, list[tuple[int, int]]]:
    """The SEAL payload of sealed segment ``raw`` and its ``(seq, offset)`` chunk cuts.

    Every frame's structure and CRC is checked (the compressed copy then carries zstd
    content checksums, which a batch verify relies on instead of the frame CRCs inside it;
    FORMAT.md 7); the first cut is ``(first_seq, 0)``, the others are group starts at least
    ``target`` bytes apart. FormatError unless ``raw`` is intact and ends with a SEAL.
    """
    first = decode_header(raw).first_seq
    cuts, last_cut, pos, last = [(first, 0)], 0, HEADER_SIZE, (0, 0, 0)
    mv = memoryview(raw)
    while pos < len(raw):
        parsed = check_frame(mv, pos, 0, 1 << 62)
        if isinstance(parsed, str):
            break
        plen, seq, _, rtype, flags, end = parsed
        if rtype != RTYPE_SEAL and flags & FLAG_GROUP_START and pos - last_cut >= target:
            cuts.append((seq, pos))
            last_cut = pos
        last, pos = (pos, plen, rtype), end
    if pos != len(raw) or last[2] != RTYPE_SEAL:
        raise FormatError(f"segment {segment:016x} is not a clean sealed segment")
    body = last[0] + FRAME_HEADER_SIZE
    return raw[body : body + last[1]], cuts


def encode_zst_meta(header_raw: bytes, seal_payload: bytes) -> bytes:
    """The seek-table metadata of a .seg.zst: the 128-byte header copy, then the SEAL payload."""
    return header_raw[:HEADER_SIZE] + seal_payload


def decode_zst_meta(meta: bytes) -> tuple[SegmentHeader, bytes, bytes]:
    """(header, header bytes, SEAL payload) from a .seg.zst's seek-table metadata."""
    header_raw = meta[:HEADER_SIZE]
    return decode_header(header_raw), header_raw, meta[HEADER_SIZE:]


# -- strict reading helpers ---------------------------------------------------------------
