"""session.json is checked where it is read: damage is MetadataCorruptError naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsessions.errors import JournalCorruptError, MetadataCorruptError
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.metafile import read_meta
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_dir, verify_session


def _store_with_session(tmp_path: Path) -> tuple[FileStore, str, Path]:
    store = FileStore(tmp_path / "home")
    uid = store.create(SessionMeta(uid=new_uid(), project="acme", name="n")).uid
    return store, uid, store.session_dir(uid) / "session.json"


def _good(uid: str) -> dict[str, object]:
    return SessionMeta(uid=uid, project="acme", create_time_ns=5).to_json()


DAMAGE = {
    "truncated": lambda uid: b'{"uid": "' + uid.encode() + b'", "proj',
    "not an object": lambda uid: b"[1, 2]",
    "no uid": lambda uid: json.dumps({**_good(uid), "uid": None}).encode(),
    "another uid": lambda uid: json.dumps({**_good(uid), "uid": new_uid()}).encode(),
    "bad project": lambda uid: json.dumps({**_good(uid), "project": "a/b"}).encode(),
    "time as text": lambda uid: json.dumps({**_good(uid), "create_time_ns": "5"}).encode(),
    "labels not strings": lambda uid: json.dumps({**_good(uid), "labels": {"k": 1}}).encode(),
    "bad parent": lambda uid: json.dumps({**_good(uid), "parent_uid": "x"}).encode(),
    "not utf-8": lambda uid: b'{"uid": "\xff"}',
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_metadata_names_session_and_file(tmp_path: Path, damage: str) -> None:
    store, uid, path = _store_with_session(tmp_path)
    path.write_bytes(DAMAGE[damage](uid))
    with pytest.raises(MetadataCorruptError) as info:
        store.get(uid)
    err = info.value
    assert err.exit_code == 8 and isinstance(err, JournalCorruptError)
    assert uid in err.message and str(path) in err.message
    assert err.fields["session"] == uid and err.fields["path"] == str(path)
    for call in (lambda: store.writer(uid), lambda: list(store.read(uid))):
        with pytest.raises(MetadataCorruptError):
            call()
    store.close()


def test_valid_metadata_reads_back(tmp_path: Path) -> None:
    store, uid, path = _store_with_session(tmp_path)
    meta = read_meta(path.parent)
    assert (meta.uid, meta.project, meta.name) == (uid, "acme", "n")
    store.close()


def test_verify_dir_checks_the_metadata(tmp_path: Path) -> None:
    """verify PATH used to pass a session whose session.json was garbage."""
    store, _uid, path = _store_with_session(tmp_path)
    path.write_bytes(b"{garbage")
    report = verify_dir(path.parent)
    assert not report.ok and report.exit_code == 8 and report.first_bad_seq is None
    assert str(path) in report.reason
    store.close()


def test_verify_session_reports_instead_of_raising(tmp_path: Path) -> None:
    store, uid, path = _store_with_session(tmp_path)
    path.write_bytes(b"{garbage")
    report = verify_session(store, uid)
    assert not report.ok and report.exit_code == 8 and uid in report.reason
    store.close()


def test_list_shows_a_damaged_session_as_a_row(tmp_path: Path) -> None:
    store, uid, path = _store_with_session(tmp_path)
    good = store.create(SessionMeta(uid=new_uid(), project="acme")).uid
    path.write_bytes(b"{garbage")
    rows = {info.uid: info for info in store.list("acme").sessions}
    assert set(rows) == {uid, good}
    assert rows[uid].damaged.startswith("session.json is not valid JSON")
    assert rows[uid].to_json()["damaged"] == rows[uid].damaged
    assert rows[uid].meta.create_time_ns > 0  # from the catalog: a cursor after it works
    assert "damaged" not in rows[good].to_json()
    store.close()


def test_reindex_keeps_the_damaged_row_and_reports_it(tmp_path: Path) -> None:
    store, uid, path = _store_with_session(tmp_path)
    path.write_bytes(b"{garbage")
    store.reindex()
    assert [e.fields["session"] for e in store.unindexed] == [uid]
    assert [info.uid for info in store.list("acme").sessions] == [uid]
    store.close()


def test_a_missing_session_json_is_damage_not_absence(tmp_path: Path) -> None:
    """The directory appears whole (renamed into place), so a missing session.json is damage:
    main said 'not found' (exit 3), and list and verify --all failed for every session."""
    store, uid, path = _store_with_session(tmp_path)
    good = store.create(SessionMeta(uid=new_uid(), project="acme")).uid
    path.unlink()
    with pytest.raises(MetadataCorruptError) as info:
        store.get(uid)
    assert str(path) in info.value.message
    assert store.session_dir(uid) == path.parent
    report = verify_session(store, uid)
    assert not report.ok and report.exit_code == 8 and str(path) in report.reason
    rows = {info.uid: info for info in store.list("acme").sessions}
    assert set(rows) == {uid, good} and rows[uid].damaged.startswith("session.json cannot be read")
    store.reindex()
    assert uid in [info.uid for info in store.list("acme").sessions]
    store.close()
