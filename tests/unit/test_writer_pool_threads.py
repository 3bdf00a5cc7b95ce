"""The held-writer pool under threads: two pools over one store, each used by several
threads at once (as LangGraph's parallel tasks use one engine), never lose a writer from
under a turn nor raise from their own bookkeeping (a KeyError in ``get`` was seen)."""

from __future__ import annotations

import random
import sys
import threading
import time

from agentsessions.controller.held import WriterPool
from agentsessions.errors import LockHeldError
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct

THREADS = 8
ROUNDS = 200


def _turn(pool: WriterPool, uid: str) -> bool:
    """One turn's use of the pool, as the controller makes it; False if the lock was busy."""
    with pool.using(uid):  # as the controller claims a writer for a turn
        held = pool.get(uid, claim=True)
        if held is None:
            try:
                held = pool.open(uid)
            except LockHeldError:
                return False
        try:
            held.append([construct.end_event("COMPLETED")], expected_last_seq=held.head[0])
        except BaseException:
            pool.discard(held)
            raise
        pool.keep_open(held)
    return True


def test_two_pools_hammered_from_threads_keep_every_commit() -> None:
    store = MemoryStore()
    uids = [store.create(SessionMeta(uid=new_uid())).uid for _ in range(3)]
    pools = [WriterPool(store, keep=2, idle_seconds=0.01), WriterPool(store, keep=2)]
    locks = {uid: threading.Lock() for uid in uids}  # one turn per session at a time
    done = [0]
    errors: list[BaseException] = []
    count = threading.Lock()

    def hammer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(ROUNDS):
                uid, pool = rng.choice(uids), rng.choice(pools)
                if rng.random() < 0.1:
                    with locks[uid]:  # an engine's release holds the session's lock
                        pool.release(uid)
                    continue
                if rng.random() < 0.2:
                    pool.get(uid)  # a state read (the engine's _state) racing a turn
                    continue
                with locks[uid]:
                    if _turn(pool, uid):
                        with count:
                            done[0] += 1
                time.sleep(0)
        except BaseException as exc:  # the test reports it below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(THREADS)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    for pool in pools:
        pool.close()
    assert errors == []
    assert done[0] > 0
    assert sum(store.get(uid).last_seq for uid in uids) == done[0]
