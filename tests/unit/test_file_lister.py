"""``FileListing`` (a file store opened only to list it) lists what ``FileStore.list`` lists,
and :func:`agentsessions.sessions.listing.open_listing` opens the store ``open_local`` would.

The listing opens the whole store only for a row its TAIL hint cannot vouch for; a home
that does not exist is refused as the engine refuses it; a store URL leaves the listing to
the engine (None).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.errors import NotFoundError
from agentsessions.journal.stores.file.lister import FileListing
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.listing import list_page, open_listing
from agentsessions.v1 import construct


def _event(i: int) -> dict[str, Any]:
    return construct.output_event(
        construct.text_message("assistant", f"message {i}"), execution_id=f"{i:016x}"
    )


def _home(tmp_path: Path) -> tuple[Path, list[str]]:
    """A home with an empty session, one with commits, one whose hint is gone, one deleted."""
    home = tmp_path / "home"
    with FileStore(home) as store:
        uids = [new_uid() for _ in range(4)]
        for uid in uids:
            store.create(SessionMeta(uid=uid, project="p"))
        for uid in uids[1:]:
            with store.writer(uid) as writer:
                writer.append([_event(1), _event(2)])
        (store.session_dir(uids[2]) / "TAIL").unlink()  # the store must read this row
        store.delete(uids[3])
    return home, uids


def test_rows_equal_the_store_s_and_only_an_unvouched_row_opens_it(tmp_path: Path) -> None:
    home, uids = _home(tmp_path)
    with FileStore(home) as store:
        want = store.list("p")
    with FileListing(home) as listing:
        assert listing._store is None  # opened without the store
        got = listing.list("p")
        assert listing._store is not None  # uids[2] had no hint: the store read its row
    assert got == want
    assert {row.uid for row in got.sessions} == set(uids[:3])


def test_clean_rows_never_open_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    with agentsessions.open(home) as engine:
        uids = {engine.create(name="a").uid, engine.create(name="b").uid}
        engine.exec(next(iter(uids)), "hello")  # a journal with commits, and its hint

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the listing opened the store")

    monkeypatch.setattr(FileStore, "__init__", refuse)
    with FileListing(home) as listing:
        rows = listing.list("default").sessions
    assert {row.uid for row in rows} == uids
    assert max(row.last_seq for row in rows) > 0  # the turn's commits, read from its hint


def test_the_engine_and_the_listing_give_the_same_page(tmp_path: Path) -> None:
    home, _uids = _home(tmp_path)
    with agentsessions.open(home) as engine:
        want = engine.list(project="p", page_size=2)
        rest = engine.list(project="p", page_size=2, cursor=want.next_cursor)
    listing = open_listing(home, must_exist=True)
    assert listing is not None
    with listing:
        page, unindexed = list_page(listing, "p", 2, None)
        assert (page, unindexed) == (want, ())
        assert list_page(listing, "p", 2, page.next_cursor)[0] == rest


def test_a_missing_home_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        open_listing(tmp_path / "nowhere", must_exist=True)
    assert not (tmp_path / "nowhere").exists()


def test_a_store_url_leaves_the_listing_to_the_engine(tmp_path: Path) -> None:
    assert open_listing(tmp_path, store_url="nats://127.0.0.1:1") is None


def test_a_damaged_session_is_reported_when_the_catalog_is_rebuilt(tmp_path: Path) -> None:
    home, uids = _home(tmp_path)
    (home / "catalog.sqlite3").unlink()
    (home / "sessions" / uids[0] / "session.json").write_text("{")
    with FileListing(home) as listing:  # a fresh catalog is rebuilt from the directories
        assert [exc.fields.get("session") for exc in listing.unindexed] == [uids[0]]
        assert {row.uid for row in listing.list("p").sessions} == set(uids[1:3])
