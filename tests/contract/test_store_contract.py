"""ONE contract suite that every store passes: the file store and the in-memory store, each
also encrypted at rest (``file-encrypted``, ``memory-encrypted``: the whole suite again on
ciphertext, plus the encryption tests at the end).

A distributed store joins by adding a fixture to ``STORES`` (and, encrypted, an entry to
``ENCRYPTED``: the same store without the master key, and every byte it holds). Each test
states a promise of ``agentsessions.journal.stores.store`` that a user of any store relies on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from agentsessions.errors import (
    ChainBrokenError,
    CommitTooLargeError,
    ConflictError,
    FencedError,
    InvalidArgumentError,
    LockHeldError,
    MasterKeyError,
    NotFoundError,
    SessionDeletedError,
    StateConflictError,
)
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import (
    COMMIT_IDS_REMEMBERED,
    SessionMeta,
    Snapshot,
    StateUpdate,
    Store,
    WorkingState,
    new_uid,
)
from agentsessions.journal.tools.verify import check_chain
from agentsessions.v1 import construct
from agentsessions.v1.results import VerifyReport

MAX_COMMIT = 64 * 1024


def _file_store(tmp: Path, master: MasterKey | None = None) -> FileStore:
    return FileStore(
        tmp / "home",
        options=StoreOptions(max_commit_bytes=MAX_COMMIT, segment_max_bytes=16 * 1024),
        master=master,
    )


def _memory_store(tmp: Path, master: MasterKey | None = None) -> MemoryStore:
    return MemoryStore(max_commit_bytes=MAX_COMMIT, master=master)


def _jetstream_store(server: Any, shards: int = 0, **kw: Any) -> Any:
    """A fresh stream (its own name and subject prefix) on the shared durable server;
    ``shards``: a new deployment spread over that many streams."""
    from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
    from agentsessions.journal.stores.jetstream.store import JetStreamStore

    token = new_uid()[5:17]
    query = {"shards": str(shards)} if shards else {}
    url = server.store_url(stream=f"T{token}", prefix=f"t{token}", **query)
    return JetStreamStore(JetStreamOptions.parse(url), max_commit_bytes=MAX_COMMIT, **kw)


STORES: dict[str, Callable[[Path], Any]] = {
    "file": _file_store,
    "memory": _memory_store,
    # encryption at rest (docs/FORMAT.md 15): the whole contract again, on ciphertext
    "file-encrypted": lambda tmp: _file_store(tmp, MasterKey.generate()),
    "memory-encrypted": lambda tmp: _memory_store(tmp, MasterKey.generate()),
}


class Encrypted(NamedTuple):
    """What the encryption tests need of an encrypted store param besides the store: the
    same store reopened without the master key, and every byte it holds (to probe)."""

    keyless: Callable[[Any], Any]
    held: Callable[[Any], bytes]


def _held_in_memory(obj: Any) -> bytes:
    """Every bytes and str value reachable in an object graph (a MemoryStore's sessions)."""
    seen: set[int] = set()
    out: list[bytes] = []

    def visit(o: Any) -> None:
        if id(o) in seen:
            return
        seen.add(id(o))
        if isinstance(o, bytes | bytearray):
            out.append(bytes(o))
        elif isinstance(o, str):
            out.append(o.encode())
        elif isinstance(o, dict):
            for k, v in o.items():
                visit(k)
                visit(v)
        elif isinstance(o, list | tuple | set | frozenset):
            for v in o:
                visit(v)
        elif hasattr(o, "__dataclass_fields__"):
            for name in o.__dataclass_fields__:
                visit(getattr(o, name))

    visit(obj)
    return b"\0".join(out)


ENCRYPTED: dict[str, Encrypted] = {
    "file-encrypted": Encrypted(
        lambda s: FileStore(s.home, options=s.options),
        lambda s: b"".join(p.read_bytes() for p in sorted(s.home.rglob("*")) if p.is_file()),
    ),
    "memory-encrypted": Encrypted(
        lambda s: s.with_master(None), lambda s: _held_in_memory(s._sessions)
    ),
}
"""A store param joins the encryption tests by an entry here (and one in ``STORES``)."""


@pytest.fixture(
    params=[
        *sorted(STORES), "jetstream", "jetstream-checkpoints", "jetstream-encrypted",
        "jetstream-sharded",
    ]
)  # fmt: skip
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "jetstream":  # a real durable nats-server, started once per run
        s = _jetstream_store(request.getfixturevalue("nats_server"))
    elif request.param == "jetstream-encrypted":  # every session sealed under its own key,
        # with checkpoints every 3 messages so folds start from one too
        from agentsessions.journal.crypto.keys import MasterKey

        s = _jetstream_store(
            request.getfixturevalue("nats_server"), master=MasterKey.generate(), checkpoint_every=3
        )
    elif request.param == "jetstream-sharded":  # sessions spread over three streams
        s = _jetstream_store(request.getfixturevalue("nats_server"), shards=3)
    elif request.param == "jetstream-checkpoints":  # a checkpoint every 2 messages: every
        # open, read and state goes through one, as in a long session
        s = _jetstream_store(request.getfixturevalue("nats_server"), checkpoint_every=2)
    else:
        s = STORES[request.param](tmp_path)
    yield s
    s.close()


def _new(store: Store, **kw: Any) -> str:
    uid = new_uid()
    store.create(SessionMeta(uid=uid, **kw))
    return uid


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def test_create_writes_metadata_before_any_event(store: Store) -> None:
    uid = _new(
        store, project="acme", name="triage", harness="echo", model="echo-1", labels={"a": "b"}
    )
    info = store.get(uid)
    assert (info.meta.project, info.meta.name, info.meta.harness) == ("acme", "triage", "echo")
    assert info.meta.labels == {"a": "b"}
    assert (info.last_seq, info.last_hash, info.compute_state, info.exec_state) == (
        0,
        "",
        "COMPUTE_NONE",
        "EXEC_PENDING",
    )
    assert info.meta.create_time_ns > 0
    assert list(store.read(uid)) == []


def test_append_numbers_from_one_and_chains(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        r1 = w.append([_say("a")], expected_last_seq=0)
        r2 = w.append([_say("b"), _say("c")], expected_last_seq=1)
    assert (r1.first_seq, r1.last_seq, r2.first_seq, r2.last_seq) == (1, 1, 2, 3)
    records = list(store.read(uid))
    assert [r.seq for r in records] == [1, 2, 3]
    assert records[0].prev_hash == ""
    assert [r.prev_hash for r in records[1:]] == [r.content_hash for r in records[:-1]]
    assert check_chain(records, VerifyReport(source="t")).ok
    assert store.get(uid).last_seq == 3 and store.get(uid).last_hash == r2.last_hash
    assert records[1].event["message"]["parts"][0]["text"]["text"] == "b"


def test_lost_cas_writes_nothing_and_reports_head(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        ok = w.append([_say("a")], expected_last_seq=0)
        with pytest.raises(ConflictError) as err:
            w.append([_say("b")], expected_last_seq=0)
    assert (err.value.head_seq, err.value.head_hash) == (1, ok.last_hash)
    assert [r.seq for r in store.read(uid)] == [1]


def test_second_writer_is_refused_while_first_holds(store: Store) -> None:
    uid = _new(store)
    w = store.writer(uid)
    try:
        with pytest.raises(LockHeldError):
            store.writer(uid)
    finally:
        w.close()
    with store.writer(uid) as again:
        again.append([_say("x")])


def test_fence_is_minted_per_writer_and_stale_fence_refused(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w1:
        first = w1.fence
        w1.append([_say("a")])
    with store.writer(uid) as w2:
        assert w2.fence > first
        with pytest.raises(FencedError):
            w2.append([_say("stale")], fence=first)
        w2.append([_say("fresh")], fence=w2.fence)
    records = list(store.read(uid))
    assert [r.fence for r in records] == [first, w2.fence]


def test_retried_commit_id_returns_first_result_and_appends_nothing(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        first = w.append([_say("a"), _say("b")], commit_id="c-1")
        again = w.append([_say("a"), _say("b")], expected_last_seq=0, commit_id="c-1")
    assert again.duplicate and not first.duplicate
    assert (again.first_seq, again.last_seq, again.last_hash) == (1, 2, first.last_hash)
    assert store.get(uid).last_seq == 2


def test_commit_ids_are_remembered_across_writers(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        first = w.append([_say("a")], commit_id="keep-me")
        for i in range(10):
            w.append([_say(str(i))], commit_id=f"other-{i}")
    with store.writer(uid) as w:
        again = w.append([_say("a")], commit_id="keep-me")
    assert again.duplicate and again.last_hash == first.last_hash
    assert store.get(uid).last_seq == 11


def test_at_least_1024_commit_ids_are_remembered(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        first = w.append([_say("0")], commit_id="id-0")
        for i in range(1, COMMIT_IDS_REMEMBERED):
            w.append([_say(str(i))], commit_id=f"id-{i}")
    with store.writer(uid) as w:
        assert w.append([_say("0")], commit_id="id-0") == first.__class__(
            first.first_seq, first.last_seq, first.last_hash, first.fence, True
        )


def test_the_window_is_the_newest_1024_ids_and_landed_writes_nothing(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        first = w.append([_say("0")], commit_id="id-0")
        w.append([_say("plain")])  # a commit without an id takes no room in the window
        for i in range(1, COMMIT_IDS_REMEMBERED):
            w.append([_say(str(i))], commit_id=f"id-{i}")
    with store.writer(uid) as w:
        head = w.head
        found = w.landed("id-0")
        assert found is not None and found.duplicate and found.last_hash == first.last_hash
        assert w.landed("never") is None and w.head == head
        w.append([_say("newer")], commit_id="id-new")  # the 1,025th id pushes id-0 out
        assert w.landed("id-0") is None and w.landed("id-1") is not None
    with store.writer(uid) as w:  # and a writer opened afresh agrees
        assert w.landed("id-0") is None and w.landed("id-new") is not None


def test_commit_over_the_limit_is_refused_whole(store: Store) -> None:
    uid = _new(store)
    big = "x" * (MAX_COMMIT // 4)
    with store.writer(uid) as w:
        w.append([_say("before")])
        with pytest.raises(CommitTooLargeError):
            w.append([_say(big) for _ in range(5)])
        w.append([_say("after")])
    assert [r.seq for r in store.read(uid)] == [1, 2]


def test_invalid_event_is_refused_before_anything_is_written(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        with pytest.raises(InvalidArgumentError) as err:
            w.append([_say("ok"), {"kind": "EVENT_BOGUS"}])
        assert "EVENT_BOGUS" in str(err.value) or "kind" in str(err.value)
    assert list(store.read(uid)) == []


def test_read_ranges(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        for i in range(40):
            w.append([_say(f"m{i}" * 20)])
    assert [r.seq for r in store.read(uid, 17)] == list(range(17, 41))
    assert [r.seq for r in store.read(uid, 5, 9)] == [5, 6, 7, 8, 9]
    assert [r.seq for r in store.read(uid, 41)] == []


def test_projections_follow_the_log(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([construct.execution_start(input_count=1, execution_id="e1"), _say("hi")])
        assert store.get(uid).exec_state == "EXEC_RUNNING"
        assert store.get(uid).compute_state == "COMPUTE_LIVE"
        w.append([construct.end_event(execution_id="e1")])
        assert store.get(uid).exec_state == "EXEC_COMPLETED"
        w.append([construct.lifecycle_event("LIFECYCLE_SUSPEND")])
        assert store.get(uid).compute_state == "COMPUTE_COLD"
        assert store.get(uid).exec_state == "EXEC_COMPLETED"
        w.append([construct.lifecycle_event("LIFECYCLE_RESUME")])
        assert store.get(uid).compute_state == "COMPUTE_LIVE"


def test_list_is_newest_first_and_pages_without_skips_or_repeats(store: Store) -> None:
    uids = [_new(store, project="p", create_time_ns=1_000 + i) for i in range(7)]
    _new(store, project="other")
    seen: list[str] = []
    cursor = ""
    while True:
        page = store.list("p", page_size=3, cursor=cursor)
        seen += [s.uid for s in page.sessions]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
        _new(store, project="p")  # sessions created while paging are newer: never repeat a row
    assert seen == list(reversed(uids))


def test_list_page_size_defaults_and_bad_cursor(store: Store) -> None:
    for _ in range(3):
        _new(store)
    assert len(store.list("default").sessions) == 3
    with pytest.raises(InvalidArgumentError):
        store.list("default", cursor="not-a-cursor")
    with pytest.raises(InvalidArgumentError):
        store.list("a/b")


def test_delete_hides_refuses_writes_keeps_reads(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say("kept")])
    info = store.delete(uid)
    assert info.deleted
    assert uid not in [s.uid for s in store.list("default").sessions]
    assert store.get(uid).deleted
    assert [r.seq for r in store.read(uid)] == [1]
    with pytest.raises(SessionDeletedError) as refused:
        store.writer(uid)
    # one message whichever store refuses (it was three)
    assert str(refused.value) == (
        f"session {uid} was deleted; it can still be read and verified, never written"
    )
    assert refused.value.fields["session"] == uid
    assert uid in store.uids()


def test_unknown_and_malformed_ids(store: Store) -> None:
    with pytest.raises(NotFoundError):
        store.get(new_uid())
    with pytest.raises(NotFoundError):  # when called, not when iterated: engines rely on it
        store.read(new_uid())
    for bad in ["../etc", "/abs/path", "sess-XYZ", "", "sess-" + "a" * 25]:
        with pytest.raises(InvalidArgumentError):
            store.get(bad)


def test_append_records_keeps_hashes_and_refuses_bad_links(store: Store) -> None:
    src = _new(store)
    with store.writer(src) as w:
        w.append([_say("a"), _say("b"), _say("c")])
    records = list(store.read(src))
    dst = _new(store)
    with store.writer(dst) as w:
        with pytest.raises(ChainBrokenError):
            w.append_records(records[1:])
        w.append_records(records)
    assert [r.content_hash for r in store.read(dst)] == [r.content_hash for r in records]


def test_follow_streams_new_commits(store: Store) -> None:
    uid = _new(store)
    got: list[int] = []

    def reader() -> None:
        for record in store.follow(uid, 1, idle_timeout=2.0):
            got.append(record.seq)
            if record.seq == 3:
                return

    t = threading.Thread(target=reader)
    t.start()
    with store.writer(uid) as w:
        w.append([_say("a")])
        time.sleep(0.1)
        w.append([_say("b"), _say("c")])
    t.join(timeout=10)
    assert got == [1, 2, 3]


# -- working state (decision 4 (a), issue 9 item 6) ------------------------------------------
def test_a_session_without_state_reads_as_version_zero(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        assert w.state == WorkingState()
        r = w.append([_say("a")])
    assert r.state_version == 0 and store.state(uid) == WorkingState()


def test_entries_and_state_commit_together(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say("a")])
        r = w.append([_say("b"), _say("c")], state=StateUpdate(b"\x00mind", author="h"))
        assert (r.first_seq, r.last_seq, r.state_version, len(r.records)) == (2, 3, 1, 2)
        held = w.state
    assert (held.version, held.data, held.covers_from, held.covers_to, held.author) == (
        1, b"\x00mind", 1, 3, "h",
    )  # fmt: skip
    assert held.time_ns > 0
    assert store.state(uid) == held
    assert [r.seq for r in store.read(uid)] == [1, 2, 3]


def test_a_state_only_commit_appends_no_entry(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say("a")])
        head = w.head
        r = w.append((), state=StateUpdate(b"s", covers_from=1, covers_to=1))
        assert (r.first_seq, r.last_seq, r.last_hash, r.records) == (2, 1, head[1], ())
        assert w.head == head and r.state_version == 1
        w.append([_say("b")])
        with pytest.raises(InvalidArgumentError):
            w.append(())  # no events and no state: nothing to commit
    assert [r.seq for r in store.read(uid)] == [1, 2]
    assert store.state(uid).covers_to == 1 and store.get(uid).last_seq == 2
    # follow sees entries only, in order, as before
    assert [r.seq for r in store.follow(uid, 1, idle_timeout=0.05)] == [1, 2]


def test_a_stale_journal_end_refuses_entries_and_state(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        ok = w.append([_say("a")], state=StateUpdate(b"v1"))
        with pytest.raises(StateConflictError) as err:
            w.append([_say("b")], expected_last_seq=0, state=StateUpdate(b"v2"))
        assert w.state.data == b"v1"
    assert isinstance(err.value, ConflictError) and err.value.exit_code == 4
    snap = err.value.snapshot
    assert isinstance(snap, Snapshot)
    assert (snap.last_seq, snap.last_hash, snap.state.version, snap.state.data) == (
        1, ok.last_hash, 1, b"v1",
    )  # fmt: skip
    assert [r.seq for r in store.read(uid)] == [1] and store.state(uid).version == 1


def test_a_stale_state_version_refuses_entries_and_state(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append((), state=StateUpdate(b"one"), expected_state_version=0)
        w.append([_say("a")], state=StateUpdate(b"two"), expected_state_version=1)
        for events in ([_say("b")], ()):
            with pytest.raises(StateConflictError) as err:
                w.append(events, state=StateUpdate(b"stale"), expected_state_version=1)
            assert err.value.snapshot.state == w.state and err.value.state_version == 2
        with pytest.raises(StateConflictError):  # the condition alone, on an entries commit
            w.append([_say("c")], expected_state_version=0)
        w.append([_say("d")], state=StateUpdate(b"merged"), expected_state_version=2)
    assert [r.seq for r in store.read(uid)] == [1, 2]
    assert (store.state(uid).version, store.state(uid).data) == (3, b"merged")


def test_a_retried_state_commit_is_not_applied_twice(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        first = w.append([_say("a")], state=StateUpdate(b"x"), commit_id="s-1")
        only = w.append((), state=StateUpdate(b"y"), commit_id="s-2")
        again = w.append([_say("a")], state=StateUpdate(b"x"), commit_id="s-1")
        assert again.duplicate and again.state_version == first.state_version == 1
    with store.writer(uid) as w:  # remembered across writers too
        retry = w.append((), state=StateUpdate(b"y"), commit_id="s-2", expected_state_version=0)
        assert retry.duplicate and retry.state_version == only.state_version == 2
        assert w.state.version == 2
    assert store.get(uid).last_seq == 1 and store.state(uid).data == b"y"


def test_state_bytes_count_toward_the_commit_limit(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say("a")])
        with pytest.raises(CommitTooLargeError):
            w.append([_say("b")], state=StateUpdate(b"s" * (MAX_COMMIT - 100)))
        with pytest.raises(CommitTooLargeError):
            w.append((), state=StateUpdate(b"s" * (MAX_COMMIT + 1)))
        w.append((), state=StateUpdate(b"s" * (MAX_COMMIT - 1000)))
    assert store.get(uid).last_seq == 1 and store.state(uid).version == 1


def test_a_state_outside_the_journal_is_refused(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say("a")])
        for bad in (StateUpdate(b"s", covers_to=5), StateUpdate(b"s", covers_from=3)):
            with pytest.raises(InvalidArgumentError):
                w.append((), state=bad)
        w.append((), state=StateUpdate(b"s", covers_from=1, covers_to=1))
    assert store.state(uid).version == 1


def test_a_reopened_writer_continues_from_the_committed_state(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say("a")], state=StateUpdate(b"early" * 50, author="mem"))
        for i in range(120):  # past several file-store segment rotations (16 KiB)
            w.append([_say("filler " * 20 + str(i))])
        saved = w.state
    with store.writer(uid) as w:
        assert w.state == saved and w.state.data == b"early" * 50
        w.append((), state=StateUpdate(b"late"), expected_state_version=1)
    with store.writer(uid) as w:
        assert (w.state.version, w.state.data, w.state.covers_to) == (2, b"late", 121)
    assert store.state(uid).data == b"late"


def test_the_state_before_a_seq_is_what_stood_there(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append((), state=StateUpdate(b"v1"))  # an empty journal: it covers nothing
        w.append([_say("a")])
        w.append((), state=StateUpdate(b"v2"))
        w.append([_say("b")])
        w.append([_say("c")], state=StateUpdate(b"v3"))  # committed at head 2, with seq 3
        w.append([_say("d")])
    assert store.state(uid, 1).data == b"v1" and store.state(uid, 1).covers_to == 0
    assert store.state(uid, 2).data == b"v2" and store.state(uid, 2).covers_to == 1
    assert store.state(uid, 3).data == b"v3" and store.state(uid, 9).data == b"v3"
    assert store.state(uid).version == 3


def test_states_lists_every_version_in_commit_order(store: Store) -> None:
    uid = _new(store)
    assert list(store.states(uid)) == []
    with store.writer(uid) as w:
        w.append((), state=StateUpdate(b"v1"))
        w.append([_say("a")], state=StateUpdate(b"v2"))
        w.append([_say("b")])
        w.append((), state=StateUpdate(b"v3"))
    found = [(at, s.version, s.data) for at, s in store.states(uid)]
    assert found == [(0, 1, b"v1"), (0, 2, b"v2"), (2, 3, b"v3")]


def test_fork_children_start_without_working_state(store: Store) -> None:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say("a")], state=StateUpdate(b"parent's"))
    (child,) = store.fork(uid, 1, [SessionMeta(uid=new_uid())])
    assert store.state(child.uid) == WorkingState()
    with store.writer(child.uid) as w:
        assert w.state.version == 0
        w.append((), state=StateUpdate(b"child's"), expected_state_version=0)
    assert store.state(child.uid).data == b"child's" and store.state(uid).data == b"parent's"


def test_fork_children_share_the_prefix_and_end_with_a_marker(store: Store) -> None:
    parent = _new(store, project="p", harness="echo", model="m1", annotations={"k": "v"})
    with store.writer(parent) as w:
        for i in range(6):
            w.append([_say(f"m{i}")])
    metas = [SessionMeta(uid=new_uid(), name=f"c{i}", labels={"l": "x"}) for i in range(3)]
    metas = [
        SessionMeta(
            uid=m.uid,
            project="p",
            name=m.name,
            harness="echo",
            model="m1",
            labels=m.labels,
            parent_uid=parent,
            fork_seq=4,
        )
        for m in metas
    ]
    children = store.fork(parent, 4, metas)
    parent_records = list(store.read(parent))
    assert [c.meta.name for c in children] == ["c0", "c1", "c2"]
    for child in children:
        records = list(store.read(child.uid))
        assert [r.content_hash for r in records[:4]] == [r.content_hash for r in parent_records[:4]]
        marker = records[4]
        assert marker.seq == 5 and marker.prev_hash == parent_records[3].content_hash
        assert marker.event["lifecycle"] == {"kind": "LIFECYCLE_FORK", "detail": "parent@4"}
        assert check_chain(records, VerifyReport(source="child")).ok
        info = store.get(child.uid)
        assert (info.last_seq, info.compute_state, info.meta.parent_uid) == (
            5,
            "COMPUTE_COLD",
            parent,
        )
        with store.writer(child.uid) as w:
            w.append([_say("child turn")], expected_last_seq=5)
        assert [r.seq for r in store.read(child.uid, 3, 6)] == [3, 4, 5, 6]
    assert [r.content_hash for r in store.read(parent)] == [r.content_hash for r in parent_records]
    assert store.get(parent).last_seq == 6


def test_fork_is_all_or_nothing(store: Store) -> None:
    parent = _new(store)
    with store.writer(parent) as w:
        w.append([_say("a")])
    taken = _new(store)
    metas = [SessionMeta(uid=new_uid()), SessionMeta(uid=taken)]
    with pytest.raises(InvalidArgumentError):
        store.fork(parent, 1, metas)
    assert metas[0].uid not in store.uids()
    with pytest.raises(InvalidArgumentError):
        store.fork(parent, 2, [SessionMeta(uid=new_uid())])


def test_forked_child_verifies_from_genesis_on_disk(tmp_path: Path) -> None:
    from agentsessions.journal.tools.verify import verify_dir, verify_session

    store = _file_store(tmp_path)
    parent = _new(store)
    with store.writer(parent) as w:
        for i in range(30):
            w.append([_say(f"m{i}" * 40)])
    child = store.fork(parent, 20, [SessionMeta(uid=new_uid(), parent_uid=parent, fork_seq=20)])[0]
    report = verify_session(store, child.uid)
    assert report.ok and report.last_seq == 21, report.to_json()
    assert verify_dir(store.session_dir(child.uid)).ok
    grandchild = store.fork(child.uid, 21, [SessionMeta(uid=new_uid())])[0]
    assert verify_session(store, grandchild.uid).ok
    assert [r.seq for r in store.read(grandchild.uid)] == list(range(1, 23))


# --- component (tool) stores: a session's per-tool journals (issue 9 item 6) ---------------


def _note(text: str) -> dict[str, Any]:
    msg = construct.message("tool", construct.data_part({"text": text}))
    return construct.output_event(msg, actor={"principal": "notes"})


def test_component_store_keeps_the_journal_contract(store: Store) -> None:
    uid = _new(store)
    part = store.component(uid, "notes")
    assert (part.uid, part.name) == (uid, "notes")
    assert list(part.read()) == [] and store.components(uid) == ()
    with part.writer() as w:
        r1 = w.append([_note("a")], expected_last_seq=0, commit_id="k1")
        again = w.append([_note("a")], expected_last_seq=0, commit_id="k1")
        with pytest.raises(ConflictError):
            w.append([_note("b")], expected_last_seq=0)
        with pytest.raises(CommitTooLargeError):
            w.append([_note("x" * MAX_COMMIT)])
        r2 = w.append([_note("b"), _note("c")], expected_last_seq=1)
        with pytest.raises(LockHeldError):
            part.writer()
    assert again.duplicate and again.last_seq == r1.last_seq == 1
    assert (r2.first_seq, r2.last_seq) == (2, 3)
    records = list(part.read())
    assert [r.seq for r in records] == [1, 2, 3] and records[0].prev_hash == ""
    assert check_chain(records, VerifyReport(source="t")).ok
    assert [r.seq for r in part.read(2, 2)] == [2]
    with part.writer() as w:  # a new writer: a newer fence, the commit id still remembered
        assert w.fence > r1.fence
        assert w.append([_note("a")], commit_id="k1").duplicate
        assert w.append([_note("d")]).first_seq == 4  # numbers never reused
    assert store.components(uid) == ("notes",)


def test_component_stores_are_apart_from_the_conversation_and_each_other(store: Store) -> None:
    uid, other = _new(store), _new(store)
    with store.writer(uid) as w:
        w.append([_say("the conversation")])
    with store.component(uid, "notes").writer() as w:  # while no session writer, or with one
        w.append([_note("mine")])
    with store.writer(uid) as sw, store.component(uid, "cache").writer() as cw:
        cw.append([_note("cached")])
        sw.append([_say("more")])
    assert [r.seq for r in store.read(uid)] == [1, 2]  # the session's journal is its own
    assert store.get(uid).last_seq == 2
    assert [r.event["message"]["parts"][0]["data"]["data"]["text"]
            for r in store.component(uid, "notes").read()] == ["mine"]  # fmt: skip
    assert len(list(store.component(uid, "cache").read())) == 1
    assert store.components(uid) == ("cache", "notes")
    assert list(store.component(other, "notes").read()) == [] and store.components(other) == ()


def test_component_store_names_and_sessions_are_checked(store: Store) -> None:
    uid = _new(store)
    for bad in ["", "../x", "a/b", ".hidden", "-x", "x" * 65, "1abc"]:
        with pytest.raises(InvalidArgumentError):
            store.component(uid, bad)
    with pytest.raises(NotFoundError):
        store.component(new_uid(), "notes")
    with pytest.raises(NotFoundError):
        store.components(new_uid())


def test_component_stores_are_deleted_with_their_session(store: Store) -> None:
    uid = _new(store)
    part = store.component(uid, "notes")
    w = part.writer()
    w.append([_note("kept")])
    with pytest.raises(LockHeldError):  # a tool store being written holds the delete back
        store.delete(uid)
    w.close()
    store.delete(uid)
    with pytest.raises(SessionDeletedError, match=r"its tool store 'notes' can still be read"):
        part.writer()
    with pytest.raises(SessionDeletedError):
        store.component(uid, "fresh").writer()
    assert [r.seq for r in part.read()] == [1]  # still read (and verified)
    assert store.components(uid) == ("notes",)


def test_fork_children_start_with_empty_component_stores(store: Store) -> None:
    parent = _new(store)
    with store.writer(parent) as w:
        w.append([_say("a")])
    with store.component(parent, "notes").writer() as w:
        w.append([_note("the parent's")])
    child = store.fork(parent, 1, [SessionMeta(uid=new_uid())])[0]
    assert store.components(child.uid) == ()
    assert list(store.component(child.uid, "notes").read()) == []
    with store.component(child.uid, "notes").writer() as w:
        assert w.append([_note("the child's")]).first_seq == 1
    assert len(list(store.component(parent, "notes").read())) == 1


def test_component_follow_streams_new_commits(store: Store) -> None:
    uid = _new(store)
    part = store.component(uid, "notes")
    got: list[int] = []

    def reader() -> None:
        for record in part.follow(1, idle_timeout=5.0):
            got.append(record.seq)
            if record.seq == 3:
                return

    t = threading.Thread(target=reader)
    t.start()
    with part.writer() as w:  # the store is made after the follower started waiting
        w.append([_note("a")])
        w.append([_note("b"), _note("c")])
    t.join(timeout=20)
    assert got == [1, 2, 3]
    assert [r.seq for r in part.follow(3, idle_timeout=0.05)] == [3]


def test_verify_walks_every_component_store(tmp_path: Path) -> None:
    from agentsessions.journal.tools.verify import verify_session
    from agentsessions.sessions.offline import verify

    for s in (_file_store(tmp_path), _memory_store(tmp_path)):
        uid = _new(s)
        with s.writer(uid) as w:
            w.append([_say("a")])
        for name in ("cache", "notes"):
            with s.component(uid, name).writer() as w:
                w.append([_note("1"), _note("2")])
        report = verify(s, uid)
        assert report.ok, report.to_json()
        assert [c["component"] for c in report.to_json()["components"]] == ["cache", "notes"]
        assert [c["last_seq"] for c in report.to_json()["components"]] == [2, 2]
    assert isinstance(s, MemoryStore)
    fs = _file_store(tmp_path / "damaged")
    uid = _new(fs)
    with fs.component(uid, "notes").writer() as w:
        w.append([_note("one")])
        w.append([_note("two")])
    seg = next((fs.session_dir(uid) / "components" / "notes" / "journal").glob("*.seg"))
    data = bytearray(seg.read_bytes())
    at = data.find(b"two")
    assert at > 0
    data[at] ^= 0x01  # one flipped bit in an acknowledged entry
    seg.write_bytes(bytes(data))
    report = verify_session(fs, uid)
    assert not report.ok and report.exit_code in (8, 9)
    assert "tool store 'notes' does not verify" in report.reason
    assert report.to_json()["components"][0]["ok"] is False


# --- encryption at rest: what every encrypted store promises (docs/FORMAT.md 15) ----------

SECRET = "swordfish-4711"


def _jetstream_held(store: Any) -> bytes:
    """Every message body of a JetStream store's journal and key streams, as stored."""
    streams = (store._opts.stream, store._keys.name)

    async def scan(js: Any) -> bytes:
        out = b""
        for stream in streams:
            info = await js.stream_info(stream)
            for seq in range(info.state.first_seq, info.state.last_seq + 1):
                out += bytes((await js.get_msg(stream, seq=seq)).data or b"") + b"\0"
        return out

    return bytes(store._client.run_js(scan))


@pytest.fixture(params=[*sorted(ENCRYPTED), "jetstream-encrypted"])
def encrypted(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Encrypted]]:
    opened: list[Any] = []
    if request.param == "jetstream-encrypted":  # the real durable server of the run
        from agentsessions.journal.crypto.keys import MasterKey

        s = _jetstream_store(request.getfixturevalue("nats_server"), master=MasterKey.generate())

        def keyless(store: Any) -> Any:
            from agentsessions.journal.stores.jetstream.store import JetStreamStore

            opened.append(JetStreamStore(store._opts))
            return opened[-1]

        how = Encrypted(keyless, _jetstream_held)
    else:
        s, how = STORES[request.param](tmp_path), ENCRYPTED[request.param]
    yield s, how
    for other in opened:
        other.close()
    s.close()


def _fill_secret(store: Any) -> str:
    uid = _new(store)
    with store.writer(uid) as w:
        w.append([_say(f"say {SECRET}")], state=StateUpdate(f"state {SECRET}".encode()))
    with store.component(uid, "notes").writer() as w:
        w.append([_note(f"note {SECRET}")], state=StateUpdate(f"tool {SECRET}".encode()))
    store.record_tool_receipt(uid, f"key-{SECRET}", {"result": {"text": SECRET}})
    store.set_workload(uid, f"# {SECRET}\n")
    return uid


def test_an_encrypted_store_holds_no_plaintext_and_reads_it_back(
    encrypted: tuple[Any, Encrypted],
) -> None:
    store, how = encrypted
    uid = _fill_secret(store)
    assert SECRET.encode() not in how.held(store)
    assert b"notes" in how.held(store)  # the probe sees the clear structure
    assert store.get(uid).meta.encrypted
    assert SECRET in json.dumps([r.event for r in store.read(uid)])
    assert check_chain(store.read(uid), VerifyReport(source="t")).ok
    assert store.state(uid).data == f"state {SECRET}".encode()
    assert [s.data for _, s in store.states(uid)] == [f"state {SECRET}".encode()]
    part = store.component(uid, "notes")
    assert SECRET in json.dumps([r.event for r in part.read()])
    assert part.state().data == f"tool {SECRET}".encode()
    assert store.tool_receipt(uid, f"key-{SECRET}") == {"result": {"text": SECRET}}
    assert store.workload(uid) == f"# {SECRET}\n"
    child = store.fork(uid, 1, [SessionMeta(uid=new_uid())])[0]
    assert child.meta.encrypted and [r.seq for r in store.read(child.uid)] == [1, 2]
    assert SECRET.encode() not in how.held(store)


def test_without_the_master_key_content_is_exit_26_and_the_structure_shows(
    encrypted: tuple[Any, Encrypted],
) -> None:
    store, how = encrypted
    uid = _fill_secret(store)
    keyless = how.keyless(store)
    assert keyless.get(uid).last_seq == 1  # metadata and structure are in the clear
    assert keyless.components(uid) == ("notes",)
    part = keyless.component(uid, "notes")
    calls: list[Callable[[], Any]] = [
        lambda: list(keyless.read(uid)),
        lambda: list(keyless.follow(uid, idle_timeout=0.01)),
        lambda: keyless.writer(uid),
        lambda: keyless.state(uid),
        lambda: list(part.read()),
        lambda: part.state(),
        lambda: part.writer(),
        lambda: keyless.component(uid, "fresh").writer(),
        lambda: keyless.tool_receipt(uid, f"key-{SECRET}"),
        lambda: keyless.workload(uid),
    ]
    for call in calls:
        with pytest.raises(MasterKeyError) as caught:
            call()
        assert caught.value.exit_code == 26
    assert keyless.components(uid) == ("notes",)  # nothing was made
    with store.writer(uid) as w:  # and nothing was changed: the keyed store goes on
        assert w.append([_say("more")], expected_last_seq=1).last_seq == 2
