"""Tail checkpoints: opening a writer, reading a tail and reading the latest state on a long
JetStream session fetch a bounded number of messages, not one per commit."""

from __future__ import annotations

import itertools
from typing import Any

from agentsessions.journal.stores.jetstream.checkpoint import CHECKPOINT_EVERY
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, StateUpdate, new_uid
from agentsessions.journal.tools.verify import check_chain
from agentsessions.v1 import construct
from agentsessions.v1.results import VerifyReport

COMMITS = 5 * CHECKPOINT_EVERY + 7  # several checkpoints, and a few commits after the last
OPEN_BOUND = CHECKPOINT_EVERY + 6  # the suffix after a checkpoint, its fence, meta, state


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _long_session(url: str) -> str:
    store = JetStreamStore(JetStreamOptions.parse(url))
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            for i in range(COMMITS):
                state = StateUpdate(f"state {i}".encode()) if i % 50 == 0 else None
                w.append([_say(f"turn {i}")], commit_id=f"c{i}", state=state)
        return uid
    finally:
        store.close()


def test_a_writer_opens_a_long_session_from_its_last_checkpoint(nats_server: Any) -> None:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"K{token}", prefix=f"k{token}")
    uid = _long_session(url)
    store = JetStreamStore(JetStreamOptions.parse(url))  # another host: nothing cached
    try:
        client = store._client
        before = client.fetched
        w = store.writer(uid)
        assert client.fetched - before <= OPEN_BOUND < COMMITS
        assert w.head[0] == COMMITS
        last_state = (COMMITS - 1) // 50 * 50
        assert w.state.data == f"state {last_state}".encode()  # its bytes, not only its place
        again = w.append([_say("retry")], commit_id="c3")  # remembered through the checkpoint
        assert again.duplicate and again.last_seq == 4
        w.close()

        before = client.fetched
        tail = list(store.read(uid, COMMITS - 3))
        assert [r.seq for r in tail] == [COMMITS - 3, COMMITS - 2, COMMITS - 1, COMMITS]
        assert client.fetched - before <= 20  # bisecting after the checkpoint, then 4

        before = client.fetched
        middle = list(store.read(uid, 100, 110))  # before the checkpoint: bisected
        assert [r.seq for r in middle] == list(range(100, 111))
        assert client.fetched - before <= 40  # ~2 log2(stream) probes, not 100 messages

        before = client.fetched
        followed = list(itertools.islice(store.follow(uid, COMMITS - 3), 4))
        assert [r.seq for r in followed] == [r.seq for r in tail]
        assert client.fetched - before <= 20  # from the message holding COMMITS - 3

        before = client.fetched
        assert store.state(uid).data == f"state {last_state}".encode()
        assert client.fetched - before <= OPEN_BOUND

        everything = list(store.read(uid))
        assert [r.seq for r in everything] == list(range(1, COMMITS + 1))
        assert everything[99:110] == middle
        assert check_chain(everything, VerifyReport(source="t")).ok
    finally:
        store.close()
