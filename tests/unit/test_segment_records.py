"""The bulk record reader (SegmentLog.records, the file store's read): the same records as the
frame reader, true hashes (derived ones included), and damage refused as before."""

from __future__ import annotations

import gc
import hashlib
import os
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from needs import need_zstd

from agentsessions.errors import FormatError, JournalCorruptError
from agentsessions.journal.format import recordscan, zstdcodec, zstdseek
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.file.writer import frame_record, frame_records
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_dir
from agentsessions.v1 import construct


@pytest.fixture(autouse=True)
def _zstd() -> None:
    need_zstd()


def _event(i: int) -> dict[str, object]:
    text = f"turn {i}: " + "lorem ipsum dolor sit amet " * (i % 7 + 1)
    return construct.input_event(construct.text_message("user", text), execution_id=f"{i:016x}")


def _store(home: Path, segment_max: int) -> FileStore:
    return FileStore(home, options=StoreOptions(segment_max_bytes=segment_max))


def _session(store: FileStore, groups: int = 120) -> str:
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as w:
        for g in range(groups):  # groups of 1..3 events, one commit id every few
            size = g % 3 + 1
            commit_id = f"c{g}" if g % 4 == 0 else None
            w.append([_event(3 * g + k) for k in range(size)], commit_id=commit_id)
    return uid


def _journal(store: FileStore, uid: str) -> Path:
    return store.home / "sessions" / uid / "journal"


def _frame_read(store: FileStore, uid: str, lo: int = 1, hi: int = 0) -> list[Record]:
    log, _ = SegmentLog.open(_journal(store, uid), session_id=uid, writable=False)
    return list(frame_records(log, log.read(lo, hi), close=True))


def test_bulk_read_equals_the_frame_reader_on_every_range(tmp_path: Path) -> None:
    store = _store(tmp_path / "home", 4096)
    uid = _session(store)
    names = sorted(os.listdir(_journal(store, uid)))
    assert sum(n.endswith(".seg.zst") for n in names) >= 5 and names[-1].endswith(".seg")
    everything = _frame_read(store, uid)
    head = everything[-1].seq
    tail_first = int(names[-1].split(".")[0], 16)
    ranges = [(1, 0), (1, 1), (2, 5), (head, head), (tail_first, 0), (tail_first - 1, 0)]
    ranges += [(s, s + k) for s in (3, 40, head // 2) for k in (0, 1, 17)]
    for lo, hi in ranges:
        assert list(store.read(uid, lo, hi)) == _frame_read(store, uid, lo, hi), (lo, hi)
    records = list(store.read(uid))
    assert records == everything and [r.seq for r in records] == list(range(1, head + 1))
    for before, record in zip([None, *records], records, strict=False):
        assert record.content_hash == hashlib.sha256(record.payload).hexdigest()
        assert record.prev_hash == (before.content_hash if before else "")


@pytest.mark.parametrize("segment_max", [4096, 16 << 20], ids=["compressed", "one tail"])
def test_runs_under_several_writers_keep_each_records_fence(
    tmp_path: Path, segment_max: int
) -> None:
    """The bulk walk takes one writer's frames at a time: a takeover starts the next run,
    and every record keeps the fence it was written under."""
    store = _store(tmp_path / "home", segment_max)
    uid = store.create(SessionMeta(uid=new_uid())).uid
    for turn in range(6):  # each writer opened anew takes a higher fence
        with store.writer(uid) as w:
            for g in range(15):
                w.append([_event(100 * turn + 2 * g + k) for k in range(g % 2 + 1)])
    records = list(store.read(uid))
    assert records == _frame_read(store, uid)
    fences = [r.fence for r in records]
    assert len(set(fences)) == 6 and fences == sorted(fences)
    for lo in (1, 30, len(records) // 2):
        assert list(store.read(uid, lo, 0)) == _frame_read(store, uid, lo, 0), lo


def _records_alive() -> int:
    return sum(type(o) is Record for o in gc.get_objects())


@pytest.mark.parametrize("segment_max", [4096, 16 << 20], ids=["compressed", "one tail"])
def test_a_reader_that_drops_each_record_never_holds_a_batch(
    tmp_path: Path, segment_max: int
) -> None:
    """A batch's Records are built as they are iterated, not all at once: a whole segment's
    held together are only more objects for the collector (a conversation's load ran ~14
    more collections). The collector is paused so that none of them is untracked (and so
    hidden from gc.get_objects) while they are counted."""
    store = _store(tmp_path / "home", segment_max)
    uid = _session(store)
    seen, most = 0, 0
    gc.collect()
    gc.disable()
    try:
        base = _records_alive()
        for record in store.read(uid):
            seen += 1
            if seen % 25 == 1:
                most = max(most, _records_alive() - base)
            del record
    finally:
        gc.enable()
    assert seen > 200 and most <= 4, (seen, most)  # a few single ones: never a run


def test_a_journal_of_one_big_uncompressed_segment_still_reads(tmp_path: Path) -> None:
    """Journals written before the 1 MiB default hold a tail of up to 16 MiB."""
    store = _store(tmp_path / "home", 16 << 20)
    uid = _session(store)
    assert sorted(os.listdir(_journal(store, uid)))[-1] == "0000000000000001.seg"
    assert list(store.read(uid)) == _frame_read(store, uid)
    assert list(_store(tmp_path / "home", 4096).read(uid, 7, 30)) == _frame_read(store, uid, 7, 30)


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_a_compressed_segment_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path / "home", 4096)
    uid = _session(store)
    zst = sorted(_journal(store, uid).glob("*.seg.zst"))[1]
    _flip(zst, 40)
    with pytest.raises(JournalCorruptError):
        list(store.read(uid))


def test_forged_padding_in_a_compressed_segment_changes_no_record(tmp_path: Path) -> None:
    """A run taken in bulk from a .seg.zst skips the zero padding as it skips the CRCs: the
    writer checked both before compressing, the checksum stands for them, and padding holds
    nothing a record carries. Bytes forged there under a valid checksum read the very same
    records; the strict reader and verify still refuse them."""
    store = _store(tmp_path / "home", 4096)
    uid = _session(store)
    before = list(store.read(uid))
    zst = sorted(_journal(store, uid).glob("*.seg.zst"))[1]
    raw = bytearray(zstdcodec.decompress(zst.read_bytes(), 1 << 30))
    seal, cuts = sg.chunk_plan(bytes(raw), sg.decode_header(bytes(raw)).first_seq)
    pos = sg.HEADER_SIZE
    while True:  # the first padded EVENT frame
        _magic, plen, _seq, _fence, rtype, *_ = sg.FRAME_STRUCT.unpack_from(raw, pos)
        if rtype == sg.RTYPE_EVENT and plen % sg.FRAME_ALIGN:
            break
        pos += sg.FRAME_HEADER_SIZE + plen + (-plen % sg.FRAME_ALIGN)
    raw[pos + sg.FRAME_HEADER_SIZE + plen] = 0x20
    forged = bytes(raw)
    zst.write_bytes(zstdseek.encode_seekable(forged, cuts, sg.encode_zst_meta(forged, seal)))
    assert list(store.read(uid)) == before
    with pytest.raises(JournalCorruptError, match="padding"):
        _frame_read(store, uid)
    assert not verify_dir(_journal(store, uid).parent).ok


def _forge_zst(zst: Path, edit: Callable[[bytes], bytes], seq: int) -> None:
    """Rewrite event ``seq``'s payload in a .seg.zst by ``edit`` (same length), then the
    chunks with valid checksums: what only a forger can make."""
    raw = bytearray(zstdcodec.decompress(zst.read_bytes(), 1 << 30))
    seal, cuts = sg.chunk_plan(bytes(raw), sg.decode_header(bytes(raw)).first_seq)
    pos = sg.HEADER_SIZE
    while True:
        _magic, plen, at, _fence, rtype, *_ = sg.FRAME_STRUCT.unpack_from(raw, pos)
        if rtype == sg.RTYPE_EVENT and at == seq:
            break
        pos += sg.FRAME_HEADER_SIZE + plen + (-plen % sg.FRAME_ALIGN)
    body = pos + sg.FRAME_HEADER_SIZE
    forged = edit(bytes(raw[body : body + plen]))
    assert len(forged) == plen
    raw[body : body + plen] = forged
    crc = zlib.crc32(forged, zlib.crc32(bytes(raw[pos + 4 : pos + 28])))
    raw[pos + 28 : pos + 32] = crc.to_bytes(4, "little")
    data = bytes(raw)
    zst.write_bytes(zstdseek.encode_seekable(data, cuts, sg.encode_zst_meta(data, seal)))


def test_a_forged_envelope_in_a_compressed_segment(tmp_path: Path) -> None:
    """A forged .seg.zst envelope whose seq was rewritten reads as its frames say (as a
    forged hash would), never a crash; verify names it. One whose link is not a link is
    refused on read by the exact loop's full check."""
    store = _store(tmp_path / "home", 4096)
    uid = _session(store)
    zst = sorted(_journal(store, uid).glob("*.seg.zst"))[1]
    seq = int(zst.name.split(".")[0], 16) + 3
    before = list(store.read(uid))
    _forge_zst(zst, lambda p: p.replace(b'"seq":"%d"' % seq, b'"seq":"%d"' % (seq + 1)), seq)
    after = list(store.read(uid))
    assert [r.seq for r in after] == [r.seq for r in before]
    assert after[seq - 1].payload.endswith(b'"seq":"%d"}' % (seq + 1))
    assert after[seq - 1].event == before[seq - 1].event
    assert not verify_dir(_journal(store, uid).parent).ok

    def unlink(p: bytes) -> bytes:  # the link's first digit made a non-digit
        at = p.rindex(b'"prev_hash":"') + len(b'"prev_hash":"')
        return p[:at] + b"x" + p[at + 1 :]

    _forge_zst(zst, unlink, seq)
    with pytest.raises(FormatError, match="prev_hash"):  # as the strict reader says it
        list(store.read(uid))


def _tail_frames(path: Path) -> list[tuple[int, int]]:
    """(offset, payload length) of each EVENT frame in a .seg."""
    raw, out, pos = path.read_bytes(), [], sg.HEADER_SIZE
    while pos + sg.FRAME_HEADER_SIZE <= len(raw):
        magic, plen, _seq, _fence, rtype, *_ = sg.FRAME_STRUCT.unpack_from(raw, pos)
        if magic != sg.FRAME_MAGIC:
            break
        if rtype == sg.RTYPE_EVENT:
            out.append((pos, plen))
        pos += sg.FRAME_HEADER_SIZE + plen + (-plen % sg.FRAME_ALIGN)
    return out


def test_a_flipped_byte_in_the_tail_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path / "home", 16 << 20)
    uid = _session(store, groups=20)
    tail = _journal(store, uid) / "0000000000000001.seg"
    offset, _ = _tail_frames(tail)[5]
    _flip(tail, offset + sg.FRAME_HEADER_SIZE + 30)
    with pytest.raises(JournalCorruptError, match="CRC"):
        list(store.read(uid))


def test_a_link_rewritten_with_a_valid_crc_is_refused_on_read(tmp_path: Path) -> None:
    """The bulk reader checks each prev_hash against the hash it just computed."""
    store = _store(tmp_path / "home", 16 << 20)
    uid = _session(store, groups=20)
    tail = _journal(store, uid) / "0000000000000001.seg"
    offset, plen = _tail_frames(tail)[6]
    raw = bytearray(tail.read_bytes())
    body = offset + sg.FRAME_HEADER_SIZE
    payload = bytes(raw[body : body + plen])
    cut = payload.rindex(b'"prev_hash":"') + len(b'"prev_hash":"')
    forged = payload[:cut] + (b"0" if payload[cut : cut + 1] != b"0" else b"1") + payload[cut + 1 :]
    raw[body : body + plen] = forged
    crc = zlib.crc32(forged, zlib.crc32(bytes(raw[offset + 4 : offset + 28])))
    raw[offset + 28 : offset + 32] = crc.to_bytes(4, "little")
    tail.write_bytes(bytes(raw))
    with pytest.raises(JournalCorruptError, match="does not continue the chain"):
        list(store.read(uid))


def test_records_converts_what_the_loop_does_not_take(tmp_path: Path) -> None:
    """The first event (prev_hash "") goes through ``convert``, as any unusual frame does."""
    store = _store(tmp_path / "home", 16 << 20)
    uid = _session(store, groups=3)
    log, _ = SegmentLog.open(_journal(store, uid), session_id=uid, writable=False)
    taken: list[int] = []

    def convert(frame: sg.Frame) -> Record:
        taken.append(frame.seq)
        return frame_record(frame, "", None)

    records = list(log.records(convert, close=True))
    assert taken == [1] and [r.seq for r in records] == list(range(1, len(records) + 1))


def test_a_forged_link_past_a_seq_width_change_is_refused(tmp_path: Path) -> None:
    """A run crossing seq 99 -> 100 is taken in bulk; a link there must still continue."""
    store = _store(tmp_path / "home", 16 << 20)
    uid = _session(store, groups=60)
    tail = _journal(store, uid) / "0000000000000001.seg"
    frames = _tail_frames(tail)
    assert len(frames) > 110
    assert list(store.read(uid)) == _frame_read(store, uid)
    offset, plen = frames[101]  # seq 102
    raw = bytearray(tail.read_bytes())
    body = offset + sg.FRAME_HEADER_SIZE
    payload = bytes(raw[body : body + plen])
    cut = payload.rindex(b'"prev_hash":"') + len(b'"prev_hash":"')
    forged = payload[:cut] + (b"0" if payload[cut : cut + 1] != b"0" else b"1") + payload[cut + 1 :]
    raw[body : body + plen] = forged
    crc = zlib.crc32(forged, zlib.crc32(bytes(raw[offset + 4 : offset + 28])))
    raw[offset + 28 : offset + 32] = crc.to_bytes(4, "little")
    tail.write_bytes(bytes(raw))
    with pytest.raises(JournalCorruptError, match="seq 102 does not continue the chain"):
        list(store.read(uid))


def test_links_are_checked_in_bulk_across_seq_widths() -> None:
    def payload(seq: int, link: bytes) -> bytes:
        return b'{"event":{"kind":"EVENT_INPUT"},"prev_hash":"%s","seq":"%d"}' % (link, seq)

    links = [hashlib.sha256(b"%d" % seq).hexdigest().encode() for seq in range(95, 1005)]
    payloads = [payload(seq, link) for seq, link in zip(range(95, 1005), links, strict=True)]
    assert recordscan._links(list(range(95, 1005)), payloads) == [x.decode() for x in links]
    for bad in (3, 500, 909):  # before, between and after the width changes
        damaged = list(payloads)
        damaged[bad] = damaged[bad].replace(b'"seq":"', b'"seq":"0')
        assert recordscan._links(list(range(95, 1005)), damaged) is None
        for old, new in (
            (links[bad], links[bad].upper()),  # not lowercase hex
            (b'{"event":{', b'{"event" :{'),  # not the envelope's start
            (b'},"prev_hash":"', b'},"prev_hash" :"'),  # not its link's key
        ):
            damaged = list(payloads)
            damaged[bad] = damaged[bad].replace(old, new)
            assert recordscan._links(list(range(95, 1005)), damaged) is None, (bad, new)


def test_a_compressed_run_checks_the_start_and_the_link_only() -> None:
    """Bytes a compressed segment restores are the writer's (see recordscan): its bulk runs
    check each envelope's start and link, not the key and seq around the link."""

    def payload(seq: int, link: bytes) -> bytes:
        return b'{"event":{"kind":"EVENT_INPUT"},"prev_hash":"%s","seq":"%d"}' % (link, seq)

    seqs = list(range(95, 1005))
    links = [hashlib.sha256(b"%d" % seq).hexdigest().encode() for seq in seqs]
    payloads = [payload(seq, link) for seq, link in zip(seqs, links, strict=True)]
    want = [x.decode() for x in links]
    assert recordscan._links(seqs, payloads, whole=False) == want
    for old, new in ((b'{"event":{', b'{"event" :{'), (links[500], links[500].upper())):
        damaged = list(payloads)
        damaged[500] = damaged[500].replace(old, new)
        assert recordscan._links(seqs, damaged, whole=False) is None
    for old, new in ((b'"seq":"5', b'"seq":"6'), (b'},"prev_hash":"', b'},"prev_hash"::')):
        damaged = list(payloads)
        damaged[500] = damaged[500].replace(old, new)  # same width: the link stays in place
        assert recordscan._links(seqs, damaged) is None
        assert recordscan._links(seqs, damaged, whole=False) == want
    short = list(payloads)
    short[500] = b'{"event":{' + links[500][4:] + b'","seq":"595"}'  # its link would hold '{'
    assert recordscan._links(seqs, short, whole=False) is None
