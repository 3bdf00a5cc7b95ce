"""``FileStore.list`` rows equal ``get()``, and come from the TAIL hint only when it is provable.

The light path reads session.json, the hint, one directory listing, a few stats and 32
bytes of the tail; it is taken only when the hint names the tail, the tail ends or holds
free space (zeros) at the hint's offset and was not modified after it (or, with no hint,
the journal holds only a header). Every other state falls back to ``get()``, which opens
the journal and validates the hint.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import MetadataCorruptError
from agentsessions.journal.format.segmentlog import SegmentLog
from agentsessions.journal.stores.file.sessiondir import SessionDir
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _event(i: int) -> dict[str, Any]:
    text = f"message {i} " + "lorem ipsum " * 20
    return construct.output_event(
        construct.text_message("assistant", text), execution_id=f"{i:016x}"
    )


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "home", options=StoreOptions(segment_max_bytes=8 * 1024))


def _new(store: FileStore, commits: int = 0, *, project: str = "p") -> str:
    uid = new_uid()
    store.create(SessionMeta(uid=uid, project=project))
    if commits:
        with store.writer(uid) as writer:
            for i in range(commits):
                writer.append([_event(i), _event(i + 1000)])
    return uid


def _trusted(store: FileStore, sdir: Path) -> object:
    with os.scandir(sdir) as it:
        return SessionDir(sdir).trusted_tail({entry.name: entry for entry in it})


def _forbid_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the listing opened a journal")

    monkeypatch.setattr(SegmentLog, "open", refuse)


def test_rows_equal_get_in_every_state(store: FileStore) -> None:
    empty, small, rotated = _new(store), _new(store, 3), _new(store, 40)
    deleted = _new(store, 2)
    store.delete(deleted)
    page = store.list("p")
    assert {i.uid for i in page.sessions} == {empty, small, rotated}  # deleted: not listed
    for info in page.sessions:
        assert info == store.get(info.uid)
    assert store._listed(deleted) == store.get(deleted)
    assert len(list((store.session_dir(rotated) / "journal").glob("*.seg*"))) > 2


def test_clean_sessions_are_listed_without_opening_a_journal(
    store: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    uids = [_new(store), _new(store, 2), _new(store, 30)]
    want = {uid: store.get(uid) for uid in uids}
    _forbid_open(monkeypatch)
    assert {i.uid: i for i in store.list("p").sessions} == want


def test_a_commit_after_the_hint_is_not_missed(store: FileStore) -> None:
    uid = _new(store, 2)
    writer = store.writer(uid)  # writes a hint at open, then commits without one
    try:
        writer.append([_event(7)])
        row = store.list("p").sessions[0]
        assert row == store.get(uid)
        assert row.last_seq == 5
    finally:
        writer.close()


def test_a_commit_into_free_space_is_seen_whatever_the_mtime(store: FileStore) -> None:
    """A commit that overwrites free space changes no size, and a coarse clock may leave
    the tail's mtime no newer than a stale hint's: the bytes at the hint's offset tell."""
    uid = _new(store, 2)
    sdir = store.session_dir(uid)
    tail = max((sdir / "journal").glob("*.seg"))
    size, old_hint = tail.stat().st_size, (sdir / "TAIL").read_bytes()
    with store.writer(uid) as writer:
        writer.append([_event(7)])
    assert tail.stat().st_size == size  # the commit landed in free space
    (sdir / "TAIL").write_bytes(old_hint)  # the hint from before that commit...
    later = tail.stat().st_mtime_ns + 10**9
    os.utime(sdir / "TAIL", ns=(later, later))  # ...not older than the tail
    assert _trusted(store, sdir) is None
    assert store.list("p").sessions[0].last_seq == 5


def test_a_tail_touched_after_the_hint_falls_back(
    store: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = _new(store, 2)
    sdir = store.session_dir(uid)
    tail = max((sdir / "journal").glob("*.seg"))
    hint_ns = os.stat(sdir / "TAIL").st_mtime_ns
    os.utime(tail, ns=(hint_ns + 10**9, hint_ns + 10**9))
    assert _trusted(store, sdir) is None
    assert store.list("p").sessions[0] == store.get(uid)
    _forbid_open(monkeypatch)
    os.utime(tail, ns=(hint_ns, hint_ns))
    assert store.list("p").sessions[0].last_seq == 4


def test_a_missing_or_stale_hint_falls_back(store: FileStore) -> None:
    uid = _new(store, 3)
    sdir = store.session_dir(uid)
    (sdir / "TAIL").unlink()
    assert _trusted(store, sdir) is None
    assert store.list("p").sessions[0] == store.get(uid)
    (sdir / "TAIL").write_text('{"position": {"segment": 1}}')
    assert store.list("p").sessions[0] == store.get(uid)


def test_a_vanished_session_json_is_listed_as_get_reports_it(store: FileStore) -> None:
    """get calls it damaged metadata; list shows that as a damaged row (issue 7), not a
    NotFoundError that failed the whole listing."""
    uid = _new(store)
    (store.session_dir(uid) / "session.json").unlink()
    error = _error_of(lambda: store.get(uid))
    assert isinstance(error, MetadataCorruptError)
    (row,) = store.list("p").sessions
    assert row.uid == uid and row.damaged == error.fields["problem"]


def _error_of(fn: Any) -> BaseException:
    try:
        fn()
    except BaseException as exc:
        return exc
    raise AssertionError("no error")


def test_forked_children_list_as_get(store: FileStore) -> None:
    parent = _new(store, 5)
    children = store.fork(parent, 6, [SessionMeta(uid=new_uid(), project="p") for _ in range(2)])
    for child in children:
        assert store._listed(child.uid) == store.get(child.uid)
    rows = {i.uid: i for i in store.list("p").sessions}
    assert all(rows[c.uid] == store.get(c.uid) for c in children)


def test_reindex_restores_missing_rows_and_drops_only_rows_without_a_directory(
    store: FileStore,
) -> None:
    live, gone, deleted = _new(store, 1), _new(store), _new(store)
    store.delete(deleted)
    store.catalog.rebuild([], stale=[live])  # as if a crash lost live's row
    shutil.rmtree(store.session_dir(gone))  # a row whose directory is gone
    racing = new_uid()  # a row a concurrent create added; its directory appears later
    store.catalog.add(racing, "p", time.time_ns())
    (store.sessions_dir / racing).mkdir()
    (store.sessions_dir / racing / "session.json").write_text("{}")
    assert store.reindex().indexed == 2  # live and deleted are readable; racing's is not
    assert set(store.catalog.uids()) == {live, deleted, racing}
    store.catalog.rebuild([], stale=[racing])
    assert [i.uid for i in store.list("p").sessions] == [live]
