"""The fast verify path (batch segment checks, forked workers) gives the frame-by-frame verdicts.

The reference is what ``verify_dir`` did before the batch path: open the log (scanning the
tail), walk ``frames()`` record by record. For good journals and damaged ones (a flipped
byte in a payload, in a frame header, in a segment header, a compressed segment, a torn
tail, a broken SEAL link, a broken chain, a non-canonical event, a missing segment), the
fast path must agree on ``ok``, ``first_bad_seq``, the reason and its class, the torn-tail
note and where the walk stopped, serially and with forked workers, with and without msgspec.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from needs import missing, need_zstd

from agentsessions.errors import FormatError, JournalCorruptError
from agentsessions.journal.format import canonical, zstdcodec, zstdseek
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.format.segmentread import SegmentCheck, SegmentFiles
from agentsessions.journal.format.segmentscan import ChainScan, scan_events
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools import verifypool, verifywalk
from agentsessions.journal.tools.verify import VerifyReport, verify_dir, walk
from agentsessions.v1 import construct

SMALL = 16 * 1024


def _event(i: int, size: int = 400) -> dict[str, Any]:
    text = f"message {i} " + "lorem ipsum dolor sit amet " * (size // 27)
    return construct.output_event(
        construct.text_message("assistant", text), execution_id=f"{i:016x}"
    )


def build(root: Path, groups: int = 40, per: int = 3, *, compress: bool = True) -> Path:
    """A session of ``groups`` commits; with 16 KiB segments it rotates every ~25 events."""
    store = FileStore(root, options=StoreOptions(segment_max_bytes=SMALL))
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    saved = zstdcodec.can_compress
    if not compress:
        zstdcodec.can_compress = lambda: False  # type: ignore[assignment]
    try:
        with store.writer(uid) as writer:
            for g in range(groups):
                events = [_event(g * per + i) for i in range(per)]
                writer.append(events, commit_id=f"c{g}" if g % 4 == 0 else None)
    finally:
        zstdcodec.can_compress = saved  # type: ignore[assignment]
    sdir = store.session_dir(uid)
    store.close()
    return sdir


def reference(sdir: Path, strict: bool = False) -> VerifyReport:
    """verify_dir as it was: open (full tail scan), then every frame, record by record."""
    report = VerifyReport(source=str(sdir), uid=sdir.name, strict=strict)
    try:
        log, scan = SegmentLog.open(sdir / "journal", session_id=sdir.name, writable=False)
    except JournalCorruptError as exc:
        return report.fail(int(exc.fields.get("seq", 0)), str(exc), "corrupt")
    report.torn_tail = scan.torn_tail
    if scan.torn_tail:
        report.notes.append("torn tail after the last commit (not acknowledged; ignored)")
    try:
        items = ((f.seq, f.payload, None) for f in log.frames() if f.rtype == sg.RTYPE_EVENT)
        return walk(items, report, strict=strict)
    except JournalCorruptError as exc:
        return report.fail(int(exc.fields.get("seq", report.last_seq + 1)), str(exc), "corrupt")
    finally:
        log.close()


def verdict(r: VerifyReport) -> dict[str, Any]:
    out = r.to_json()
    out.pop("source")
    return out


def assert_same(sdir: Path, *, expect_ok: bool | None = None) -> VerifyReport:
    for strict in (False, True):
        want = verdict(reference(sdir, strict))
        for workers in (1, 2):
            got = verdict(verify_dir(sdir, strict=strict, workers=workers))
            assert got == want, (strict, workers)
    if expect_ok is not None:
        assert want["ok"] is expect_ok, want
    return reference(sdir)


def segment_files(sdir: Path) -> list[Path]:
    names = (sdir / "journal").iterdir()
    return sorted(p for p in names if ".seg" in p.name and ".torn" not in p.name)


def frames_of(path: Path) -> list[tuple[int, int, int, int, int, int]]:
    """(offset, payload_len, seq, rtype, flags, fence) of every frame of a .seg."""
    raw, pos, out = path.read_bytes(), sg.HEADER_SIZE, []
    while pos + sg.FRAME_HEADER_SIZE <= len(raw):
        _, plen, seq, fence, rtype, flags, _, _ = sg.FRAME_STRUCT.unpack_from(raw, pos)
        out.append((pos, plen, seq, rtype, flags, fence))
        pos += sg.FRAME_HEADER_SIZE + plen + (-plen % sg.FRAME_ALIGN)
    return out


def patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


def flip(path: Path, offset: int) -> None:
    raw = path.read_bytes()
    patch(path, offset, bytes([raw[offset] ^ 0x40]))


def rewrite_frame(path: Path, index: int, edit: Callable[[bytes], bytes]) -> int:
    """Replace frame ``index``'s payload with ``edit(payload)`` (same length), CRC fixed."""
    off, plen, seq, rtype, flags, fence = frames_of(path)[index]
    body = path.read_bytes()[off + sg.FRAME_HEADER_SIZE : off + sg.FRAME_HEADER_SIZE + plen]
    new = edit(body)
    assert len(new) == len(body)
    patch(path, off, sg.encode_frame(rtype, seq, fence, flags, new))
    return seq


def event_index(path: Path, k: int) -> int:
    """Index of the ``k``-th EVENT frame of a .seg."""
    return [i for i, f in enumerate(frames_of(path)) if f[3] == sg.RTYPE_EVENT][k]


@pytest.fixture(params=["plain", "compressed"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    compress = request.param == "compressed"
    if compress:
        need_zstd()
    return build(tmp_path / "store", compress=compress)


def test_good_journals_verify_alike(journal: Path) -> None:
    assert len(segment_files(journal)) > 3
    report = assert_same(journal, expect_ok=True)
    assert report.records == 120


def test_single_segment_and_empty_journals(tmp_path: Path) -> None:
    assert_same(build(tmp_path / "a", groups=3), expect_ok=True)
    assert_same(build(tmp_path / "b", groups=0), expect_ok=True)


def test_pure_python_path_agrees(journal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(canonical, "msgspec", None)
    assert_same(journal, expect_ok=True)


def test_flipped_payload_byte_in_sealed_plain_segment(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[2]
    off, plen, *_ = frames_of(seg)[event_index(seg, 3)]
    flip(seg, off + sg.FRAME_HEADER_SIZE + plen // 2)
    assert "CRC" in assert_same(sdir, expect_ok=False).reason


@pytest.mark.parametrize("field", [4, 8, 16, 25, 26])  # length, seq, fence, flags, reserved
def test_flipped_frame_header_byte(tmp_path: Path, field: int) -> None:
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[1]
    flip(seg, frames_of(seg)[event_index(seg, 2)][0] + field)
    assert_same(sdir, expect_ok=False)


@pytest.mark.parametrize("which", [0, 1, -1])
def test_flipped_segment_header_byte(tmp_path: Path, which: int) -> None:
    sdir = build(tmp_path / "s", compress=False)
    flip(segment_files(sdir)[which], 60)
    assert assert_same(sdir, expect_ok=False).kind == "corrupt"


def test_damage_in_the_tail(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", compress=False)
    tail = segment_files(sdir)[-1]
    off = frames_of(tail)[event_index(tail, 0)][0]
    flip(tail, off + sg.FRAME_HEADER_SIZE + 5)
    assert assert_same(sdir, expect_ok=False).kind == "corrupt"


def test_flipped_byte_in_a_compressed_segment(tmp_path: Path) -> None:
    need_zstd()
    sdir = build(tmp_path / "s")
    zst = [p for p in segment_files(sdir) if p.name.endswith(".zst")][1]
    flip(zst, zst.stat().st_size // 3)
    assert_same(sdir, expect_ok=False)


def test_mixed_forms_and_a_flipped_byte(tmp_path: Path) -> None:
    """A sealed segment decompressed back to .seg beside compressed ones, then damaged."""
    need_zstd()
    sdir = build(tmp_path / "s")
    zst = [p for p in segment_files(sdir) if p.name.endswith(".zst")][2]
    seg = zst.with_name(zst.name[: -len(".zst")])
    seg.write_bytes(zstdcodec.decompress(zst.read_bytes(), 1 << 30))
    zst.unlink()
    assert_same(sdir, expect_ok=True)
    flip(seg, frames_of(seg)[event_index(seg, 1)][0] + sg.FRAME_HEADER_SIZE + 40)
    assert_same(sdir, expect_ok=False)


def test_torn_tail(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", compress=False)
    tail = segment_files(sdir)[-1]
    last = frames_of(tail)[-1]
    frame = sg.encode_frame(sg.RTYPE_EVENT, last[2] + 1, last[5], sg.FLAG_GROUP_START, b"{}" * 50)
    with tail.open("ab") as f:
        f.write(frame[:-20])
    report = assert_same(sdir, expect_ok=True)
    assert report.torn_tail


def test_open_group_at_the_end_of_the_tail(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", compress=False)
    tail = segment_files(sdir)[-1]
    last = frames_of(tail)[-1]
    with tail.open("ab") as f:
        f.write(sg.encode_frame(sg.RTYPE_EVENT, last[2] + 1, last[5], sg.FLAG_GROUP_START, b"{}"))
    assert assert_same(sdir, expect_ok=True).torn_tail


def _seal_payload(path: Path) -> tuple[int, dict[str, Any]]:
    off, plen, _, rtype, *_ = frames_of(path)[-1]
    assert rtype == sg.RTYPE_SEAL
    body = path.read_bytes()[off + sg.FRAME_HEADER_SIZE : off + sg.FRAME_HEADER_SIZE + plen]
    return len(frames_of(path)) - 1, json.loads(body)


def test_broken_seal_link(tmp_path: Path) -> None:
    """A CRC-valid SEAL whose last_hash is wrong: it neither fits its segment nor links on."""
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[1]
    index, _ = _seal_payload(seg)

    def wrong_hash(payload: bytes) -> bytes:
        obj = json.loads(payload)
        obj["last_hash"] = "ab" * 32
        return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()

    rewrite_frame(seg, index, wrong_hash)
    assert assert_same(sdir, expect_ok=False).kind == "corrupt"


def test_header_that_does_not_link(tmp_path: Path) -> None:
    """A middle segment's header names another prev_hash (its CRC recomputed)."""
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[2]
    header = sg.decode_header(seg.read_bytes()[: sg.HEADER_SIZE])
    wrong = sg.SegmentHeader(
        header.session_id, header.first_seq, header.segment_no, header.created_unix_ms, "ab" * 32
    )
    patch(seg, 0, wrong.encode())
    assert "link" in assert_same(sdir, expect_ok=False).reason


def test_broken_chain_with_valid_crc(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[1]
    seq = rewrite_frame(seg, event_index(seg, 4), lambda b: b.replace(b"lorem", b"LOREM", 1))
    report = assert_same(sdir, expect_ok=False)
    assert (report.kind, report.first_bad_seq) == ("chain", seq + 1)


def test_broken_chain_in_the_last_event_of_a_segment(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[1]
    last = [i for i, f in enumerate(frames_of(seg)) if f[3] == sg.RTYPE_EVENT][-1]
    rewrite_frame(seg, last, lambda b: b.replace(b"lorem", b"LOREM", 1))
    assert assert_same(sdir, expect_ok=False).kind == "corrupt"  # its SEAL no longer fits


def test_missing_middle_segment(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", compress=False)
    segment_files(sdir)[2].unlink()
    assert assert_same(sdir, expect_ok=False).kind == "corrupt"


def test_non_canonical_event_fails_strict_only(tmp_path: Path) -> None:
    sdir = build(tmp_path / "s", groups=10, compress=False)
    store = FileStore(sdir.parent.parent)
    uid = sdir.name
    with store.writer(uid) as writer:
        seq, prev = writer.head
        event_json = json.dumps(_event(99), separators=(",", ":")).encode()  # keys unsorted
        writer.append_records([Record.seal(event_json, seq=seq + 1, prev_hash=prev, fence=1)])
    store.close()
    assert_same(sdir)
    assert verify_dir(sdir, workers=1).ok
    strict = verify_dir(sdir, strict=True, workers=1)
    assert (strict.ok, strict.first_bad_seq, strict.kind) == (False, seq + 1, "chain")


def test_strict_plain_shortcut_matches_full_encoder() -> None:
    for i in range(5):
        payload = canonical.envelope(canonical.canonical_json(_event(i)), "ab" * 32, i + 1)
        assert verifywalk._strict_reason(i + 1, payload) == ""
        spaced = payload.replace(b'{"event":{', b'{"event":{ ')
        assert verifywalk._strict_reason(i + 1, spaced) != ""


def test_batch_scan_stops_where_strict_reading_would(tmp_path: Path) -> None:
    """scan_events leaves COMMIT frames, SEALs and anything damaged to the exact step."""
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[1]
    raw = seg.read_bytes()
    header = sg.decode_header(raw[: sg.HEADER_SIZE])
    st = ChainScan(header.first_seq, header.prev_hash, None)
    pos = scan_events(raw, sg.HEADER_SIZE, len(raw), 0, st, sg.DEFAULT_MAX_RECORD_BYTES)
    frames = frames_of(seg)
    stop = next(f for f in frames if f[3] != sg.RTYPE_EVENT)
    assert pos == stop[0]
    assert st.events == sum(1 for f in frames if f[3] == sg.RTYPE_EVENT and f[0] < pos)


def test_forked_workers_are_used_and_reaped(tmp_path: Path) -> None:
    if not hasattr(os, "fork") or threading.active_count() != 1:
        pytest.skip("forking is not used here")
    sdir = build(tmp_path / "s")
    files = SegmentFiles.at(sdir / "journal", session_id=sdir.name)
    jobs = list(enumerate(files.segments[:-1]))
    pool = verifypool.Pool.start(files, jobs, None, 2)
    assert pool is not None and pool.workers
    pids = [worker.pid for worker in pool.workers]
    checks = pool.results()
    pool.stop()
    assert sorted(checks) == files.segments[:-1] and all(c.ok for c in checks.values())
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_workers_are_reaped_when_opening_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not hasattr(os, "fork") or threading.active_count() != 1:
        pytest.skip("forking is not used here")
    sdir = build(tmp_path / "s")
    flip(segment_files(sdir)[-1], 60)  # the tail's header: opening fails after the fork
    pids: list[int] = []
    real = verifypool.Pool._fork

    def spy(self: verifypool.Pool) -> None:
        real(self)
        pids.append(self.workers[-1].pid)

    monkeypatch.setattr(verifypool.Pool, "_fork", spy)
    assert verify_dir(sdir, workers=2).kind == "corrupt"
    assert pids
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_failed_worker_is_replaced_by_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not hasattr(os, "fork") or threading.active_count() != 1:
        pytest.skip("forking is not used here")
    sdir = build(tmp_path / "s")
    parent = os.getpid()
    real = SegmentFiles.check_segment

    def flaky(self: SegmentFiles, first: int, no: int, check: Any = None) -> SegmentCheck:
        if os.getpid() != parent:
            raise RuntimeError("the worker dies holding a job")
        return real(self, first, no, check)

    monkeypatch.setattr(SegmentFiles, "check_segment", flaky)
    assert verdict(verify_dir(sdir, workers=2)) == verdict(reference(sdir))


def test_hash_of_the_last_event_is_reported(journal: Path) -> None:
    report = verify_dir(journal, workers=2)
    log, _ = SegmentLog.open(journal / "journal", session_id=journal.name, writable=False)
    try:
        last = [f for f in log.frames() if f.rtype == sg.RTYPE_EVENT][-1]
    finally:
        log.close()
    assert report.last_hash == hashlib.sha256(last.payload).hexdigest()


def _frame_by_frame(sdir: Path, strict: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """verify_dir with every batch check refused: every segment read and walked record by record."""
    with monkeypatch.context() as m:
        m.setattr(
            SegmentFiles,
            "check_segment",
            lambda self, first, no, check=None: SegmentCheck(first, False),
        )
        return verdict(verify_dir(sdir, strict=strict, workers=1))


@pytest.mark.parametrize("compress", [False, True])
def test_forked_children_verify_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compress: bool
) -> None:
    if compress:
        need_zstd()
    parent = build(tmp_path / "s", compress=compress)
    store = FileStore(parent.parent.parent, options=StoreOptions(segment_max_bytes=SMALL))
    boundary = int(segment_files(parent)[2].name[:16], 16) - 1  # last seq of a sealed segment
    children = {
        at: store.fork(parent.name, at, [SessionMeta(uid=new_uid())])[0]
        for at in (boundary, 50, 119)
    }
    store.close()
    for at, child in children.items():
        sdir = parent.parent / child.uid
        for strict in (False, True):
            want = _frame_by_frame(sdir, strict, monkeypatch)
            assert want["ok"] and want["last_seq"] == at + 1
            for workers in (1, 2):
                assert verdict(verify_dir(sdir, strict=strict, workers=workers)) == want
    flip(segment_files(parent)[1], 60)  # damage the parent's prefix
    for child in children.values():
        sdir = parent.parent / child.uid
        want = _frame_by_frame(sdir, False, monkeypatch)
        assert not want["ok"]
        assert verdict(verify_dir(sdir, workers=2)) == want


def test_forked_verify_inside_the_zipapp(tmp_path: Path) -> None:
    """The zipapp (no site-packages: no msgspec, no pyzstd) forks workers and agrees."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        pytest.skip("forking is Linux-only here")
    root = Path(__file__).resolve().parents[2]
    pyz = tmp_path / "app.pyz"
    subprocess.run([sys.executable, str(root / "zipapp.py"), "-o", str(pyz)], cwd=root,
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[2]
    rewrite_frame(seg, event_index(seg, 1), lambda b: b.replace(b"lorem", b"LOREM", 1))
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from pathlib import Path; from agentsessions.journal.format import canonical;"
        "from agentsessions.journal.tools import verify, verifypool;"
        "from agentsessions.journal.format.segmentread import SegmentFiles;"
        "d = Path(sys.argv[2]); f = SegmentFiles.at(d / 'journal', session_id=d.name);"
        "pool = verifypool.Pool.start(f, list(enumerate(f.segments[:-1])), None, 2);"
        "forked = pool is not None and bool(pool.workers); pool and pool.stop();"
        "r = verify.verify_dir(d, workers=2).to_json(); r.pop('source');"
        "print(json.dumps([canonical.HAVE_MSGSPEC, forked, r]))"
    )
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(pyz), str(sdir)],
                         check=True, capture_output=True, text=True, timeout=120)  # fmt: skip
    have_msgspec, forked, got = json.loads(out.stdout)
    assert (have_msgspec, forked) == (False, True)
    assert got == verdict(reference(sdir)) and not got["ok"]


def _recompress(zst: Path, compress: Callable[[bytes], bytes]) -> None:
    """Rewrite a .seg.zst with the same chunks, each compressed by ``compress``."""
    raw = zstdcodec.decompress(zst.read_bytes(), 1 << 30)
    seal, cuts = sg.chunk_plan(raw, sg.decode_header(raw).first_seq)
    saved = zstdseek.compress
    zstdseek.compress = lambda data, level=3: compress(data)  # type: ignore[assignment]
    try:
        zst.write_bytes(zstdseek.encode_seekable(raw, cuts, sg.encode_zst_meta(raw, seal)))
    finally:
        zstdseek.compress = saved  # type: ignore[assignment]


def test_compressed_chunks_must_carry_a_content_checksum(tmp_path: Path) -> None:
    """Readers trust a chunk's zstd checksum instead of its frame CRCs, so a chunk without
    one is refused by every path (verify, fast and strict, and reading), naming the chunk."""
    modules = [name for name in ("pyzstd", "backports.zstd") if _importable(name)]
    need_zstd()
    if not modules:  # the codec is the zstd command line: nothing to compress unchecked with
        missing("a zstd module (pyzstd, backports.zstd)", "")
    mod = __import__(modules[0], fromlist=["compress"])
    sdir = build(tmp_path / "s")
    zst = [p for p in segment_files(sdir) if p.name.endswith(".zst")][1]
    _recompress(zst, lambda data: bytes(mod.compress(data)))  # the module's default: unchecked
    report = assert_same(sdir, expect_ok=False)
    assert report.kind == "corrupt" and "content checksum" in report.reason
    store = FileStore(sdir.parent.parent)
    with pytest.raises(JournalCorruptError, match="content checksum"):
        list(store.read(sdir.name))
    store.close()


def test_a_frame_crc_mismatch_is_never_compressed(tmp_path: Path) -> None:
    """The writer checks every frame CRC before it compresses a sealed segment, so the
    zstd checksum can only vouch for frames that were intact."""
    sdir = build(tmp_path / "s", compress=False)
    seg = segment_files(sdir)[1]
    off = frames_of(seg)[event_index(seg, 2)][0]
    flip(seg, off + 16)  # the fence: only the frame CRC covers it
    raw = seg.read_bytes()
    with pytest.raises(FormatError, match="not a clean sealed segment"):
        sg.chunk_plan(raw, sg.decode_header(raw).first_seq)
    assert assert_same(sdir, expect_ok=False).kind == "corrupt"


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True
