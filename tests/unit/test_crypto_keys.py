"""Master keys, wrapped data keys and shredding (agentsessions.journal.crypto.keys)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from agentsessions.errors import (
    InvalidArgumentError,
    JournalCorruptError,
    KeyShreddedError,
    MasterKeyError,
    SessionKeyError,
)
from agentsessions.journal.crypto import keys

UID = "sess-0123456789abcdef01234567"


def _key_file(tmp_path: Path, raw: bytes, mode: int = 0o600) -> Path:
    path = tmp_path / "master.key"
    path.write_text(base64.b64encode(raw).decode() + "\n")
    path.chmod(mode)
    return path


def test_key_file_and_environment_give_the_same_key(tmp_path: Path) -> None:
    raw = os.urandom(32)
    path = _key_file(tmp_path, raw)
    from_file = keys.resolve_master_key(path, {})
    from_env_file = keys.resolve_master_key(None, {keys.KEY_FILE_ENV: str(path)})
    from_env = keys.resolve_master_key(None, {keys.MASTER_KEY_ENV: base64.b64encode(raw).decode()})
    assert from_file and from_env_file and from_env
    assert from_file.key == from_env_file.key == from_env.key == raw
    assert keys.resolve_master_key(None, {}) is None
    assert raw.hex() not in repr(from_file)


def test_a_key_file_others_may_read_is_refused(tmp_path: Path) -> None:
    path = _key_file(tmp_path, os.urandom(32), mode=0o644)
    with pytest.raises(MasterKeyError, match="may be read or written by others") as err:
        keys.MasterKey.from_file(path)
    assert err.value.exit_code == 26
    assert "chmod 600" in err.value.hint


@pytest.mark.parametrize("raw", [bytes(range(16)), bytes(range(33)), b""])  # fixed: xdist
def test_a_key_of_the_wrong_size_is_refused(tmp_path: Path, raw: bytes) -> None:
    with pytest.raises(MasterKeyError, match=r"expected 32|not base64"):
        keys.MasterKey.from_file(_key_file(tmp_path, raw))


def test_garbage_in_the_environment_is_refused() -> None:
    with pytest.raises(MasterKeyError, match="not base64"):
        keys.resolve_master_key(None, {keys.MASTER_KEY_ENV: "not a key!"})


def test_create_load_and_a_wrong_or_missing_master_key(tmp_path: Path) -> None:
    master = keys.MasterKey.generate()
    kd = keys.KeyDir(tmp_path, UID)
    data_key = kd.create(master)
    assert kd.load(master) == data_key
    assert data_key not in kd.key_path.read_bytes()
    with pytest.raises(MasterKeyError, match="wrapped by master key"):
        kd.load(keys.MasterKey.generate())
    with pytest.raises(MasterKeyError, match="no master key was given"):
        kd.load(None)
    with pytest.raises(InvalidArgumentError, match="already has a data key"):
        kd.create(master)


def test_a_key_file_copied_to_another_session_does_not_unwrap(tmp_path: Path) -> None:
    master = keys.MasterKey.generate()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    keys.KeyDir(tmp_path / "a", UID).create(master)
    other = keys.KeyDir(tmp_path / "b", "sess-76543210fedcba9876543210")
    other.key_path.write_bytes((tmp_path / "a" / keys.KEY_NAME).read_bytes())
    with pytest.raises(JournalCorruptError, match="wraps the key of"):
        other.load(master)


def test_a_damaged_key_file_is_corruption_not_a_wrong_key(tmp_path: Path) -> None:
    master = keys.MasterKey.generate()
    kd = keys.KeyDir(tmp_path, UID)
    kd.create(master)
    content = bytearray(kd.key_path.read_bytes())
    at = content.index(b'"wrapped":"') + 12
    content[at] = ord("A") if content[at] != ord("A") else ord("B")
    kd.key_path.write_bytes(bytes(content))
    with pytest.raises(JournalCorruptError, match="does not authenticate"):
        kd.load(master)
    kd.key_path.write_bytes(b"{}")
    with pytest.raises(JournalCorruptError, match="not a wrapped data key"):
        kd.load(master)


def test_rotation_rewraps_the_same_data_key(tmp_path: Path) -> None:
    old, new = keys.MasterKey.generate(), keys.MasterKey.generate()
    kd = keys.KeyDir(tmp_path, UID)
    data_key = kd.create(old)
    kd.rewrap(old, new)
    assert kd.load(new) == data_key
    with pytest.raises(MasterKeyError):
        kd.load(old)


def test_shred_destroys_the_key_for_good(tmp_path: Path) -> None:
    master = keys.MasterKey.generate()
    kd = keys.KeyDir(tmp_path, UID)
    kd.create(master)
    assert kd.shred() is True
    assert not kd.key_path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [keys.SHREDDED_NAME]
    with pytest.raises(KeyShreddedError, match="shredded") as err:
        kd.load(master)
    assert err.value.exit_code == 26
    assert kd.shred() is False  # idempotent
    with pytest.raises(InvalidArgumentError):
        kd.create(master)  # a shredded session never gets a new key


def test_a_shred_cut_after_its_marker_still_refuses_reads(tmp_path: Path) -> None:
    """The marker is written first: a crash before the key is overwritten leaves a
    session that reads refuse and that a second shred finishes."""
    master = keys.MasterKey.generate()
    kd = keys.KeyDir(tmp_path, UID)
    kd.create(master)
    kd.shredded_path.write_text("{}\n")
    with pytest.raises(KeyShreddedError):
        kd.load(master)
    assert kd.shred() is True
    assert not kd.key_path.exists()


def test_a_missing_key_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SessionKeyError, match="is missing"):
        keys.KeyDir(tmp_path, UID).load(keys.MasterKey.generate())


def test_shred_overwrites_the_key_bytes_in_place_before_unlinking(tmp_path: Path) -> None:
    """A hard link sees the same inode: after the shred it holds random bytes, not the
    wrapped key (the old code path, a plain unlink, would leave them intact)."""
    master = keys.MasterKey.generate()
    kd = keys.KeyDir(tmp_path, UID)
    kd.create(master)
    before = kd.key_path.read_bytes()
    link = tmp_path / "link"
    os.link(kd.key_path, link)
    kd.shred()
    after = link.read_bytes()
    assert len(after) == len(before) and after != before
    assert b"wrapped" not in after


def _stores(tmp_path: Path, master: keys.MasterKey, n: int) -> list[keys.KeyDir]:
    out = []
    for i in range(n):
        d = tmp_path / f"s{i}"
        d.mkdir()
        kd = keys.KeyDir(d, f"sess-{i:024x}")
        kd.create(master)
        out.append(kd)
    return out


def test_rotation_of_many_keys_is_all_or_nothing_and_resumable(tmp_path: Path) -> None:
    old, new = keys.MasterKey.generate(), keys.MasterKey.generate()
    stores = _stores(tmp_path, old, 3)
    data = [kd.load(old) for kd in stores]
    with pytest.raises(MasterKeyError):
        keys.rewrap_all(stores, keys.MasterKey.generate(), new)  # wrong old key
    assert [kd.wrapped_by() for kd in stores] == [old.key_id] * 3  # nothing changed
    stores[0].rewrap(old, new)  # as if a rotation was cut after its first key
    assert stores[2].shred()
    assert keys.rewrap_all(stores, old, new) == 1
    assert [kd.load(new) for kd in stores[:2]] == data[:2]
    assert keys.rewrap_all(stores, old, new) == 0


def test_the_guide_documents_the_key_exit_code() -> None:
    table = (Path(__file__).parents[2] / "docs" / "reference" / "exit-codes.md").read_text()
    assert f"| {SessionKeyError.exit_code} | an encrypted session's key is unusable" in table
