"""Unit tests for the segment codec: header, frames, SEAL, scan classification, helpers."""

from __future__ import annotations

import hashlib
import json
import struct

import pytest

from agentsessions.errors import FormatError, InvalidArgumentError
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import segmentframes as sf

SID = "sess-00112233445566778899aabb"


def _payload(seq: int, size: int = 60) -> bytes:
    body = json.dumps({"event": {"n": seq, "pad": "x" * size}, "seq": str(seq)}, sort_keys=True)
    return body.encode()


def _segment(groups: list[list[int]], first: int = 1, *, commit: bool = False) -> bytes:
    """A segment holding ``groups`` of EVENT seqs (optionally each led by a COMMIT frame)."""
    header = sg.SegmentHeader(SID, first, 0, 1_700_000_000_000, "")
    out = [header.encode()]
    for group in groups:
        frames = [(sg.RTYPE_COMMIT, group[0], 7, b"cid")] if commit else []
        frames += [(sg.RTYPE_EVENT, s, 7, _payload(s)) for s in group]
        buf, _, _, _ = sg.encode_group(frames, group[0], 1 << 20)
        out.append(buf)
    return b"".join(out)


def _scan(raw: bytes, first: int = 1) -> sg.Scan:
    return sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=first, segment=first)


def _offsets(raw: bytes) -> list[int]:
    """Offsets of every frame in a clean segment."""
    s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=1, segment=1, stride=1)
    return [f.offset for f in s.frames]


# -- header ------------------------------------------------------------------------------
def test_header_round_trip_and_layout() -> None:
    h = sg.SegmentHeader(SID, 42, 3, 1_700_000_000_123, "ab" * 32)
    raw = h.encode()
    assert len(raw) == sg.HEADER_SIZE == sg.HEADER_STRUCT.size
    assert raw[:8] == b"AGSJSEG\x00"
    assert raw[16:28] == bytes.fromhex("00112233445566778899aabb") and raw[28:32] == bytes(4)
    assert struct.unpack_from("<Q", raw, 32)[0] == 42
    assert raw[56:88] == bytes.fromhex("ab" * 32)
    assert sg.decode_header(raw) == h


def test_header_empty_prev_hash_is_zero_bytes() -> None:
    raw = sg.SegmentHeader(SID, 1, 0, 0, "").encode()
    assert raw[56:88] == bytes(32)
    assert sg.decode_header(raw).prev_hash == ""


@pytest.mark.parametrize("pos", [0, 9, 15, 30, 44, 100, 124])
def test_header_damage_is_detected(pos: int) -> None:
    raw = bytearray(sg.SegmentHeader(SID, 1, 0, 0, "").encode())
    raw[pos] ^= 0x01
    with pytest.raises(FormatError):
        sg.decode_header(bytes(raw))


def test_header_short_is_refused() -> None:
    with pytest.raises(FormatError, match="128"):
        sg.decode_header(sg.SegmentHeader(SID, 1, 0, 0, "").encode()[:100])


@pytest.mark.parametrize("bad", ["sess-0011", "sess-00112233445566778899AABB", "x" * 29, ""])
def test_bad_session_ids_are_usage_errors(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        sg.session_bytes(bad)


def test_hash_helpers() -> None:
    assert sg.hash_bytes("") == bytes(32)
    with pytest.raises(InvalidArgumentError):
        sg.hash_bytes("AB" * 32)
    with pytest.raises(InvalidArgumentError):
        sg.hash_bytes("ab" * 31)
    assert sg.content_hash(b"x") == hashlib.sha256(b"x").hexdigest()
    assert sg.segment_name(0x4A2) == "00000000000004a2.seg"
    assert sg.segment_name(1, compressed=True) == "0000000000000001.seg.zst"


# -- frames --------------------------------------------------------------------------------
def test_frame_layout_alignment_and_crc() -> None:
    payload = b'{"a":1}'
    raw = sg.encode_frame(sg.RTYPE_EVENT, 5, 9, sg.FLAG_GROUP_START, payload)
    assert len(raw) % 8 == 0 and len(raw) == 32 + 8
    magic, plen, seq, fence, rtype, flags, reserved, crc = sg.FRAME_STRUCT.unpack_from(raw)
    assert raw[:4] == b"JREC" and magic == sg.FRAME_MAGIC
    assert (plen, seq, fence, rtype, flags, reserved) == (7, 5, 9, 1, 2, 0)
    assert crc == __import__("zlib").crc32(raw[4:28] + payload)
    assert raw[39:] == b"\x00"


@pytest.mark.parametrize("pos", range(4, 28))
def test_crc_covers_every_header_field(pos: int) -> None:
    raw = bytearray(sg.encode_frame(sg.RTYPE_EVENT, 5, 9, sg.FLAG_GROUP_START, b"{}"))
    raw[pos] ^= 0x10
    assert isinstance(sg.check_frame(memoryview(bytes(raw)), 0, 0, 1 << 20), str)


def test_check_frame_reasons() -> None:
    good = sg.encode_frame(sg.RTYPE_EVENT, 1, 0, sg.SEAL_FLAGS, b"{}")
    mv = memoryview
    assert sg.check_frame(mv(good), 0, 100, 1 << 20) == (2, 1, 0, 1, 6, 140)
    assert sg.check_frame(mv(good[:20]), 0, 0, 1 << 20) == "short frame header"
    assert sg.check_frame(mv(good[:35]), 0, 0, 1 << 20) == "frame past end of file"
    assert sg.check_frame(mv(b"XXXX" + good[4:]), 0, 0, 1 << 20) == "bad frame magic"
    assert sg.check_frame(mv(good[:-1] + b"\x01"), 0, 0, 1 << 20) == "non-zero padding"
    flagged = sg.encode_frame(sg.RTYPE_EVENT, 1, 0, sg.FLAG_COMPRESSED, b"{}")
    assert sg.check_frame(mv(flagged), 0, 0, 1 << 20) == "reserved bits set"
    big = sg.encode_frame(sg.RTYPE_EVENT, 1, 0, sg.SEAL_FLAGS, b"x" * 100)
    # intact but over this reader's limit: a distinct, non-structural reason
    assert "over max_record_bytes" in str(sg.check_frame(mv(big), 0, 0, 50))
    assert sg.check_frame(mv(big[:60]), 0, 0, 50) == "payload too long"


def test_encode_group_flags_and_validation() -> None:
    frames = [(sg.RTYPE_COMMIT, 3, 1, b"c"), (sg.RTYPE_EVENT, 3, 1, b"a"), (1, 4, 1, b"b")]
    buf, nxt, last_rel, last = sg.encode_group(frames, 3, 100)
    assert nxt == 5 and last == b"b"
    s = sg.scan(sg.SegmentHeader(SID, 3, 0, 0, "").encode() + buf, base=0, start=128,
                next_seq=3, segment=3, stride=1)  # fmt: skip
    assert [(f.rtype, f.seq, f.flags) for f in s.frames] == [(3, 3, 2), (1, 3, 0), (1, 4, 4)]
    assert s.frames[-1].offset == 128 + last_rel
    one, _, _, _ = sg.encode_group([(sg.RTYPE_EVENT, 3, 0, b"x")], 3, 100)
    assert one[24:26] == bytes([sg.RTYPE_EVENT, sg.SEAL_FLAGS])
    bad = [
        [],
        [(sg.RTYPE_EVENT, 4, 0, b"x")],
        [(sg.RTYPE_EVENT, 3, 0, b"x"), (sg.RTYPE_COMMIT, 4, 0, b"c")],
        [(sg.RTYPE_SEAL, 2, 0, b"{}")],
        [(sg.RTYPE_STATE, 4, 0, b"{}")],
        [(sg.RTYPE_EVENT, 3, 0, b"x"), (sg.RTYPE_STATE, 4, 0, b"s")],
        [(sg.RTYPE_COMMIT, 3, 0, b"c"), (sg.RTYPE_EVENT, 3, 0, b"x"), (sg.RTYPE_STATE, 4, 0, b"")],
        [(sg.RTYPE_EVENT, 3, -1, b"x")],
        [(sg.RTYPE_EVENT, 3, 0, "text")],
        [(sg.RTYPE_EVENT, 3, 0, b"x" * 101)],
    ]
    for frames_ in bad:
        with pytest.raises(InvalidArgumentError):
            sg.encode_group(frames_, 3, 100)  # type: ignore[arg-type]


def test_seal_payload_round_trip() -> None:
    info = sg.SealInfo(9, "ab" * 32, 9, 4096, 1_700_000_000_000, {"k": [1, 2]})
    raw = sg.encode_seal(info)
    assert json.loads(raw)["carry"] == {"k": [1, 2]}
    assert sg.decode_seal(raw) == info
    with pytest.raises(FormatError):
        sg.decode_seal(b'{"last_seq":1}')
    with pytest.raises(InvalidArgumentError):
        sg.encode_seal(sg.SealInfo(1, "", 1, 1, 1, {"x": object()}))


# -- scan classification ---------------------------------------------------------------------
def test_scan_clean_with_commit_frames() -> None:
    raw = _segment([[1, 2], [3], [4, 5, 6]], commit=True)
    s = _scan(raw)
    assert s.status == sg.STATUS_CLEAN and s.commit_end == len(raw) == s.good_end
    assert s.next_seq == 7 and s.last_event is not None and s.last_event.seq == 6
    assert [f.rtype for f in s.frames].count(sg.RTYPE_COMMIT) == 3


def test_scan_missing_group_end_is_torn() -> None:
    raw = _segment([[1, 2], [3, 4, 5]])
    last_frame = _offsets(raw)[-1]
    s = _scan(raw[:last_frame])
    assert s.status == sg.STATUS_TORN and s.stop == -1
    assert s.next_seq == 3 and s.dropped_seqs == (3, 4)
    assert s.commit_end == _offsets(raw)[2]


@pytest.mark.parametrize("cut", [1, 31, 33, 50])
def test_scan_cut_inside_a_frame_is_torn(cut: int) -> None:
    raw = _segment([[1, 2], [3, 4]])
    offs = _offsets(raw)
    s = _scan(raw[: offs[3] + cut])
    assert s.status == sg.STATUS_TORN and s.commit_end == offs[2] and s.dropped_seqs == (3,)


def test_torn_group_with_intact_group_end_is_cut_whole() -> None:
    raw = bytearray(_segment([[1], [2, 3, 4]]))
    offs = _offsets(bytes(raw))
    raw[offs[2] : offs[2] + 32] = bytes(32)  # the middle frame of the last group
    s = _scan(bytes(raw))
    assert s.status == sg.STATUS_TORN
    assert s.commit_end == offs[1] and s.next_seq == 2
    assert s.dropped_seqs == (2, 4)  # valid frames of the torn group, before and after D


def test_damage_before_a_later_group_is_corruption() -> None:
    raw = bytearray(_segment([[1], [2, 3], [4]]))
    offs = _offsets(bytes(raw))
    raw[offs[2] + 40] ^= 0xFF  # payload byte of seq 3: CRC mismatch
    s = _scan(bytes(raw))
    assert s.status == sg.STATUS_CORRUPT and s.stop == offs[2] and s.later == offs[3]


def test_crc_valid_rule_breaks_are_corruption_not_tears() -> None:
    header = sg.SegmentHeader(SID, 1, 0, 0, "").encode()
    one = sg.encode_frame(sg.RTYPE_EVENT, 1, 0, sg.SEAL_FLAGS, b"{}")
    gap = sg.encode_frame(sg.RTYPE_EVENT, 3, 0, sg.SEAL_FLAGS, b"{}")
    assert _scan(header + one + gap).status == sg.STATUS_CORRUPT
    nostart = sg.encode_frame(sg.RTYPE_EVENT, 2, 0, sg.FLAG_GROUP_END, b"{}")
    s = _scan(header + one + nostart)
    assert s.status == sg.STATUS_CORRUPT and "GROUP_START" in s.reason
    misplaced = sg.encode_frame(sg.RTYPE_STATE, 1, 0, sg.SEAL_FLAGS, b"{}")
    s = _scan(header + one + misplaced)
    assert s.status == sg.STATUS_CORRUPT and "misplaced STATE" in s.reason
    future = sg.encode_frame(5, 2, 0, sg.SEAL_FLAGS, b"{}")
    assert _scan(header + one + future).status == sg.STATUS_CORRUPT


def test_a_state_frame_leads_its_group_and_consumes_no_seq() -> None:
    buf, nxt, last_rel, _ = sg.encode_group(
        [(sg.RTYPE_COMMIT, 3, 0, b"c"), (sg.RTYPE_STATE, 3, 0, b"s"), (sg.RTYPE_EVENT, 3, 0, b"x")],
        3, 100,
    )  # fmt: skip
    assert nxt == 4 and last_rel == 2 * 40
    only, nxt, last_rel, _ = sg.encode_group([(sg.RTYPE_STATE, 4, 0, b"s")], 4, 100)
    assert nxt == 4 and last_rel == -1
    s = sg.scan(sg.SegmentHeader(SID, 3, 0, 0, "").encode() + buf + only, base=0, start=128,
                next_seq=3, segment=3)  # fmt: skip
    assert s.status == sg.STATUS_CLEAN and s.next_seq == 4
    assert [f.rtype for f in s.frames] == [3, 4, 1, 4]


def test_sealed_segment_and_data_after_seal() -> None:
    raw = _segment([[1, 2]])
    seal = sg.encode_frame(sg.RTYPE_SEAL, 2, 0, sg.SEAL_FLAGS,
                           sg.encode_seal(sg.SealInfo(2, "", 2, len(raw), 0, {})))  # fmt: skip
    s = _scan(raw + seal)
    assert s.status == sg.STATUS_CLEAN and s.seal is not None and s.seal.offset == len(raw)
    extra = sg.encode_frame(sg.RTYPE_EVENT, 3, 0, sg.SEAL_FLAGS, b"{}")
    assert _scan(raw + seal + extra).status == sg.STATUS_CORRUPT
    wrong = sg.encode_frame(sg.RTYPE_SEAL, 1, 0, sg.SEAL_FLAGS, sg.encode_seal(
        sg.SealInfo(1, "", 1, 0, 0, {})))  # fmt: skip
    assert _scan(raw + wrong).status == sg.STATUS_CORRUPT
    found = sg.find_seal((raw + seal)[200:], 200, len(raw + seal), 1)
    assert found is not None and found.payload == s.seal.payload
    assert sg.find_seal(raw[200:], 200, len(raw), 1) is None


def test_resume_style_scan_reports_from_a_boundary() -> None:
    raw = _segment([[1], [2], [3, 4]])
    offs = _offsets(raw)
    s = sg.scan(raw[offs[0] :], base=offs[0], start=offs[1], next_seq=2, segment=1,
                report_from=offs[2])  # fmt: skip
    assert s.hit_report_from and [f.seq for f in s.frames] == [3, 4]
    s = sg.scan(raw[offs[0] :], base=offs[0], start=offs[1], next_seq=2, segment=1,
                report_from=offs[3])  # fmt: skip
    assert not s.hit_report_from  # inside a group: not a valid hint


# -- helpers for reading ----------------------------------------------------------------------
def test_sparse_index_floor_and_note() -> None:
    idx = sf.SparseIndex([(1, 128)])
    for seq in range(1, 2000, 7):
        idx.note(seq, 128 + seq * 10)
    gaps = [b - a for a, b in zip(idx.seqs, idx.seqs[1:], strict=False)]
    assert all(g >= sg.INDEX_STRIDE for g in gaps)
    assert idx.offs == sorted(idx.offs)
    for want in (1, 300, 1999):
        seq, off = idx.floor(want)
        assert seq <= want and off == (128 if seq == 1 else 128 + seq * 10)


def test_parse_frames_stops_at_incomplete_and_at_rule_breaks() -> None:
    raw = _segment([[1, 2], [3]])

    def run(
        buf: bytes, base: int, rules: sf.FrameRules, skip: int = 0
    ) -> tuple[list[int], int, str]:
        gen = sf.parse_frames(buf, base, 1, rules, None, 1 << 20, skip)
        seen: list[int] = []
        while True:
            try:
                seen.append(next(gen).seq)
            except StopIteration as stop:
                return seen, *stop.value

    rules = sf.FrameRules(1)
    seen, used, why = run(raw[128:-5], 128, rules)
    assert why in sf.INCOMPLETE and seen == [1, 2]
    seen, _, why = run(raw[128 + used :], 128 + used, rules)
    assert why == "" and seen == [3]
    seen, used, why = run(raw[128:], 128, sf.FrameRules(5))
    assert seen == [] and used == 0 and "expected 5" in why
    assert run(raw[128:], 128, sf.FrameRules(1), skip=3)[0] == [3]  # 1 and 2 passed over


def test_chunk_plan_cuts_at_group_starts() -> None:
    groups = [[s, s + 1] for s in range(1, 200, 2)]
    raw = _segment(groups)
    seal = sg.encode_frame(sg.RTYPE_SEAL, 200, 0, sg.SEAL_FLAGS,
                           sg.encode_seal(sg.SealInfo(200, "", 200, len(raw), 0, {})))  # fmt: skip
    payload, cuts = sg.chunk_plan(raw + seal, 1, target=2048)
    assert cuts[0] == (1, 0) and len(cuts) > 3 and sg.decode_seal(payload).last_seq == 200
    s = _scan(raw)
    starts = {f.offset: f.seq for f in s.frames if f.flags & sg.FLAG_GROUP_START}
    for seq, off in cuts[1:]:
        assert starts[off] == seq and off - 2048 >= 0
    with pytest.raises(FormatError):
        sg.chunk_plan(raw, 1)  # not sealed
    with pytest.raises(FormatError):
        sg.chunk_plan(raw + seal + b"\0" * 8, 1)
