"""Encryption at rest beyond the session's events (issue 11, FORMAT.md 15): tool stores get
keys of their own, and STATE bytes, tool receipts and workloads are sealed blobs.

Each secret is put through the store with a master key and then looked for in every byte
under the home; reads give it back with the key, fail with exit 26 without it or after a
shred, and a flipped ciphertext byte is caught by its tag (exit 8) and by verify.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsessions.errors import (
    JournalCorruptError,
    KeyShreddedError,
    MasterKeyError,
    SessionKeyError,
)
from agentsessions.journal.crypto import blobs, cipher
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file import crypt as filecrypt
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, StateUpdate
from agentsessions.journal.tools.verify import KEYLESS_NOTE, verify_session
from agentsessions.v1 import construct

UID = "sess-0123456789abcdef01234567"
SECRET = "swordfish-4711"
WORKLOAD = f'# {SECRET}\n[session]\ntool_components = ["notes"]\n'


def _note(text: str) -> dict[str, object]:
    return construct.output_event(
        construct.message("tool", construct.data_part({"text": text})), actor={"principal": "notes"}
    )


def _all_bytes(root: Path, *, but: str = "") -> bytes:
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and p.name != but)
    return b"".join(p.read_bytes() for p in files)


def _fill(store: FileStore) -> None:
    store.create(SessionMeta(uid=UID))
    with store.writer(UID) as w:
        w.append([_note("hello")], state=StateUpdate(f"state {SECRET}".encode()))
        w.append([], state=StateUpdate(f"state two {SECRET}".encode()))
    with store.component(UID, "notes").writer() as w:
        w.append([_note(f"tool {SECRET}")], state=StateUpdate(f"tool state {SECRET}".encode()))
    store.record_tool_receipt(UID, f"call-{SECRET}", {"result": {"text": SECRET}})
    store.set_workload(UID, WORKLOAD)


def test_nothing_of_an_encrypted_session_is_stored_in_the_clear(tmp_path: Path) -> None:
    master = MasterKey.generate()
    with FileStore(tmp_path, master=master) as store:
        _fill(store)
        digest = store.keep_workload(UID, WORKLOAD)
        sdir = store.session_dir(UID)
    assert SECRET.encode() not in _all_bytes(tmp_path)
    assert (sdir / "components" / "notes" / "KEY").is_file()
    assert (sdir / "components" / "notes" / "KEY").read_bytes() != (sdir / "KEY").read_bytes()
    assert b'"notes"' not in (sdir / "WORKLOAD").read_bytes()
    line = json.loads((sdir / "TOOLRECEIPTS").read_bytes().split(b"\n")[1])
    assert set(line) == {"id", "sealed"}  # filed under a MAC of the key, not the key
    with FileStore(tmp_path, master=master) as store:
        assert store.state(UID).data == f"state two {SECRET}".encode()
        assert store.state(UID, before_seq=1).data == f"state {SECRET}".encode()
        assert [s.data for _, s in store.states(UID)] == [
            f"state {SECRET}".encode(),
            f"state two {SECRET}".encode(),
        ]
        assert store.get(UID).state_size == len(f"state two {SECRET}")
        part = store.component(UID, "notes")
        assert SECRET in json.dumps([r.event for r in part.read()])
        assert part.state().data == f"tool state {SECRET}".encode()
        assert store.tool_receipt(UID, f"call-{SECRET}") == {"result": {"text": SECRET}}
        assert store.tool_receipt(UID, "another") is None
        assert store.workload(UID) == WORKLOAD and store.workload_at(UID, digest) == WORKLOAD
        with store.writer(UID) as w:  # a writer's open reads its sealed state back
            assert w.state.data == f"state two {SECRET}".encode()
        with part.writer() as w:
            assert w.state.data == f"tool state {SECRET}".encode()
            w.append([_note("more")])
        report = verify_session(store, UID)
    assert report.ok, report.to_json()
    assert KEYLESS_NOTE not in report.notes
    assert all(c.ok and KEYLESS_NOTE not in c.notes for _, c in report.components)


def test_without_the_key_every_new_path_is_exit_26_and_verify_passes_keyless(
    tmp_path: Path,
) -> None:
    with FileStore(tmp_path, master=MasterKey.generate()) as store:
        _fill(store)
    before = _all_bytes(tmp_path / "sessions", but="LOCK")
    with FileStore(tmp_path) as keyless:
        part = keyless.component(UID, "notes")
        for call in (
            lambda: list(part.read()),
            lambda: part.writer(),
            lambda: part.state(),
            lambda: keyless.component(UID, "fresh").writer(),
            lambda: keyless.state(UID),
            lambda: keyless.tool_receipt(UID, f"call-{SECRET}"),
            lambda: keyless.record_tool_receipt(UID, "k", {"result": {}}),
            lambda: keyless.workload(UID),
            lambda: keyless.set_workload(UID, "x = 1\n"),
        ):
            with pytest.raises(MasterKeyError) as caught:
                call()
            assert caught.value.exit_code == 26
        report = verify_session(keyless, UID)
    assert report.ok, report.to_json()
    assert KEYLESS_NOTE in report.components[0][1].notes
    # nothing changed: a refused writer took its LOCK (the key is checked under it, as a
    # shred takes it) and wrote its holder note there; every other byte is as it was
    assert _all_bytes(tmp_path / "sessions", but="LOCK") == before
    assert not (tmp_path / "sessions" / UID / "components" / "fresh").exists()


def test_a_shred_destroys_the_tool_stores_keys_too(tmp_path: Path) -> None:
    master = MasterKey.generate()
    with FileStore(tmp_path, master=master) as store:
        _fill(store)
        assert filecrypt.shred(store, UID) is True
        cdir = store.session_dir(UID) / "components" / "notes"
        assert not (cdir / "KEY").exists() and (cdir / "SHREDDED").is_file()
        part = store.component(UID, "notes")
        for call in (
            lambda: list(part.read()),
            lambda: part.state(),
            lambda: store.state(UID),
            lambda: store.tool_receipt(UID, f"call-{SECRET}"),
            lambda: store.workload(UID),
            lambda: store.component(UID, "fresh").writer(),
        ):
            with pytest.raises(KeyShreddedError) as caught:
                call()
            assert caught.value.exit_code == 26
        assert verify_session(store, UID).ok


def test_a_shred_cut_before_the_tool_stores_keys_leaves_them_unreadable(tmp_path: Path) -> None:
    from agentsessions.journal.crypto.keys import KeyDir

    master = MasterKey.generate()
    with FileStore(tmp_path, master=master) as store:
        _fill(store)
        KeyDir(store.session_dir(UID), UID).shred()  # as if the process died right after
        cdir = store.session_dir(UID) / "components" / "notes"
        assert (cdir / "KEY").is_file()
        part = store.component(UID, "notes")
        for call in (lambda: list(part.read()), lambda: part.state(), lambda: part.writer()):
            with pytest.raises(KeyShreddedError):
                call()
        assert filecrypt.shred(store, UID) is True  # a second shred finishes the job
        assert not (cdir / "KEY").exists()


def test_a_missing_tool_store_key_is_a_key_error_not_a_plaintext_store(tmp_path: Path) -> None:
    master = MasterKey.generate()
    with FileStore(tmp_path, master=master) as store:
        _fill(store)
        (store.session_dir(UID) / "components" / "notes" / "KEY").unlink()
        with pytest.raises(SessionKeyError, match="missing") as caught:
            list(store.component(UID, "notes").read())
        assert caught.value.exit_code == 26
        (store.session_dir(UID) / "KEY").unlink()
        for call in (lambda: store.state(UID), lambda: store.workload(UID)):
            with pytest.raises(SessionKeyError):
                call()


def _flip_sealed_state(journal: Path, uid: str) -> None:
    """Flip one ciphertext byte of the last STATE frame's sealed data (CRC fixed up, so
    only the tag can tell)."""
    from agentsessions.journal.format import segment

    log, _ = SegmentLog.open(journal, session_id=uid, writable=False)
    frame = [f for f in log.frames() if f.rtype == segment.RTYPE_STATE][-1]
    log.close()
    path = journal / segment.segment_name(frame.segment)
    data = bytearray(path.read_bytes())
    payload = bytearray(frame.payload)
    payload[-1] ^= 0x01
    header = segment.encode_frame(frame.rtype, frame.seq, frame.fence, frame.flags, bytes(payload))[
        : segment.FRAME_HEADER_SIZE
    ]
    at = frame.offset
    data[at : at + segment.FRAME_HEADER_SIZE] = header
    data[at + segment.FRAME_HEADER_SIZE : at + segment.FRAME_HEADER_SIZE + len(payload)] = payload
    path.write_bytes(bytes(data))


def test_a_tampered_state_or_tool_store_is_caught_by_the_tag_and_by_verify(
    tmp_path: Path,
) -> None:
    master = MasterKey.generate()
    with FileStore(tmp_path, master=master) as store:
        _fill(store)
        sdir = store.session_dir(UID)
    _flip_sealed_state(sdir / "journal", UID)
    _flip_sealed_state(sdir / "components" / "notes" / "journal", UID)
    with FileStore(tmp_path, master=master) as store:
        with pytest.raises(JournalCorruptError, match="does not authenticate") as caught:
            store.state(UID)
        assert caught.value.exit_code == 8
        with pytest.raises(JournalCorruptError, match="does not authenticate"):
            store.component(UID, "notes").state()
        report = verify_session(store, UID)
    assert not report.ok and report.exit_code == 8, report.to_json()
    assert "does not authenticate" in report.reason
    assert not report.components[0][1].ok
    with FileStore(tmp_path) as keyless:  # keyless, the CRC was fixed up: structure holds
        assert verify_session(keyless, UID).ok


def test_a_tampered_receipt_or_workload_is_caught_by_its_tag(tmp_path: Path) -> None:
    master = MasterKey.generate()
    with FileStore(tmp_path, master=master) as store:
        _fill(store)
        sdir = store.session_dir(UID)
        raw = bytearray((sdir / "WORKLOAD").read_bytes())
        raw[-1] ^= 0x01
        (sdir / "WORKLOAD").write_bytes(bytes(raw))
        with pytest.raises(JournalCorruptError, match="does not authenticate"):
            store.workload(UID)
        # a receipt copied under another key's id fails: it is bound to its own key
        lines = (sdir / "TOOLRECEIPTS").read_bytes().split(b"\n")
        entry = json.loads(lines[1])
        entry["id"] = filecrypt.cipher_for(sdir, store.get(UID).meta, master).receipt_id(  # type: ignore[union-attr]
            "other"
        )
        with (sdir / "TOOLRECEIPTS").open("ab") as f:
            f.write(b"\n" + json.dumps(entry).encode() + b"\n")
        with pytest.raises(JournalCorruptError, match="does not authenticate"):
            store.tool_receipt(UID, "other")
        report = verify_session(store, UID)
    assert not report.ok and report.exit_code == 8


def test_the_blob_overhead_the_cipher_assumes_is_the_layers() -> None:
    assert cipher.BLOB_OVERHEAD == blobs.BLOB_OVERHEAD


def test_another_master_key_is_exit_26_on_every_new_path_and_changes_nothing(
    tmp_path: Path,
) -> None:
    with FileStore(tmp_path, master=MasterKey.generate()) as store:
        _fill(store)
    before = _all_bytes(tmp_path / "sessions", but="LOCK")
    with FileStore(tmp_path, master=MasterKey.generate()) as wrong:
        part = wrong.component(UID, "notes")
        for call in (
            lambda: list(part.read()),
            lambda: part.writer(),
            lambda: part.state(),
            lambda: wrong.state(UID),
            lambda: list(wrong.states(UID)),
            lambda: wrong.tool_receipt(UID, f"call-{SECRET}"),
            lambda: wrong.record_tool_receipt(UID, "k", {"result": {}}),
            lambda: wrong.workload(UID),
            lambda: wrong.keep_workload(UID, "other = 1\n"),
        ):
            with pytest.raises(MasterKeyError, match="wrapped by master key") as caught:
                call()
            assert caught.value.exit_code == 26
    assert (
        _all_bytes(tmp_path / "sessions", but="LOCK") == before
    )  # see above: LOCK notes its holder
