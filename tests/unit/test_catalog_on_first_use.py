"""The file store opens an existing listing catalog on its first use, not when it opens:
a turn, ``get`` or ``log`` never asks it. A missing catalog is still made (and rebuilt
from the session directories) when the store opens."""

from __future__ import annotations

import threading
from pathlib import Path

import agentsessions
from agentsessions.journal.stores.file.store import FileStore


def _home_with_a_session(tmp_path: Path) -> tuple[Path, str]:
    home = tmp_path / "home"
    with agentsessions.open(home) as engine:
        uid = engine.create(name="one").uid
    return home, uid


def test_an_existing_catalog_is_opened_by_its_first_use_only(tmp_path: Path) -> None:
    home, uid = _home_with_a_session(tmp_path)
    store = FileStore(home)
    try:
        assert store.get(uid).meta.uid == uid
        assert store._catalog is None  # read a session: no catalog
        assert [info.meta.uid for info in store.list("default").sessions] == [uid]
        assert store._catalog is not None
    finally:
        store.close()
    assert store._catalog is None


def test_a_store_that_never_used_its_catalog_closes(tmp_path: Path) -> None:
    home, _uid = _home_with_a_session(tmp_path)
    FileStore(home).close()


def test_a_missing_catalog_is_made_and_rebuilt_when_the_store_opens(tmp_path: Path) -> None:
    home, uid = _home_with_a_session(tmp_path)
    (home / "catalog.sqlite3").unlink()
    store = FileStore(home)
    try:
        assert store._catalog is not None and (home / "catalog.sqlite3").is_file()
        assert [info.meta.uid for info in store.list("default").sessions] == [uid]
    finally:
        store.close()


def test_threads_asking_first_share_one_catalog(tmp_path: Path) -> None:
    home, _uid = _home_with_a_session(tmp_path)
    store = FileStore(home)
    seen: list[object] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        seen.append(store.catalog)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len({id(catalog) for catalog in seen}) == 1
    finally:
        store.close()
