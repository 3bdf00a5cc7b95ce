"""FLAG_ENCRYPTED EVENT frames in the segment log: the chain runs through the clear heads.

A journal of sealed records rotates, compresses, reopens and batch-checks (the keyless
structure check ``verify`` builds on) without the key; its hashes are the plaintext
journal's; a broken link or a flipped byte is found without the key.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentsessions.errors import JournalCorruptError, MasterKeyError
from agentsessions.journal.crypto import keys, sealed
from agentsessions.journal.format import canonical
from agentsessions.journal.format import segment as sg
from agentsessions.journal.format.records import Record
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.metafile import meta_bytes
from agentsessions.journal.stores.store import SessionMeta
from agentsessions.journal.tools import verify

SID = "sess-0123456789abcdef01234567"
KEY = os.urandom(32)


def _event(n: int) -> bytes:
    text = f"secret number {n} " + "x" * 300
    return canonical.canonical_json(
        {"type": "EVENT_INPUT", "message": {"role": "user", "parts": [{"text": text}]}}
    )


def _write(d: Path, groups: int, *, segment_max_bytes: int = 4096) -> list[Record]:
    d.mkdir(parents=True, exist_ok=True)
    SegmentLog.create(d, session_id=SID)
    log, _ = SegmentLog.open(d, session_id=SID, writable=True, segment_max_bytes=segment_max_bytes)
    plain: list[Record] = []
    prev, seq = "", 0
    for _g in range(groups):
        frames = []
        for _ in range(2):
            seq += 1
            blob, record = sealed.seal(KEY, SID, _event(seq), seq=seq, prev_hash=prev)
            frames.append((sg.RTYPE_EVENT, seq, 1, blob))
            plain.append(record)
            prev = record.content_hash
        log.append_group(frames, carry=dict, encrypted=True)
    assert log.position.last_hash == prev
    log.close()
    return plain


def test_an_encrypted_log_chains_through_the_clear_heads(tmp_path: Path) -> None:
    plain = _write(tmp_path, 12)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.endswith(".seg.zst") for n in names)  # rotated and compressed
    for writable in (False, True):
        log, _ = SegmentLog.open(tmp_path, session_id=SID, writable=writable)
        assert log.position.last_hash == plain[-1].content_hash
        frames = list(log.read())
        assert [f.seq for f in frames] == [r.seq for r in plain]
        assert all(f.flags & sg.FLAG_ENCRYPTED for f in frames)
        assert [sg.frame_hash(f) for f in frames] == [r.content_hash for r in plain]
        opened = [sealed.open_record(KEY, SID, f.payload, seq=f.seq) for f in frames]
        assert [r.payload for r in opened] == [r.payload for r in plain]
        log.close()
    for path in tmp_path.iterdir():  # no plaintext anywhere on disk
        raw = path.read_bytes()
        assert b"secret number" not in raw and b"x" * 64 not in raw


def test_the_keyless_batch_check_accepts_every_segment(tmp_path: Path) -> None:
    plain = _write(tmp_path, 12)
    log, _ = SegmentLog.open(tmp_path, session_id=SID, writable=False)
    firsts = sorted(int(p.name[:16], 16) for p in tmp_path.glob("*.seg*"))
    prev, seq = "", 1
    for no, first in enumerate(firsts):
        check = log.check_segment(first, no)
        assert check.ok, first
        assert (check.prev_hash, first) == (prev, seq)
        prev, seq = check.last_hash, check.next_seq
    assert (prev, seq) == (plain[-1].content_hash, plain[-1].seq + 1)
    log.close()


def test_a_broken_sealed_link_is_found_without_the_key(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    SegmentLog.create(tmp_path, session_id=SID)
    log, _ = SegmentLog.open(tmp_path, session_id=SID, writable=True)
    one, _ = sealed.seal(KEY, SID, _event(1), seq=1, prev_hash="")
    two, _ = sealed.seal(KEY, SID, _event(2), seq=2, prev_hash="ab" * 32)  # not seq 1's hash
    log.append_group([(sg.RTYPE_EVENT, 1, 1, one), (sg.RTYPE_EVENT, 2, 1, two)], carry=dict,
                     encrypted=True)  # fmt: skip
    assert not log.check_segment(1, 0).ok
    log.close()


def test_a_flipped_ciphertext_byte_is_found_without_the_key(tmp_path: Path) -> None:
    _write(tmp_path, 2, segment_max_bytes=1 << 20)
    (seg,) = tmp_path.glob("*.seg")
    raw = bytearray(seg.read_bytes())
    at = sg.HEADER_SIZE + sg.FRAME_HEADER_SIZE + sealed.HEAD_SIZE + 5  # in the ciphertext
    raw[at] ^= 0x40
    seg.write_bytes(bytes(raw))
    with pytest.raises(JournalCorruptError, match="frame CRC mismatch"):
        SegmentLog.open(tmp_path, session_id=SID, writable=False)


def test_encrypted_is_refused_on_frames_other_than_events() -> None:
    start = sg.FLAG_GROUP_START | sg.FLAG_ENCRYPTED
    assert sg.frame_rule(sg.RTYPE_EVENT, 1, start, b"", False, 1, False) == ""
    reason = sg.frame_rule(sg.RTYPE_COMMIT, 1, start, b"", False, 1, False)
    assert reason == "FLAG_ENCRYPTED on a frame that is not an EVENT"


def _meta_bytes() -> bytes:
    return meta_bytes(SessionMeta(uid=SID, project="default", create_time_ns=1))


def _session(root: Path, groups: int) -> tuple[Path, list[Record]]:
    sdir = root / SID
    plain = _write(sdir / "journal", groups)
    (sdir / "session.json").write_bytes(_meta_bytes())
    return sdir, plain


@pytest.mark.parametrize("strict", [False, True])
def test_verify_without_the_key_checks_structure_and_says_so(tmp_path: Path, strict: bool) -> None:
    sdir, plain = _session(tmp_path, 12)
    report = verify.verify_dir(sdir, strict=strict, workers=1)
    assert report.ok, report.reason
    assert (report.last_seq, report.last_hash) == (plain[-1].seq, plain[-1].content_hash)
    assert any("without the key" in note for note in report.notes)


def test_verify_without_the_key_finds_a_broken_link(tmp_path: Path) -> None:
    sdir = tmp_path / SID
    (sdir / "journal").mkdir(parents=True)
    (sdir / "session.json").write_bytes(_meta_bytes())
    SegmentLog.create(sdir / "journal", session_id=SID)
    log, _ = SegmentLog.open(sdir / "journal", session_id=SID, writable=True)
    one, _ = sealed.seal(KEY, SID, _event(1), seq=1, prev_hash="")
    two, _ = sealed.seal(KEY, SID, _event(2), seq=2, prev_hash="cd" * 32)
    log.append_group([(sg.RTYPE_EVENT, 1, 1, one)], carry=dict, encrypted=True)
    log.append_group([(sg.RTYPE_EVENT, 2, 1, two)], carry=dict, encrypted=True)
    log.close()
    report = verify.verify_dir(sdir, workers=1)
    assert not report.ok
    assert (report.first_bad_seq, report.reason) == (2, "prev_hash mismatch at seq 2")
    assert report.exit_code == 9


def _keyed_session(root: Path, groups: int) -> tuple[Path, list[Record], keys.MasterKey]:
    sdir, plain = _session(root, groups)
    master = keys.MasterKey.generate()
    kdir = keys.KeyDir(sdir, SID)
    kdir.key_path.write_bytes(keys.wrap(KEY, master, SID))
    return sdir, plain, master


def test_verify_with_the_key_recomputes_every_content_hash(tmp_path: Path) -> None:
    sdir, plain, master = _keyed_session(tmp_path, 12)
    report = verify.verify_dir(sdir, workers=1, master=master)
    assert report.ok, report.reason
    assert (report.last_seq, report.last_hash) == (plain[-1].seq, plain[-1].content_hash)
    assert not any("without the key" in note for note in report.notes)


def test_verify_with_the_key_finds_a_ciphertext_moved_between_seqs(tmp_path: Path) -> None:
    """Two sealed records whose heads chain but whose ciphertexts were swapped: the CRCs
    and links hold (so keyless verify passes), the tags do not."""
    sdir = tmp_path / SID
    (sdir / "journal").mkdir(parents=True)
    (sdir / "session.json").write_bytes(_meta_bytes())
    one, r1 = sealed.seal(KEY, SID, _event(1), seq=1, prev_hash="")
    two, _ = sealed.seal(KEY, SID, _event(2), seq=2, prev_hash=r1.content_hash)
    h = sealed.HEAD_SIZE
    swapped_one, swapped_two = one[:h] + two[h:], two[:h] + one[h:]
    SegmentLog.create(sdir / "journal", session_id=SID)
    log, _ = SegmentLog.open(sdir / "journal", session_id=SID, writable=True)
    frames = [(sg.RTYPE_EVENT, 1, 1, swapped_one), (sg.RTYPE_EVENT, 2, 1, swapped_two)]
    log.append_group(frames, carry=dict, encrypted=True)
    log.close()
    master = keys.MasterKey.generate()
    keys.KeyDir(sdir, SID).key_path.write_bytes(keys.wrap(KEY, master, SID))
    assert verify.verify_dir(sdir, workers=1).ok
    report = verify.verify_dir(sdir, workers=1, master=master)
    assert (report.ok, report.first_bad_seq, report.exit_code) == (False, 1, 8)
    assert "does not authenticate" in report.reason


def test_verify_after_a_shred_still_passes_and_says_the_key_is_gone(tmp_path: Path) -> None:
    sdir, plain, master = _keyed_session(tmp_path, 4)
    assert keys.KeyDir(sdir, SID).shred()
    report = verify.verify_dir(sdir, workers=1, master=master)
    assert report.ok, report.reason
    assert report.last_hash == plain[-1].content_hash
    assert any("shredded" in note for note in report.notes)
    assert any("without the key" in note for note in report.notes)


def test_verify_with_a_wrong_master_key_is_a_key_error(tmp_path: Path) -> None:
    sdir, _, _ = _keyed_session(tmp_path, 1)
    with pytest.raises(MasterKeyError):
        verify.verify_dir(sdir, workers=1, master=keys.MasterKey.generate())
