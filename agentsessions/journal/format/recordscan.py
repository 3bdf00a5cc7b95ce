"""Bulk reading: the EVENT frames of a buffer as Records, without a Frame for each.

``records()`` (:mod:`.segmentrecords`) reads a segment's bytes (a tail's in one read, a
compressed one chunk by chunk) and hands each buffer to :func:`take`. A run of EVENT frames
is walked with the header checks in Python, then its envelopes and chain are checked, and
its Records built, over the whole run in C (``map``, list comparisons, ``tuple.__new__``).
A run that fails any of those checks is taken again by an exact loop that stops at the
frame at fault; anything else (COMMIT, STATE and SEAL frames, sealed records, damage) takes
one strict step (:func:`.segment.check_frame`, :class:`.sf.FrameRules`), which names it.

Invariants:
- every frame is checked as :func:`.sf.parse_frames` checks it: magic, seq, group flag
  order, reserved bits, length, zero padding, and the CRC unless the bytes come from a
  compressed segment, whose zstd content checksum the decoder verified (FORMAT.md 7). A
  run taken in bulk from such bytes skips the zero padding too, as it skips the CRCs: the
  writer checked both (:func:`.segment.chunk_plan`) before compressing, the checksum proves
  every byte unchanged since, and padding carries nothing a record holds (a forged segment
  with bytes there reads the same records; ``verify`` names it);
- every EVENT payload is an envelope ending with its own seq, and its ``prev_hash`` is the
  hash of the event before it (the chain is checked on read) wherever that hash is known:
  computed from the previous payload, or the segment header's ``prev_hash``. A run taken
  in bulk from a compressed segment checks each envelope's start and its link (64
  lowercase hex digits at their place), not the link's key or the seq after it: the
  writer made every envelope (``canonical.envelope``, or an import's check of one), the
  frame CRCs proved them unchanged when it compressed them, and the checksum since, the
  argument that lets such a read derive hashes (below) and skip CRCs. The exact loop,
  which any run failing a check falls to, checks all of it. A forged segment (a valid
  checksum over bytes the writer never made) may read as its frames say, as one whose
  hashes were forged may; ``verify`` names it;
- in a compressed segment (``derive``) an event's ``content_hash`` is the next event's
  ``prev_hash`` (checked to be 64 lowercase hex digits) instead of a SHA-256 of the payload
  on every read. It is the same value: the writer computed that ``prev_hash`` from these
  very bytes (``Record.seal``), it checked every frame before compressing them, and the
  zstd content checksum (XXH64 of every restored byte) proves the bytes unchanged since.
  Damage is found exactly as before (the checksum, as for the frame CRCs it stands for);
  the chain itself is what ``verify`` proves, as before (reads never re-proved it), and
  neither a CRC, a checksum nor an unkeyed hash stops a forger. The last event of the
  segment, and the last one a read returns, are hashed, and the segment's last hash must
  equal its SEAL's ``last_hash``: a read that ends a segment checks the chain's end.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, repeat
from operator import getitem, methodcaller
from typing import Any, cast

from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segment import RTYPE_EVENT, RTYPE_SEAL, Frame

Convert = Callable[[Frame], Record]
"""Turns an EVENT frame the loop does not take (a sealed record, say) into its Record."""

_HEAD = struct.Struct("<IIQQII")  # magic, payload_len, seq, fence, kind word, frame_crc
_IN = 1 << 32  # "a group is open", above every 32-bit kind word
_EVENT_NEXT = {0x601: 0, 0x201: _IN, 0x001 | _IN: _IN, 0x401 | _IN: 0}
"""kind | group state -> group state after a plain EVENT frame that keeps the group rules
(the kind word is header bytes [24, 28): ``rtype | rflags << 8 | reserved << 16``)."""
_PREFIX = b'{"event":{'
_PREV_KEY = b'},"prev_hash":"'
_HEX = b"0123456789abcdef"
_TAIL = b'","seq":"%d"}'  # the envelope's end after the link (canonical.envelope)
_HEXDIGEST = methodcaller("hexdigest")
_CUT = cast(Callable[[bytes, slice], bytes], getitem)  # payload[a:b], called from C by map
_PADS = tuple(bytes(n) for n in range(sg.FRAME_ALIGN))
_NEW: Callable[[type[Record], Iterable[Any]], Record] = tuple.__new__
"""Builds a Record from a tuple of its fields without the NamedTuple's Python ``__new__``."""


class RecordScan:
    """Running state of a bulk read of one segment from a group boundary."""

    __slots__ = ("convert", "derive", "first", "hi", "lo", "out", "pending", "prev", "rules")

    def __init__(
        self, first: int, expected: int, prev: str | None, lo: int, hi: int,
        convert: Convert, derive: bool,
    ) -> None:  # fmt: skip
        self.first = first  # the segment's first seq (its name)
        self.rules = sf.FrameRules(expected)
        # hex of the last EVENT's hash, when known: the next event must name it
        self.prev = prev.encode() if prev is not None else None
        self.lo, self.hi = lo, hi
        self.convert = convert
        self.derive = derive
        # what was taken since the last batch: Records, and runs of them still to be built
        self.out: list[Iterable[Record]] = []
        self.pending: tuple[int, str, int, bytes] | None = None  # derive: awaits its hash

    def settle(self, content_hash: str | None) -> None:
        """Emit the pending event with ``content_hash`` (None: hash its payload)."""
        if self.pending is None:
            return
        seq, prev, fence, payload = self.pending
        self.pending = None
        digest = content_hash or hashlib.sha256(payload).hexdigest()
        self.prev = digest.encode()
        if seq >= self.lo:
            self.out.append((Record(seq, prev, digest, fence, payload),))

    def batch(self) -> Iterator[Record]:
        """The records taken since the last batch. A run's Records are built as they are
        iterated, from its checked columns: a reader that drops each one in turn never
        holds a whole segment's, which would only be so many more objects for the
        collector to count and scan (a conversation's load ran ~14 collections for them)."""
        out, self.out = self.out, []
        return chain.from_iterable(out)

    def done(self) -> bool:
        """Whether every event up to ``hi`` has been taken."""
        return self.rules.expected > self.hi


def take(
    buf: bytes, pos: int, end: int, base: int, st: RecordScan, max_record: int, crc: bool
) -> tuple[int, str]:
    """Take the frames of ``buf[pos:end]`` (``buf[0]`` is file offset ``base``) into ``st``.

    Returns (where it stopped, "" or why): "" at ``end`` or once ``st.hi`` is reached; a
    reason in :data:`.sf.INCOMPLETE` only means the buffer cuts the frame there.
    """
    while pos < end and not st.done() and not st.rules.sealed:
        pos = _bulk_events(buf, pos, end, st, max_record, crc)
        pos = _events(buf, pos, end, st, max_record, crc)  # what the bulk pass left, exactly
        if pos >= end or st.done():
            break
        why = _step(buf, pos, end, base, st, max_record, crc)
        if isinstance(why, str):
            return pos, why
        pos = why
    return pos, ""


def _walk(
    buf: bytes, pos: int, end: int, st: RecordScan, max_record: int, crc: bool
) -> tuple[list[int], list[bytes], int, int, int]:
    """The run of intact plain EVENT frames in their place from ``pos`` (up to seq ``hi``):
    their fences and payloads, where it ends, the next seq and group state (the run's seqs
    are the ones from ``st.rules.expected`` to that next seq: each was checked)."""
    unpack, crc32, mv, startswith = _HEAD.unpack_from, zlib.crc32, memoryview(buf), buf.startswith
    nexts, pads, magic_ok = _EVENT_NEXT, _PADS, sg.FRAME_MAGIC
    expected, hi = st.rules.expected, st.hi
    group = _IN if st.rules.in_group else 0
    fences: list[int] = []
    payloads: list[bytes] = []
    put_fence, put = fences.append, payloads.append
    limit = end - sg.FRAME_HEADER_SIZE
    while pos <= limit and expected <= hi:
        magic, plen, seq, fence, kind, stored = unpack(buf, pos)
        body = pos + sg.FRAME_HEADER_SIZE
        stop = body + plen
        fend = stop + (-plen & 7)
        try:  # a subscript, not .get: no method call on the hot path
            after = nexts[kind | group]
        except KeyError:
            break  # not a plain EVENT frame keeping the group rules
        if magic != magic_ok or seq != expected or fend > end or plen > max_record:
            break
        # restored bytes (crc False): the zstd checksum stands for both (see the module)
        if crc and (
            crc32(mv[body:stop], crc32(mv[pos + 4 : pos + 28])) != stored
            or (fend != stop and not startswith(pads[fend - stop], stop))
        ):
            break
        put_fence(fence)
        put(buf[body:stop])
        expected, group, pos = seq + 1, after, fend
    return fences, payloads, pos, expected, group


def _links(seqs: list[int], payloads: list[bytes], whole: bool = True) -> list[str] | None:
    """Each payload's ``prev_hash`` if every one is an envelope ending with its own seq and a
    64-hex-digit link (checked in C over the whole run), else None; ``whole`` False: only
    the envelope's start and the link (bytes the writer made, see the module)."""
    links: list[str] = []
    start = 0
    while start < len(seqs):  # one stretch per width of the seq (1..9, 10..99, ...)
        width = len(str(seqs[start]))
        stop = min(len(seqs), 10**width - seqs[start] + start)  # seqs are consecutive
        part = _same_width_links(seqs[start:stop], payloads[start:stop], width, whole)
        if part is None:
            return None
        links += part
        start = stop
    return links


def _same_width_links(
    seqs: list[int], payloads: list[bytes], digits: int, whole: bool
) -> list[str] | None:
    """:func:`_links` over a stretch whose seqs all have ``digits`` digits, so that the
    envelope's tail, and the link before it, sit at the same distance from every end.

    Each part is cut from every payload and the cuts joined, then compared once with what
    they must be: one C pass and one comparison per part, not a call per payload. A payload
    too short for a part gives a shorter cut, so the joined bytes differ; a link cut from
    one too short to hold it after the start would hold the start's last byte, a ``{``."""
    n, size = len(seqs), 11 + digits  # len(b'","seq":"%d"}' % seq)
    if not all(map(bytes.startswith, payloads, repeat(_PREFIX))):
        return None
    if whole:
        tails = map(_CUT, payloads, repeat(slice(-size, None)))
        if b"".join(tails) != (_TAIL * n) % tuple(seqs):
            return None
        keys = map(_CUT, payloads, repeat(slice(-(size + 79), -(size + 64))))
        if b"".join(keys) != _PREV_KEY * n:
            return None
    # the links joined by a comma, a byte no link may hold: n - 1 of them and nothing but
    # hex digits besides, in 65n - 1 bytes, is n links of exactly 64 digits each
    joined = b",".join(map(_CUT, payloads, repeat(slice(-(size + 64), -size))))
    if len(joined) != 65 * n - 1 or joined.translate(None, _HEX) != b"," * (n - 1):
        return None
    return joined.decode().split(",")  # one decode and one split, not n decodes


def _bulk_events(buf: bytes, pos: int, end: int, st: RecordScan, max_record: int, crc: bool) -> int:
    """Take a run of EVENT frames with its envelope and chain checks done in C; where it
    ends, or ``pos`` (nothing taken) if any check fails: the exact loop then names it."""
    if st.prev == b"":
        return pos  # the session's first event links to nothing: the exact step takes it
    first = st.rules.expected
    fences, payloads, stop, expected, group = _walk(buf, pos, end, st, max_record, crc)
    if not payloads:
        return pos
    seqs = list(range(first, expected))
    links = _links(seqs, payloads, whole=not st.derive)
    if links is None or (st.prev is not None and links[0].encode() != st.prev):
        return pos
    if st.derive:
        hashes = links[1:]
        if seqs[-1] == st.hi:
            hashes.append(hashlib.sha256(payloads[-1]).hexdigest())
    else:
        hashes = list(map(_HEXDIGEST, map(hashlib.sha256, payloads)))
        if links[1:] != hashes[:-1]:
            return pos  # a link that does not continue the chain
    st.rules.expected, st.rules.in_group = expected, bool(group)
    if st.derive:
        st.settle(links[0])
        if len(hashes) < len(seqs):
            st.pending = (seqs[-1], links[-1], fences[-1], payloads[-1])
    st.prev = hashes[-1].encode() if len(hashes) == len(seqs) else None
    skip = max(st.lo - seqs[0], 0)
    columns = (seqs[skip:], links[skip:], hashes[skip:], fences[skip:], payloads[skip:])
    # a pending last event has no hash yet: zip stops before it
    st.out.append(map(_NEW, repeat(Record), zip(*columns, strict=False)))
    return stop


def _events(buf: bytes, pos: int, end: int, st: RecordScan, max_record: int, crc: bool) -> int:
    """The hot loop: intact plain EVENT frames in their place; stops at anything else."""
    rules = st.rules
    unpack, crc32, sha256, mv = _HEAD.unpack_from, zlib.crc32, hashlib.sha256, memoryview(buf)
    nexts, pads, magic_ok = _EVENT_NEXT, _PADS, sg.FRAME_MAGIC
    expected, prev, hi, derive = rules.expected, st.prev, st.hi, st.derive
    group = _IN if rules.in_group else 0
    limit = end - sg.FRAME_HEADER_SIZE
    rows: list[Any] = []  # seq, prev_hash, fence, payload of each event, flat
    put = rows.extend
    digests: list[str] = []  # the hashes computed (derive: only the one of seq hi)
    while pos <= limit and expected <= hi:
        magic, plen, seq, fence, kind, stored = unpack(buf, pos)
        body = pos + sg.FRAME_HEADER_SIZE
        stop = body + plen
        fend = stop + (-plen & 7)
        after = nexts.get(kind | group)
        if after is None or magic != magic_ok or seq != expected or fend > end or plen > max_record:
            break
        if crc and crc32(mv[body:stop], crc32(mv[pos + 4 : pos + 28])) != stored:
            break
        if fend != stop and not buf.startswith(pads[fend - stop], stop):
            break
        payload = buf[body:stop]
        tail = b'","seq":"%d"}' % seq
        cut = plen - len(tail) - 79  # where '},"prev_hash":"' starts
        link = payload[cut + 15 : cut + 79]
        if not (
            cut >= len(_PREFIX)
            and payload.endswith(tail)
            and payload.startswith(_PREFIX)
            and payload.startswith(_PREV_KEY, cut)
            and (link == prev if prev is not None else not link.translate(None, _HEX))
        ):
            break
        put((seq, link.decode(), fence, payload))
        if derive and seq != hi:
            prev = None  # this event's hash is the next one's link
        else:
            digest = sha256(payload).hexdigest()
            digests.append(digest)
            prev = digest.encode()
        expected, group, pos = seq + 1, after, fend
    rules.expected, rules.in_group = expected, bool(group)
    if rows:
        _emit(st, rows, digests)
    st.prev = prev
    return pos


def _emit(st: RecordScan, rows: list[Any], digests: list[str]) -> None:
    """Build the Records of ``rows`` in C (columns zipped into tuples), after any pending one."""
    seqs, links, fences, payloads = rows[0::4], rows[1::4], rows[2::4], rows[3::4]
    hashes = digests
    if st.derive:
        st.settle(links[0])
        hashes = links[1:] + digests  # the last one, unless hashed, waits for the next link
        if not digests:
            st.pending = (seqs[-1], links[-1], fences[-1], payloads[-1])
    skip = max(st.lo - seqs[0], 0)
    columns = (seqs[skip:], links[skip:], hashes[skip:], fences[skip:], payloads[skip:])
    # a pending last event has no hash yet: zip stops before it
    st.out.append(map(_NEW, repeat(Record), zip(*columns, strict=False)))


def _step(
    buf: bytes, pos: int, end: int, base: int, st: RecordScan, max_record: int, crc: bool
) -> int | str:
    """Take the one frame at ``buf[pos]`` as the strict reader would; its end, or why not."""
    parsed = sg.check_frame(memoryview(buf)[:end], pos, base, max_record, crc)
    if isinstance(parsed, str):
        return parsed
    plen, seq, fence, rtype, flags, fend = parsed
    body = pos + sg.FRAME_HEADER_SIZE
    payload = buf[body : body + plen]
    why = st.rules.check(rtype, seq, flags, payload)
    if why:
        return why
    frame = Frame(rtype, seq, fence, flags, payload, st.first, base + pos)
    if rtype == RTYPE_EVENT:
        record = st.convert(frame)
        if st.prev is not None and record.prev_hash.encode() != st.prev:
            return f"seq {seq} does not continue the chain"
        st.settle(record.prev_hash)
        if seq >= st.lo:
            st.out.append((record,))
        st.prev = record.content_hash.encode()
    elif rtype == RTYPE_SEAL:
        st.settle(None)
        if st.prev is not None:  # the chain was followed to here: it must end as sealed
            why = sf.seal_problem(st.first, frame, st.prev.decode())
            if why:
                return why
    return fend - base
