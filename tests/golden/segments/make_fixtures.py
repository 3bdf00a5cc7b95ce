"""Build the golden segment fixtures byte for byte (run once: ``python make_fixtures.py``).

Everything is deterministic: a fixed session id, fixed timestamps, payloads that are
canonical envelopes chained by SHA-256. ``build(case)`` returns ``{file name: bytes}`` with
sealed segments uncompressed; :func:`main` writes them, compressing the segments listed in
``COMPRESSED`` (compressed bytes depend on the zstd version, so the golden test compares
their decompressed content and seek table, not their bytes).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from agentsessions.journal.format import segment as sg
from agentsessions.journal.format import zstdseek

SID = "sess-00112233445566778899aabb"
T_MS = 1_700_000_000_000
CHUNK = 512  # small chunks so the golden .seg.zst holds several
MAX_BYTES = 1500  # segment_max_bytes of the multi-segment fixture
OK_GROUPS = [[1, 2], [3], [4, 5, 6], [7], [8, 9], [10], [11, 12, 13], [14]]
FREE_GROUPS = [[1, 2], [3], [4, 5, 6]]  # one segment with free space after its commits
CASES = (
    "ok",
    "torn-header",
    "torn-payload",
    "bad-crc-mid",
    "sealed-no-successor",
    "torn-group-intact-end",
    "free-space",
    "sealed-free-space",
    "torn-in-free-space",
)
COMPRESSED = {"ok": ["0000000000000001.seg"]}


def payload(seq: int, prev: str) -> bytes:
    """A canonical envelope like the store writes (opaque to the segment layer)."""
    event = {"kind": "MESSAGE", "message": {"role": "user", "text": f"turn {seq} " + "." * 40}}
    body = {"event": event, "prev_hash": prev, "seq": str(seq)}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def chain(upto: int) -> dict[int, tuple[bytes, str]]:
    """seq -> (payload, content hash) for seqs 1..upto."""
    out, prev = {}, ""
    for seq in range(1, upto + 1):
        p = payload(seq, prev)
        prev = hashlib.sha256(p).hexdigest()
        out[seq] = (p, prev)
    return out


def group_frames(group: list[int], events: dict[int, tuple[bytes, str]]) -> list[Any]:
    """A group's frames: a COMMIT frame when its first seq is odd, then its EVENT frames."""
    frames: list[tuple[int, int, int, bytes]] = []
    if group[0] % 2:
        frames.append((sg.RTYPE_COMMIT, group[0], 1, f"commit-{group[0]}".encode()))
    frames += [(sg.RTYPE_EVENT, s, 1, events[s][0]) for s in group]
    return frames


def carry_for(last_seq: int) -> dict[str, Any]:
    """The carry the fixtures seal with (what a store would put there)."""
    return {"commit_ids": [f"commit-{last_seq}"], "projection": {"last_seq": last_seq}}


def free_space_after(end: int, size: int, max_bytes: int) -> int:
    """Zero bytes the writer adds after a group ending at ``end`` in a file of ``size``
    bytes (FORMAT.md section 8): none while a frame header still fits; else up to about
    twice ``end`` (at most 256 KiB more, never past ``max_bytes``) in whole 4 KiB pages."""
    if size - end >= sg.FRAME_HEADER_SIZE:
        return 0
    target = min(end + min(max(end, 4096), 256 << 10), max_bytes)
    target -= target % 4096
    return target - end if target - end >= sg.FRAME_HEADER_SIZE else 0


def build_log(
    groups: list[list[int]], max_bytes: int, *, seal_last: bool = False, free: bool = True
) -> dict:
    """Segments for ``groups`` appended with ``segment_max_bytes = max_bytes``, following
    the log's rotation and free-space rules exactly (so SegmentLog must produce the same
    bytes). ``free=False`` writes no free space, as writers before it did: those journals
    stay valid, and the older fixtures keep their bytes to prove it."""
    events = chain(max(s for g in groups for s in g))
    files: dict[str, bytes] = {}
    first, no, prev, last = 1, 0, "", 0
    body = bytearray(sg.SegmentHeader(SID, first, no, T_MS, prev).encode())
    end = len(body)  # the commit end; body[end:] is free space (zeros)
    for group in groups:
        buf, _, _, _ = sg.encode_group(group_frames(group, events), group[0], 1 << 20)
        if last >= first and end + len(buf) > max_bytes:
            del body[end:]  # a sealed segment ends exactly at its SEAL
            body += seal_frame(first, last, events[last][1], len(body))
            files[sg.segment_name(first)] = bytes(body)
            first, no, prev = last + 1, no + 1, events[last][1]
            body = bytearray(sg.SegmentHeader(SID, first, no, T_MS, prev).encode())
            end = len(body)
        body[end : end + len(buf)] = buf
        end += len(buf)
        body += bytes(free_space_after(end, len(body), max_bytes) if free else 0)
        last = group[-1]
    if seal_last:
        del body[end:]
        body += seal_frame(first, last, events[last][1], len(body))
    files[sg.segment_name(first)] = bytes(body)
    return files


def seal_frame(first: int, last: int, last_hash: str, data_bytes: int) -> bytes:
    info = sg.SealInfo(last, last_hash, last - first + 1, data_bytes, T_MS, carry_for(last))
    return sg.encode_frame(sg.RTYPE_SEAL, last, 1, sg.SEAL_FLAGS, sg.encode_seal(info))


def frame_offsets(raw: bytes) -> list[int]:
    s = sg.scan(raw, base=0, start=sg.HEADER_SIZE, next_seq=1, segment=1, stride=1)
    return [f.offset for f in s.frames]


def build(case: str) -> dict[str, bytes]:
    """The files of fixture ``case`` (sealed segments uncompressed)."""
    name = sg.segment_name(1)
    if case == "ok":
        return build_log(OK_GROUPS, MAX_BYTES)
    if case == "sealed-no-successor":
        return build_log([[1, 2], [3]], 1 << 20, seal_last=True)
    raw = build_log(
        [[1, 2], [3], [4, 5]] if case == "torn-payload" else [[1], [2, 3], [4]],
        1 << 20,
        free=False,
    )
    raw_b = bytearray(raw[name])
    offs = frame_offsets(bytes(raw_b))  # frames incl. COMMIT frames
    if case == "torn-header":
        return {name: bytes(raw_b[:100])}
    if case == "torn-payload":
        return {name: bytes(raw_b[: offs[-1] + 32 + 40])}  # cut inside seq 5's payload
    if case == "bad-crc-mid":
        raw_b[offs[2] + 32 + 10] ^= 0x20  # seq 2's payload; the group of seq 4 follows
        return {name: bytes(raw_b)}
    if case == "torn-group-intact-end":
        raw_b = bytearray(build_log([[1], [2, 3, 4]], 1 << 20, free=False)[name])
        offs = frame_offsets(bytes(raw_b))
        raw_b[offs[3] : offs[3] + 32] = bytes(32)  # header of seq 3; seq 4 (GROUP_END) intact
        return {name: bytes(raw_b)}
    if case == "free-space":
        return build_log(FREE_GROUPS, 1 << 20)
    if case == "sealed-free-space":  # a crash lost the cut that precedes the SEAL
        raw_b = bytearray(build_log([[1, 2], [3]], 1 << 20, seal_last=True)[name])
        return {name: bytes(raw_b + bytes(4096 - len(raw_b)))}
    if case == "torn-in-free-space":  # the first 100 bytes of group [7, 8] landed
        raw_b = bytearray(build_log(FREE_GROUPS, 1 << 20)[name])
        at = free_commit_end()
        events = chain(8)
        torn, _, _, _ = sg.encode_group(group_frames([7, 8], events), 7, 1 << 20)
        raw_b[at : at + 100] = torn[:100]
        return {name: bytes(raw_b)}
    raise KeyError(case)


def free_commit_end() -> int:
    """The commit end of the ``free-space`` fixture (where its free space begins)."""
    raw = build_log(FREE_GROUPS, 1 << 30)[sg.segment_name(1)]
    return len(raw.rstrip(b"\x00")) + (-len(raw.rstrip(b"\x00")) % sg.FRAME_ALIGN)


def compress_segment(raw: bytes) -> bytes:
    """A sealed segment as .seg.zst, with the fixtures' small chunk size."""
    seal, cuts = sg.chunk_plan(raw, sg.decode_header(raw).first_seq, target=CHUNK)
    return zstdseek.encode_seekable(raw, cuts, sg.encode_zst_meta(raw, seal))


def main(root: Path) -> None:
    for case in CASES:
        d = root / case / "journal"
        d.mkdir(parents=True, exist_ok=True)
        for old in d.iterdir():
            old.unlink()
        for fname, data in build(case).items():
            if fname in COMPRESSED.get(case, []):
                (d / (fname + ".zst")).write_bytes(compress_segment(data))
            else:
                (d / fname).write_bytes(data)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
