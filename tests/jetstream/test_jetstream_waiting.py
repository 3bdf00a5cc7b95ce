"""Commits landed with ``sync=False`` on JetStream wait for the next commit and ride in its
message: one round trip for both, acknowledged together once the server has them durably,
the same records and hashes as two messages would carry. Before that no reader sees them;
``sync`` (and ``close``) publish what waits alone; a message carrying waiting commits that
fails closes the writer, and the next one finds neither commit. One durable server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentsessions.errors import FencedError, InvalidArgumentError
from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.jetstream.writer import MERGE_RECORDS
from agentsessions.journal.stores.store import SessionMeta, StateUpdate, new_uid
from agentsessions.v1 import construct


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


@pytest.fixture
def stores(nats_server: Any) -> Iterator[tuple[JetStreamStore, JetStreamStore, str]]:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"W{token}", prefix=f"w{token}")
    a, b = JetStreamStore(JetStreamOptions.parse(url)), JetStreamStore(JetStreamOptions.parse(url))
    uid = new_uid()
    a.create(SessionMeta(uid=uid))
    yield a, b, uid
    a.close()
    b.close()


def _messages(store: JetStreamStore, uid: str) -> int:
    return len(store._client.messages(store._journal(uid)))


def test_an_unsynced_commit_rides_with_the_next_one(
    stores: tuple[JetStreamStore, JetStreamStore, str],
) -> None:
    a, b, uid = stores
    with a.writer(uid) as w:
        before = _messages(a, uid)
        waiting = w.append([_say("one"), _say("two")], sync=False)
        assert (waiting.first_seq, waiting.last_seq) == (1, 2) and w.head[0] == 2
        assert _messages(b, uid) == before and b.get(uid).last_seq == 0  # not out yet
        synced = w.append([_say("three")], expected_last_seq=2)
        assert (synced.first_seq, synced.last_seq) == (3, 3)
        assert _messages(b, uid) == before + 1  # one message for both commits
    records = list(b.read(uid))
    assert [r.seq for r in records] == [1, 2, 3]
    assert [r.payload for r in records] == [
        *(r.payload for r in waiting.records),
        synced.records[0].payload,
    ]
    assert records[1].content_hash == waiting.records[1].content_hash
    assert b.get(uid).last_hash == synced.last_hash


def test_sync_and_close_publish_what_waits(
    stores: tuple[JetStreamStore, JetStreamStore, str],
) -> None:
    a, b, uid = stores
    w = a.writer(uid)
    w.append([_say("one")], sync=False)
    w.sync()
    assert b.get(uid).last_seq == 1
    w.append([_say("two")], sync=False)
    w.append([_say("three")], sync=False)
    w.close()
    assert [r.seq for r in b.read(uid)] == [1, 2, 3]


def test_commits_with_an_id_or_state_are_never_merged(
    stores: tuple[JetStreamStore, JetStreamStore, str],
) -> None:
    """A commit id or a state names ONE commit's result: such a commit goes out as its own
    message (after what waits), so a retry and ``states`` see exactly what was committed."""
    a, b, uid = stores
    with a.writer(uid) as w:
        before = _messages(a, uid)
        w.append([_say("one")], sync=False)
        w.append([_say("two")], commit_id="c2", sync=False)
        assert _messages(b, uid) == before + 2
        w.append([_say("three")], sync=False)
        w.append([], state=StateUpdate(b"s", covers_from=1, covers_to=3), sync=False)
        assert _messages(b, uid) == before + 4
        again = w.append([_say("two")], commit_id="c2")
        assert again.duplicate and (again.first_seq, again.last_seq) == (2, 2)
    assert b.state(uid).data == b"s"


def test_a_long_run_of_waiting_commits_is_split(
    stores: tuple[JetStreamStore, JetStreamStore, str],
) -> None:
    a, b, uid = stores
    with a.writer(uid) as w:
        before = _messages(a, uid)
        for i in range(MERGE_RECORDS + 1):
            w.append([_say(f"e{i}")], sync=False)
        assert _messages(b, uid) == before + 1  # the first MERGE_RECORDS went out together
    assert [r.seq for r in b.read(uid)] == list(range(1, MERGE_RECORDS + 2))


def test_a_fenced_message_with_waiting_commits_closes_the_writer(
    stores: tuple[JetStreamStore, JetStreamStore, str],
) -> None:
    a, b, uid = stores
    w = a.writer(uid)
    w.append([_say("acknowledged")])
    w.append([_say("waiting")], sync=False)
    b._fence(b._journal(uid), deleted=False)  # another host's fence (a shred's, say)
    with pytest.raises(FencedError):
        w.append([_say("covering")])
    assert w.superseded()
    with pytest.raises(InvalidArgumentError, match="closed"):
        w.append([_say("after")])
    with b.writer(uid) as again:  # neither the waiting commit nor the covering one landed
        assert again.head[0] == 1
    assert [r.seq for r in b.read(uid)] == [1]


def test_waiting_commits_of_an_encrypted_session_ride_sealed(nats_server: Any) -> None:
    """Sealed records ride together as plaintext ones do, and open with the key."""
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"WE{token}", prefix=f"we{token}")
    store = JetStreamStore(JetStreamOptions.parse(url), master=MasterKey.generate())
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            before = _messages(store, uid)
            w.append([_say("secret one")], sync=False)
            w.append([_say("secret two")])
            assert _messages(store, uid) == before + 1
        texts = [r.event["message"]["parts"][0]["text"]["text"] for r in store.read(uid)]
        assert texts == ["secret one", "secret two"]
        raw = store._client.messages(store._journal(uid))[-1]
        assert raw.sealed and b"secret" not in b"".join(r.payload for r in raw.records)
    finally:
        store.close()
