"""The JetStream store on a three-node cluster: the stream's replicas, a server list, and a
follower that sees each commit once a quorum has stored it (not only when the next one
wakes it)."""

from __future__ import annotations

import queue
import threading
from typing import Any

import pytest

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct

WAIT = 30.0  # the bound on waiting for one followed record (not a timing)
COMMITS = 20


def _url(cluster: Any) -> str:
    token = new_uid()[5:17]
    return cluster.store_url(stream=f"CL{token}", prefix=f"cl{token}")


def _say(i: int) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", f"commit {i}"), execution_id="e1")


def test_the_store_creates_its_stream_with_the_replicas_asked(nats_cluster: Any) -> None:
    url = _url(nats_cluster)  # replicas=3
    store = JetStreamStore(JetStreamOptions.parse(url))
    try:
        info = store._client._loop.call(store._client._js.stream_info(store._opts.stream), 10)
        assert info.config.num_replicas == 3
    finally:
        store.close()
    with pytest.raises(UnavailableError, match=r"it has 3 replica\(s\), not the 1 asked"):
        JetStreamStore(JetStreamOptions.parse(url.replace("replicas=3", "replicas=1")))
    JetStreamStore(JetStreamOptions.parse(url.replace("&replicas=3", ""))).close()  # not asked


def test_a_client_connects_through_any_node_of_the_list(nats_cluster: Any) -> None:
    from natsserver import free_port

    down = f"127.0.0.1:{free_port()}"  # nothing listens there
    url = _url(nats_cluster).replace("nats://", f"nats://{down},", 1)
    store = JetStreamStore(JetStreamOptions.parse(url))
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            w.append([_say(0)])
        assert store.get(uid).last_seq == 1
    finally:
        store.close()


def test_a_follower_on_r3_sees_each_commit_without_the_next(nats_cluster: Any) -> None:
    """A core subscription hears a publish before a quorum has stored it: the follower's
    read after that wake can come too early. It must read again, not wait for the next
    commit's wake (which, for a turn's last commit, may never come)."""
    url = _url(nats_cluster)
    writer_host = JetStreamStore(JetStreamOptions.parse(url))
    follower_host = JetStreamStore(JetStreamOptions.parse(url))
    try:
        uid = new_uid()
        writer_host.create(SessionMeta(uid=uid))
        seen: queue.Queue[int] = queue.Queue()

        def follow() -> None:
            for record in follower_host.follow(uid, 1, idle_timeout=2 * WAIT):
                seen.put(record.seq)
                if record.seq == COMMITS:
                    return

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        with writer_host.writer(uid) as w:
            for i in range(1, COMMITS + 1):
                w.append([_say(i)], expected_last_seq=i - 1)
                assert seen.get(timeout=WAIT) == i  # before any later commit exists
        thread.join(timeout=WAIT)
    finally:
        writer_host.close()
        follower_host.close()


def test_a_read_on_r3_right_after_an_ack_sees_the_commit(nats_cluster: Any) -> None:
    """Batched reads are direct gets, which any replica answers from what it has applied
    (one may lag the quorum that acknowledged a commit). The subject's last message is
    read through the leader, so a read right after an ack, by the writer's host or
    another, always ends with that commit."""
    url = _url(nats_cluster)
    writer_host = JetStreamStore(JetStreamOptions.parse(url))
    reader_host = JetStreamStore(JetStreamOptions.parse(url))
    try:
        uid = new_uid()
        writer_host.create(SessionMeta(uid=uid))
        with writer_host.writer(uid) as w:
            for i in range(1, COMMITS + 1):
                head = w.append([_say(i)], expected_last_seq=i - 1).last_seq
                for host in (writer_host, reader_host):
                    assert [r.seq for r in host.read(uid)][-1] == head
                    assert [r.seq for r in host.read(uid, head)] == [head]
    finally:
        writer_host.close()
        reader_host.close()


def test_a_majority_of_the_monitoring_endpoints_must_show_fsync(nats_cluster: Any) -> None:
    from natsserver import free_port

    url = _url(nats_cluster)
    monitors = nats_cluster.monitor.split(",")
    down = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    one_down = url.replace(nats_cluster.monitor, ",".join([*monitors[:2], down[0]]))
    JetStreamStore(JetStreamOptions.parse(one_down)).close()  # two of three answered
    two_down = url.replace(nats_cluster.monitor, ",".join([monitors[0], *down]))
    with pytest.raises(UnavailableError, match="cannot read the NATS monitoring endpoint"):
        JetStreamStore(JetStreamOptions.parse(two_down))
