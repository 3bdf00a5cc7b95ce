"""What an engine holds between turns is bounded (controller/heldlimit.py, held.py): at most
``cap`` parked writers over all its pools, the longest parked closed first and never one a
turn uses; and a parked writer's window of recent records within ``RECENT_BYTES``, its
reads past that answered from the store, unchanged."""

from __future__ import annotations

import resource

import pytest

from agentsessions.controller import held
from agentsessions.controller.held import WriterPool
from agentsessions.controller.heldlimit import HeldLimit, default_cap
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _turn(pool: WriterPool, uid: str, events: int = 1, text: str = "") -> None:
    """One turn's use of the pool, as the controller makes it."""
    with pool.using(uid):
        writer = pool.get(uid, claim=True) or pool.open(uid)
        batch = [construct.input_event(construct.text_message("user", text))] * events
        writer.append(batch or [construct.end_event("COMPLETED")], expected_last_seq=writer.head[0])
        pool.keep_open(writer)


def _pools(count: int, cap: int) -> tuple[MemoryStore, list[str], list[WriterPool]]:
    store = MemoryStore()
    uids = [store.create(SessionMeta(uid=new_uid())).uid for _ in range(count)]
    limit = HeldLimit(cap)
    return store, uids, [WriterPool(store, keep=1, limit=limit) for _ in uids]


def test_the_writers_parked_longest_ago_are_closed_past_the_cap() -> None:
    _store, uids, pools = _pools(5, cap=3)
    for uid, pool in zip(uids, pools, strict=True):
        _turn(pool, uid)
    held_now = [pool.get(uid) is not None for uid, pool in zip(uids, pools, strict=True)]
    assert held_now == [False, False, True, True, True]
    _turn(pools[0], uids[0])  # a closed one opens again, and the oldest held one goes
    held_now = [pool.get(uid) is not None for uid, pool in zip(uids, pools, strict=True)]
    assert held_now == [True, False, False, True, True]
    assert pools[0].limit is not None and pools[0].limit.closed == 3


def test_a_writer_a_turn_uses_is_never_closed_for_the_limit() -> None:
    _store, uids, pools = _pools(3, cap=1)
    _turn(pools[0], uids[0])
    with pools[0].using(uids[0]):  # a turn of session 0 is running
        writer = pools[0].get(uids[0], claim=True)
        assert writer is not None
        _turn(pools[1], uids[1])  # parks one more: session 0's turn keeps its writer
        writer.append([construct.end_event("COMPLETED")], expected_last_seq=writer.head[0])
        pools[0].keep_open(writer)
    assert pools[0].get(uids[0]) is not None and pools[1].get(uids[1]) is None


def test_the_default_cap_leaves_most_descriptors_to_everything_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1024, 4096))
    assert default_cap() == 128  # a quarter of 1024 descriptors, two a writer
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1 << 20, 1 << 20))
    assert default_cap() == 1024


def test_a_parked_writers_window_is_bounded_in_bytes_and_reads_stay_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(held, "RECENT_BYTES", 4096)
    store, uids, pools = _pools(1, cap=8)
    uid, pool = uids[0], pools[0]
    for _ in range(4):
        _turn(pool, uid, events=10, text="y" * 200)  # 40 records of about 300 bytes
    writer = pool.get(uid)
    assert writer is not None
    kept = list(writer._recent)
    assert 0 < sum(len(r.payload) for r in kept) <= 4096 < sum(len(r.payload) for r in kept) + 400
    assert kept[-1].seq == writer.head[0]  # the newest are the ones kept
    assert list(writer.read(1)) == list(store.read(uid, 1, 0))  # past the window: the store
    assert writer.events(1) == [r.event for r in store.read(uid, 1, 0)]
