"""The streamed replay's history: an execution sees exactly the events before it."""

from __future__ import annotations

from collections import deque

from agentsessions.controller.history import StoreHistory
from agentsessions.controller.replay import WindowHistory
from agentsessions.journal.stores.memory.store import MemoryStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _session(events: int) -> tuple[MemoryStore, str]:
    store = MemoryStore()
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as writer:
        for i in range(events):
            writer.append(
                [
                    dict(
                        construct.input_event(
                            construct.message("user", construct.text_part(str(i)))
                        )
                    )
                ]
            )
    return store, uid


def test_the_first_execution_iterates_an_empty_history() -> None:
    store, uid = _session(4)
    history = WindowHistory(deque(), 0, StoreHistory(store, uid, 4))
    assert len(history) == 0
    assert list(history) == []  # was: the whole journal (a read to seq 0 is "to the head")
    assert history.tail(10) == []


def test_a_later_execution_iterates_only_what_came_before_it() -> None:
    store, uid = _session(4)
    history = WindowHistory(deque(), 2, StoreHistory(store, uid, 4))
    texts = [e["message"]["parts"][0]["text"]["text"] for e in history]
    assert texts == ["0", "1"]
