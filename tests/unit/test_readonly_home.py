"""A home that cannot be written (a read-only mount) still reads; writes fail by name.

The read-only condition is injected through the store's FileSystem (``writable``), the
same seam crash tests use, so these run anywhere, also as root where chmod stops nothing;
the real read-only mount is driven end to end in ``tests/e2e/test_cli_damaged_home.py``.
Every test also proves that nothing under the home was created or changed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agentsessions.errors import StorageError
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


class ReadOnlyFileSystem(FileSystem):
    """The file system of a read-only mount: nothing may be created or written."""

    def writable(self, path: str | os.PathLike[str]) -> bool:
        return False


def _tree(home: Path) -> dict[str, str]:
    return {
        p.relative_to(home).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(home.rglob("*"))
    }


def _home_with_sessions(tmp_path: Path) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    with FileStore(home) as store:
        uids = []
        for n in range(3):
            uid = store.create(SessionMeta(uid=new_uid(), project="acme", name=f"s{n}")).uid
            with store.writer(uid) as w:
                w.append([construct.input_event(construct.text_message("user", f"hi {n}"))])
            uids.append(uid)
    return home, uids


def _reads(store: FileStore, uids: list[str]) -> None:
    listed = [info.uid for info in store.list("acme").sessions]
    assert sorted(listed) == sorted(uids)
    for uid in uids:
        assert store.get(uid).last_seq == 1
        assert [r.seq for r in store.read(uid)] == [1]
    assert store.uids() == tuple(sorted(uids))


WRITES: dict[str, Callable[[FileStore, str], object]] = {
    "create": lambda s, uid: s.create(SessionMeta(uid=new_uid(), project="acme")),
    "writer": lambda s, uid: s.writer(uid),
    "delete": lambda s, uid: s.delete(uid),
    "fork": lambda s, uid: s.fork(uid, 1, [SessionMeta(uid=new_uid(), project="acme")]),
    "reindex": lambda s, uid: s.reindex(),
}


@pytest.mark.parametrize("catalog", ["kept", "missing"])
def test_reads_work_and_nothing_is_created(tmp_path: Path, catalog: str) -> None:
    """Main opened the catalog read-write here: every command failed with exit 13."""
    home, uids = _home_with_sessions(tmp_path)
    if catalog == "missing":  # no index to read: rows come from the session directories
        (home / "catalog.sqlite3").unlink()
    before = _tree(home)
    with FileStore(home, fs=ReadOnlyFileSystem()) as store:
        assert store.read_only
        _reads(store, uids)
    assert _tree(home) == before


@pytest.mark.parametrize("write", sorted(WRITES))
def test_writes_fail_with_storage_error_naming_the_store(tmp_path: Path, write: str) -> None:
    home, uids = _home_with_sessions(tmp_path)
    before = _tree(home)
    with FileStore(home, fs=ReadOnlyFileSystem()) as store, pytest.raises(StorageError) as info:
        WRITES[write](store, uids[0])
    assert info.value.exit_code == 13
    assert "read-only" in info.value.message and str(home) in info.value.message
    assert _tree(home) == before


def test_a_missing_home_under_a_read_only_parent_is_empty(tmp_path: Path) -> None:
    home = tmp_path / "nothing-here"
    with FileStore(home, fs=ReadOnlyFileSystem()) as store:
        assert store.list("default").sessions == [] and store.uids() == ()
        with pytest.raises(StorageError):
            store.create(SessionMeta(uid=new_uid()))
    assert not home.exists()


def test_a_writable_home_is_not_read_only(tmp_path: Path) -> None:
    with FileStore(tmp_path / "home") as store:
        assert not store.read_only


def test_a_catalog_with_a_live_write_ahead_log_is_read_through_it(tmp_path: Path) -> None:
    """Rows still in ``-wal`` (a writer has the catalog open) are not missed."""
    home, _uids = _home_with_sessions(tmp_path)
    with FileStore(home) as writer_side:
        late = writer_side.create(SessionMeta(uid=new_uid(), project="acme")).uid
        assert (home / "catalog.sqlite3-wal").stat().st_size > 0
        with FileStore(home, fs=ReadOnlyFileSystem()) as store:
            assert late in [info.uid for info in store.list("acme").sessions]
