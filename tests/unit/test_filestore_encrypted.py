"""The file store's encryption at rest (journal/stores/file/crypt.py, FORMAT.md 15).

A session created while the store holds a master key is marked encrypted, gets its wrapped
data key at create and appends sealed records; reads decrypt; the hashes are a plaintext
session's; no plaintext reaches the disk; without the key reads fail with exit 26 while
verify still passes keyless; ``get`` needs the key only when sealed records must be folded
(the TAIL hint otherwise holds what it shows, in the clear).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentsessions
from agentsessions.errors import KeyShreddedError, MasterKeyError, SessionKeyError
from agentsessions.journal.crypto.keys import KeyDir, MasterKey
from agentsessions.journal.format import segment
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta
from agentsessions.journal.tools.verify import KEYLESS_NOTE, verify_dir, verify_session
from agentsessions.v1 import construct

UID = "sess-0123456789abcdef01234567"
SECRET = "the launch code is swordfish-4711"


# built once: the plaintext and the encrypted session get the very same events
EVENTS = [
    construct.output_event(
        construct.text_message("assistant", f"{SECRET} #{i}"), execution_id=f"{i:016x}"
    )
    for i in range(19)
]


def _fill(store: FileStore, groups: int = 6) -> None:
    store.create(SessionMeta(uid=UID))
    with store.writer(UID) as w:
        for g in range(groups):
            w.append(EVENTS[3 * g : 3 * g + 3], commit_id=f"c{g}")


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_an_encrypted_session_has_a_plaintext_sessions_hashes_and_no_plaintext_on_disk(
    tmp_path: Path,
) -> None:
    master = MasterKey.generate()
    small = StoreOptions(segment_max_bytes=4096)  # rotation and compression too
    with FileStore(tmp_path / "plain", options=small) as plain:
        _fill(plain)
        want = [(r.seq, r.prev_hash, r.content_hash, r.payload) for r in plain.read(UID)]
    with FileStore(tmp_path / "enc", options=small, master=master) as enc:
        _fill(enc)
        got = [(r.seq, r.prev_hash, r.content_hash, r.payload) for r in enc.read(UID)]
        info = enc.get(UID)
        sdir = enc.session_dir(UID)
    assert got == want and len(got) == 18
    assert info.last_hash == want[-1][2] and info.meta.encrypted
    assert json.loads((sdir / "session.json").read_text())["encrypted"] is True
    assert (sdir / "KEY").is_file()
    assert any(p.name.endswith(".seg.zst") for p in (sdir / "journal").iterdir())
    assert b"swordfish" not in _all_bytes(tmp_path / "enc")
    assert b"swordfish" in _all_bytes(tmp_path / "plain")  # the probe can find it
    # every EVENT frame on disk is sealed
    log, _ = SegmentLog.open(sdir / "journal", session_id=UID, writable=False)
    flags = [f.flags & segment.FLAG_ENCRYPTED for f in log.read(1, 0)]
    log.close()
    assert flags and all(flags)
    # reopening (the tail fold decrypts) and appending more keeps the chain
    with FileStore(tmp_path / "enc", master=master) as again, again.writer(UID) as w:
        assert w.head == (18, want[-1][2])
        w.append(EVENTS[18:])
    with FileStore(tmp_path / "enc", master=master) as again:
        assert [r.seq for r in again.read(UID)][-1] == 19
        report = verify_session(again, UID)
    assert report.ok and KEYLESS_NOTE not in report.notes


def test_a_plaintext_store_writes_no_marker(tmp_path: Path) -> None:
    with FileStore(tmp_path) as store:
        store.create(SessionMeta(uid=UID))
        sdir = store.session_dir(UID)
    assert "encrypted" not in json.loads((sdir / "session.json").read_text())
    assert not (sdir / "KEY").exists()


def test_without_the_key_reads_fail_with_exit_26_and_verify_passes_keyless(
    tmp_path: Path,
) -> None:
    with FileStore(tmp_path, master=MasterKey.generate()) as enc:
        _fill(enc, groups=2)
    with FileStore(tmp_path) as keyless:
        for read in (lambda: list(keyless.read(UID)), lambda: keyless.writer(UID)):
            with pytest.raises(MasterKeyError) as caught:
                read()
            assert caught.value.exit_code == 26
        # get shows what is stored in the clear (metadata, the TAIL hint's projection)
        assert keyless.get(UID).last_seq == 6
        report = verify_session(keyless, UID)
    assert report.ok and KEYLESS_NOTE in report.notes
    (tmp_path / "sessions" / UID / "TAIL").unlink()  # as after a crash: sealed records to fold
    with FileStore(tmp_path) as keyless:
        with pytest.raises(MasterKeyError):
            keyless.get(UID)
        report = verify_session(keyless, UID)
    assert report.ok and KEYLESS_NOTE in report.notes
    wrong = FileStore(tmp_path, master=MasterKey.generate())
    with wrong, pytest.raises(MasterKeyError, match="wrapped by master key"):
        list(wrong.read(UID))


def test_a_missing_or_shredded_key_is_a_key_error_not_a_plaintext_session(
    tmp_path: Path,
) -> None:
    master = MasterKey.generate()
    with FileStore(tmp_path, master=master) as enc:
        _fill(enc, groups=1)
        sdir = enc.session_dir(UID)
    key = (sdir / "KEY").read_bytes()
    (sdir / "KEY").unlink()
    lost = FileStore(tmp_path, master=master)
    with lost, pytest.raises(SessionKeyError, match="missing"):
        list(lost.read(UID))
    (sdir / "KEY").write_bytes(key)
    KeyDir(sdir, UID).shred()
    for m in (master, None):
        with FileStore(tmp_path, master=m) as store:
            with pytest.raises(KeyShreddedError):
                list(store.read(UID))
            assert verify_session(store, UID).ok


def test_an_engine_turn_round_trips_through_an_encrypted_store(tmp_path: Path) -> None:
    master = MasterKey.generate()
    store = FileStore(tmp_path, master=master)
    with agentsessions.open(tmp_path, store=store, runtime="local", model="echo") as engine:
        frames = list(engine.exec(None, [SECRET], harness="chat"))
        uid = frames[0].session.uid  # type: ignore[union-attr]
        texts = json.dumps([r.to_wire() for r in engine.read(uid)])
    assert SECRET in texts  # decrypted on read, the echo model's answer too
    sdir = tmp_path / "sessions" / uid
    assert b"swordfish" not in _all_bytes(sdir)
    assert verify_dir(sdir, master=master).ok
    with FileStore(tmp_path) as keyless, pytest.raises(MasterKeyError):
        list(keyless.read(uid))


def test_a_keyless_listing_shows_an_encrypted_session_it_cannot_fold_instead_of_failing(
    tmp_path: Path,
) -> None:
    with FileStore(tmp_path, master=MasterKey.generate()) as enc:
        _fill(enc, groups=1)
        (enc.session_dir(UID) / "TAIL").unlink()  # as after a crashed writer: a fold is due
    with FileStore(tmp_path) as keyless:
        (row,) = keyless.list("default").sessions
    assert row.uid == UID and "no master key" in row.damaged


def test_a_fork_of_an_encrypted_session_is_encrypted_under_its_own_key(tmp_path: Path) -> None:
    master = MasterKey.generate()
    child_uid = "sess-0123456789abcdef0123456c"
    with FileStore(tmp_path, master=master) as enc:
        _fill(enc, groups=2)
        (child,) = enc.fork(UID, 4, [SessionMeta(uid=child_uid)])
        records = list(enc.read(child_uid))
        cdir = enc.session_dir(child_uid)
        assert verify_session(enc, child_uid).ok
    assert child.meta.encrypted and child.last_seq == 5
    assert [r.seq for r in records] == [1, 2, 3, 4, 5]
    assert (cdir / "KEY").read_bytes() != (tmp_path / "sessions" / UID / "KEY").read_bytes()
    assert b"parent@4" not in _all_bytes(cdir / "journal")  # the fork marker is sealed too
    with FileStore(tmp_path) as keyless:
        assert verify_session(keyless, child_uid).ok


def test_shred_waits_for_no_writer_and_refuses_a_plaintext_session(tmp_path: Path) -> None:
    from agentsessions.errors import InvalidArgumentError, LockHeldError
    from agentsessions.journal.stores.file import crypt as filecrypt

    with FileStore(tmp_path, master=MasterKey.generate()) as enc:
        _fill(enc, groups=1)
        with enc.writer(UID), pytest.raises(LockHeldError):
            filecrypt.shred(enc, UID)  # a writer holds the key in memory: not under its feet
        assert (enc.session_dir(UID) / "KEY").is_file()
        assert filecrypt.shred(enc, UID) is True
        assert filecrypt.shred(enc, UID) is False  # idempotent
    plain_uid = "sess-0123456789abcdef0123456d"
    with FileStore(tmp_path) as plain:
        plain.create(SessionMeta(uid=plain_uid))
        with pytest.raises(InvalidArgumentError, match="not encrypted"):
            filecrypt.shred(plain, plain_uid)
