"""Issue 18 item 6: session.json is checked like the journal. Every flipped bit of a real
file is damage (exit 8) naming the file (and the field, where one holds the flip); strict
shape: no unknown, missing or mistyped key; a file from before the sums is read, noted by
verify and given its sums by the next writer open, unless the index disagrees."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsessions.errors import MetadataCorruptError
from agentsessions.journal.stores import metafile
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_dir, verify_session
from agentsessions.v1 import construct


def _meta(**fields: object) -> SessionMeta:
    base: dict[str, object] = {
        "uid": new_uid(),
        "project": "default",
        "name": "nightly build",
        "harness": "chat",
        "model": "echo",
        "labels": {"team": "infra"},
        "annotations": {"note": "é"},  # escaped in the file: an escape's case is a byte too
        "origin": {"imported_from": "x.agx"},
        "identity": {"user": "ann"},
        "create_time_ns": 1_764_600_000_123_456_789,
    }
    base.update(fields)
    return SessionMeta(**base)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[FileStore]:
    with FileStore(tmp_path / "home") as s:
        yield s


def _forked(store: FileStore) -> tuple[str, Path]:
    """A fork child (so parent_uid and fork_seq are set) with every field filled."""
    parent = store.create(_meta()).uid
    with store.writer(parent) as w:
        w.append(
            [construct.output_event(construct.text_message("assistant", "hi"), execution_id="e1")]
        )
    child = store.fork(parent, 1, [_meta()])[0].uid
    return child, store.session_dir(child) / metafile.META_NAME


def test_every_flipped_bit_of_a_real_session_json_is_found(store: FileStore) -> None:
    uid, path = _forked(store)
    good = path.read_bytes()
    assert metafile.read(path.parent).summed
    caught: dict[str, int] = {}
    for at in range(len(good)):
        for bit in range(8):
            flipped = bytearray(good)
            flipped[at] ^= 1 << bit
            path.write_bytes(flipped)
            with pytest.raises(MetadataCorruptError) as info:
                metafile.read_meta(path.parent)
            err = info.value
            assert err.exit_code == 8 and str(path) in err.message, (at, bit)
            field = str(err.fields.get("field", ""))
            assert not field or repr(field) in err.message
            kind = "names a field" if field else "names none"
            caught[kind] = caught.get(kind, 0) + 1
    total = len(good) * 8
    print(f"{len(good)} bytes, {total} flips, all caught: {sorted(caught.items())}")
    assert sum(caught.values()) == total
    # none: a flip in the first key's name, the braces, or one no decoder places
    assert caught.get("names none", 0) < total // 50
    path.write_bytes(good)
    assert metafile.read_meta(path.parent).uid == uid


def test_each_byte_changed_fails_open_and_verify(store: FileStore) -> None:
    """Through the store's own doors: get, writer, read and verify (by uid and by path)."""
    uid, path = _forked(store)
    good = path.read_bytes()
    for at in range(len(good)):
        flipped = bytearray(good)
        flipped[at] ^= 0x20  # a letter's case, a digit to a control byte, "e" to "E" ...
        path.write_bytes(flipped)
        for call in (lambda: store.get(uid), lambda: store.writer(uid)):
            with pytest.raises(MetadataCorruptError):
                call()
        for report in (verify_session(store, uid), verify_dir(path.parent, workers=1)):
            assert not report.ok and report.exit_code == 8 and str(path) in report.reason, at
    path.write_bytes(good)
    assert verify_session(store, uid).ok


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('"project":"default"', '"project":"defzult"', "project"),
        ('"harness":"chat"', '"harness":"chbt"', "harness"),
        ('"model":"echo"', '"model":"echn"', "model"),
        ('"name":"nightly build"', '"name":"nightly builf"', "name"),
        ('"create_time_ns":1764600000123456789', '"create_time_ns":1764600000123456709',
         "create_time_ns"),
        ('"team":"infra"', '"team":"infrb"', "labels"),
        ('"fork_seq":1', '"fork_seq":0', "fork_seq"),
        ('"model":', '"modem":', "modem"),  # a flipped key name: no default, damage
        ('"labels":{"team":"infra"}', '"labels":[]', "labels"),
    ],
)  # fmt: skip
def test_the_damaged_field_is_named(store: FileStore, old: str, new: str, field: str) -> None:
    uid, path = _forked(store)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(MetadataCorruptError) as info:
        store.get(uid)
    assert info.value.fields["field"] == field and repr(field) in info.value.message


def test_a_moved_project_is_refused_even_with_a_recomputed_sum_for_another_session(
    store: FileStore,
) -> None:
    """A sum binds its field to its session: copying another session's project and sum in
    is found (the uid is in every sum)."""
    a, b = store.create(_meta(project="acme")).uid, store.create(_meta(project="zeta")).uid
    pa, pb = (store.session_dir(u) / metafile.META_NAME for u in (a, b))
    oa, ob = json.loads(pa.read_bytes()), json.loads(pb.read_bytes())
    oa["project"], oa["sums"]["project"] = ob["project"], ob["sums"]["project"]
    pa.write_bytes(json.dumps(oa, sort_keys=True, separators=(",", ":")).encode())
    with pytest.raises(MetadataCorruptError) as info:
        store.get(a)
    assert info.value.fields["field"] == "project"


def _legacy(path: Path) -> bytes:
    """Rewrite ``path`` as 0.1.0 wrote it: every key, no sums."""
    obj = json.loads(path.read_bytes())
    del obj["sums"]
    raw = json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(raw)
    return raw


def test_a_file_from_before_the_sums_is_read_noted_and_summed_by_the_next_writer(
    store: FileStore,
) -> None:
    uid = store.create(_meta(project="acme")).uid
    path = store.session_dir(uid) / metafile.META_NAME
    _legacy(path)
    assert store.get(uid).meta.project == "acme" and not metafile.read(path.parent).summed
    report = verify_session(store, uid)
    assert report.ok and any("no field checksums yet" in n for n in report.notes)
    store.writer(uid).close()
    assert metafile.read(path.parent).summed
    assert not any("checksums" in n for n in verify_session(store, uid).notes)


def test_a_legacy_file_the_index_disagrees_with_is_refused_not_summed(store: FileStore) -> None:
    """The index holds an independent copy of the project and creation time: a legacy file
    damaged before its upgrade is not blessed with sums."""
    uid = store.create(_meta(project="acme")).uid
    path = store.session_dir(uid) / metafile.META_NAME
    raw = _legacy(path)
    path.write_bytes(raw.replace(b'"project":"acme"', b'"project":"acmf"'))
    with pytest.raises(MetadataCorruptError) as info:
        store.writer(uid)
    assert info.value.fields["field"] == "project"
    assert "the index holds 'acme'" in info.value.message
    assert not metafile.read(path.parent).summed


@pytest.mark.parametrize("key", ["name", "labels", "origin", "parent_uid", "fork_seq"])
def test_a_missing_key_is_damage_not_a_default(store: FileStore, key: str) -> None:
    uid = store.create(_meta()).uid
    path = store.session_dir(uid) / metafile.META_NAME
    obj = json.loads(path.read_bytes())
    del obj[key], obj["sums"][key]
    path.write_bytes(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode())
    with pytest.raises(MetadataCorruptError) as info:
        store.get(uid)
    assert info.value.fields["field"] == key and f"has no {key!r}" in info.value.message


def test_a_damaged_listing_row_has_no_project(store: FileStore) -> None:
    """list keeps a row for it (from the index), but its project is unknown: ""."""
    uid = store.create(_meta(project="acme")).uid
    path = store.session_dir(uid) / metafile.META_NAME
    path.write_bytes(path.read_bytes().replace(b"nightly", b"nightlY"))
    (row,) = store.list("acme").sessions
    assert row.uid == uid and row.meta.project == "" and "'name'" in row.damaged


def test_an_encrypted_sessions_marker_is_summed_too(tmp_path: Path) -> None:
    """file/crypt.py: the marker (not KEY) says a session is encrypted, so it is a field with a
    sum like the others; a changed byte anywhere in the file is found here too."""
    from agentsessions.journal.crypto.keys import MasterKey

    with FileStore(tmp_path / "enc", master=MasterKey.generate()) as enc:
        uid = enc.create(_meta()).uid
        path = enc.session_dir(uid) / metafile.META_NAME
        good = path.read_bytes()
        assert b'"encrypted":true' in good and b'"sums":{' in good
        for at in range(len(good)):
            for mask in (0x01, 0xFF):
                flipped = bytearray(good)
                flipped[at] ^= mask
                path.write_bytes(flipped)
                with pytest.raises(MetadataCorruptError):
                    metafile.read_meta(path.parent)
        path.write_bytes(good.replace(b'"encrypted":true', b'"encrypted":1'))
        with pytest.raises(MetadataCorruptError) as info:
            enc.get(uid)
        assert info.value.fields["field"] == "encrypted"
