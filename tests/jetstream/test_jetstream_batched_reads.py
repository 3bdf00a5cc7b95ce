"""Batched reads: a JetStream subject is read in batched direct gets, so a tail read costs a
few requests and a whole read ``messages / READ_BATCH`` of them, not one per message, and
what is read is every message in order even when a direct get is answered by a responder
that does not hold them (as a lagging replica may)."""

from __future__ import annotations

import contextlib
import itertools
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentsessions.journal.stores.jetstream import client as jetstream_client
from agentsessions.journal.stores.jetstream.checkpoint import TAIL_BYTES, checkpoint_subject
from agentsessions.journal.stores.jetstream.client import READ_BATCH, READ_BATCH_BYTES
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import check_chain
from agentsessions.v1 import construct
from agentsessions.v1.results import VerifyReport

COMMITS = 1_000


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


def _open(url: str) -> JetStreamStore:
    return JetStreamStore(JetStreamOptions.parse(url))


def _build(url: str, commits: int, size: int = 0) -> str:
    store = _open(url)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            for i in range(commits):
                w.append([_say(f"turn {i} " + "x" * size)], commit_id=f"c{i}")
        return uid
    finally:
        store.close()


@pytest.fixture(scope="module")
def long_session(nats_server: Any) -> Iterator[tuple[str, str]]:
    """A 1,000-commit session: (store URL, uid)."""
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"BR{token}", prefix=f"br{token}")
    yield url, _build(url, COMMITS)


class _Requests:
    """The read requests a store's client makes while counted: by its own counter and by
    the connection's (every request is one message out), which must agree."""

    def __init__(self, store: JetStreamStore) -> None:
        self.client = store._client
        nc = self.client._nc
        assert nc is not None
        self.nc = nc
        self.trips, self.out = self.client.round_trips, self.nc.stats["out_msgs"]

    def made(self) -> int:
        trips = self.client.round_trips - self.trips
        assert trips == self.nc.stats["out_msgs"] - self.out  # the counter misses none
        return trips


def test_a_tail_read_takes_a_few_requests(long_session: tuple[str, str]) -> None:
    url, uid = long_session
    store = _open(url)  # another host: nothing cached
    try:
        last = store.get(uid).last_seq
        subject = store._journal(uid)
        ck = store._client.last(checkpoint_subject(subject))
        assert ck is not None and int(ck.head["tail"]["last_seq"]) < last - 9  # the case
        count = _Requests(store)
        tail = list(store.read(uid, last - 9))
        assert [r.seq for r in tail] == list(range(last - 9, last + 1))
        assert count.made() <= 5  # the checkpoint, the last message, one batch (was ~20)
        count = _Requests(store)
        middle = list(store.read(uid, last - 9, last - 5))  # bounded: no more batched
        assert middle == tail[:5]
        assert count.made() <= 5
    finally:
        store.close()


def test_a_tail_the_last_checkpoint_covers_takes_a_few_requests_too(nats_server: Any) -> None:
    """Right after a checkpoint lands, it covers the last records: the tail is read after
    the checkpoint before it (which the last one's CAS names), not bisected for."""
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"BC{token}", prefix=f"bc{token}")
    store = _open(url)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        subject = store._journal(uid)
        with store.writer(uid) as w:
            for i in itertools.count():
                head = w.append([_say(f"turn {i}")]).last_seq
                ck = store._client.last(checkpoint_subject(subject))
                if ck is not None and head > 200 and int(ck.head["tail"]["last_seq"]) == head:
                    break
        for _ in range(3):  # some records after it, fewer than the tail asked for
            head = _append(store, uid)
        reader = _open(url)
        try:
            count = _Requests(reader)
            tail = list(reader.read(uid, head - 9))
            assert [r.seq for r in tail] == list(range(head - 9, head + 1))
            assert count.made() <= 5  # was a bisection of the whole stream (~13 more)
            count = _Requests(reader)
            followed = list(itertools.islice(reader.follow(uid, head - 9), 10))
            assert followed == tail
            assert count.made() <= 7  # seek, then read from the message found
        finally:
            reader.close()
    finally:
        store.close()


def _append(store: JetStreamStore, uid: str) -> int:
    with store.writer(uid) as w:
        return w.append([_say("more")]).last_seq


def test_a_whole_read_and_a_follower_catching_up_take_a_request_per_batch(
    long_session: tuple[str, str],
) -> None:
    url, uid = long_session
    store = _open(url)
    try:
        last = store.get(uid).last_seq
        bound = math.ceil(COMMITS / READ_BATCH) + 3  # was one request per commit
        count = _Requests(store)
        everything = list(store.read(uid))
        assert count.made() <= bound
        assert [r.seq for r in everything] == list(range(1, last + 1))
        assert check_chain(everything, VerifyReport(source="t")).ok

        count = _Requests(store)
        followed = list(itertools.islice(store.follow(uid, 1), last))
        assert count.made() <= bound
        assert followed == everything

        probes = math.ceil(math.log2(_stream_last(store)))  # bisecting, then one batch
        count = _Requests(store)
        assert list(store.read(uid, 100, 110)) == everything[99:110]  # before the checkpoint
        assert count.made() <= probes + 5  # two checkpoints, the last message, a batch
    finally:
        store.close()


def _stream_last(store: JetStreamStore) -> int:
    return int(jetstream_client.stream_state(store._client).last_seq)


def test_commits_larger_than_a_batch_are_read_whole_and_in_order(nats_server: Any) -> None:
    """Past READ_BATCH_BYTES a read takes several batches; a tail past TAIL_BYTES bisects
    what the tail batch did not reach: every record comes once, in order."""
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"BB{token}", prefix=f"bb{token}")
    size = 256 << 10
    commits = READ_BATCH_BYTES // size + 4
    assert commits * size > max(READ_BATCH_BYTES, TAIL_BYTES)
    uid = _build(url, commits, size)
    store = _open(url)
    try:
        last = store.get(uid).last_seq
        count = _Requests(store)
        everything = list(store.read(uid))
        assert count.made() >= 3  # the last message, then more than one batch
        assert [r.seq for r in everything] == list(range(1, last + 1))
        assert check_chain(everything, VerifyReport(source="t")).ok
        assert list(store.read(uid, last - 1)) == everything[-2:]
        assert list(store.read(uid, 3, 5)) == everything[2:5]
    finally:
        store.close()


def test_a_responder_without_the_messages_only_costs_a_request_to_the_leader(
    nats_server: Any,
) -> None:
    """A direct get goes to any of the stream's responders, and one may not hold what the
    leader acknowledged (a replica that lags). A mirror serving the stream's direct gets
    (``mirror_direct``) that holds only the genesis subject answers about half the batches
    with "not found": every read must still bring every message, in order."""
    from nats.js import api

    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"BL{token}", prefix=f"bl{token}")
    uid = _build(url, 40)
    store = _open(url)
    client = store._client
    mirror = api.StreamConfig(
        name=f"BL{token}_M", mirror_direct=True, allow_direct=True,
        mirror=api.StreamSource(name=f"BL{token}", filter_subject=f"bl{token}.g"),
    )  # fmt: skip
    try:
        client.run_js(lambda js: js.add_stream(mirror))
        _wait_refused(client, store._journal(uid))
        last = store.get(uid).last_seq
        want = list(store.read(uid))
        assert [r.seq for r in want] == list(range(1, last + 1))
        for _ in range(30):  # a read that trusted a refusal would come back short
            assert list(store.read(uid)) == want
            assert list(store.read(uid, last - 3)) == want[-4:]
            assert list(store.read(uid, 2, 30)) == want[1:30]
    finally:
        with contextlib.suppress(Exception):
            client.run_js(lambda js: js.delete_stream(mirror.name))
        store.close()


def _wait_refused(client: Any, subject: str) -> None:
    """Until a batched direct get on ``subject`` is answered by the mirror (nothing)."""
    for _ in range(500):
        if not client._call(lambda: jetstream_client._batch(client, subject, 1, 1, 1 << 20)):
            return
        time.sleep(0.01)  # the mirror's responder is not subscribed yet
    raise AssertionError("the mirror never answered a direct get")
