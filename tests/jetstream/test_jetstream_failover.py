"""A writer rides out the loss of its stream's leader on a three-node cluster (R3).

A writer thread commits a few hundred small commits while the test SIGKILLs the stream's
leader once, mid-run. During the election publishes fail at once or time out; the writer's
client retries each with the same Msg-Id and CAS (``Client.publish``) until a new leader
answers. Then: every acknowledged commit is in the stream exactly once, none is stored
twice, the run completes, a follower on another connection saw every record once in
order through the election, and the chain verifies through the store's own verify path (what
``agentsessions verify --store nats://...`` runs). One round in the default suite;
``AGENTSESSIONS_TORTURE=N`` with ``-m torture`` runs N rounds.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Any

import pytest

from agentsessions.journal.stores.jetstream import wire
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.offline import verify
from agentsessions.v1 import construct

COMMITS = 300
KILL_AFTER = COMMITS // 3
ROUNDS = int(os.environ.get("AGENTSESSIONS_TORTURE", "0"))  # 0: the one default round only
_POLLS = 3000  # polls of 20 ms for the writer to reach the kill point: a bound only


def _url(cluster: Any) -> str:
    token = new_uid()[5:17]
    # timeout=3: a follower's read in flight to the killed leader waits one timeout (10 s
    # by default) before it is asked again; the writer's tries are 2 s either way
    return cluster.store_url(stream=f"FO{token}", prefix=f"fo{token}", timeout="3")


def _say(i: int) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", f"commit {i}"), execution_id="e1")


class _Writer(threading.Thread):
    """Commits ``COMMITS`` commits to one session, recording each acknowledged commit id."""

    def __init__(self, store: JetStreamStore, uid: str) -> None:
        super().__init__(daemon=True)
        self.store, self.uid = store, uid
        self.acked: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.store.writer(self.uid) as w:
                for i in range(COMMITS):
                    w.append([_say(i)], commit_id=f"c{i}", expected_last_seq=i)
                    self.acked.append(f"c{i}")
        except BaseException as exc:  # reported by the test
            self.error = exc


class _Follower(threading.Thread):
    """Follows the session from another connection (another host) through the election."""

    def __init__(self, url: str, uid: str) -> None:
        super().__init__(daemon=True)
        self.store = JetStreamStore(JetStreamOptions.parse(url))
        self.uid = uid
        self.seqs: list[int] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for record in self.store.follow(self.uid, 1, idle_timeout=120):
                self.seqs.append(record.seq)
                if record.seq == COMMITS:
                    break
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.store.close()


def _round(cluster: Any) -> None:
    url = _url(cluster)
    store = JetStreamStore(JetStreamOptions.parse(url))
    stream = store._opts.stream
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        follower = _Follower(url, uid)
        follower.start()
        writer = _Writer(store, uid)
        writer.start()
        for _ in range(_POLLS):
            if len(writer.acked) >= KILL_AFTER or not writer.is_alive():
                break
            time.sleep(0.02)
        leader = cluster.leader_of(stream)
        assert leader, "the stream has no leader to kill"
        cluster.kill(leader)
        assert len(writer.acked) < COMMITS  # the leader went mid-run
        writer.join(timeout=240)  # a bound: the writer retries for commit_timeout at most
        assert not writer.is_alive(), "the writer never finished"
        assert writer.error is None, f"the writer failed: {writer.error!r}"
        assert cluster.leader_of(stream) not in ("", leader)  # a new leader took over
        follower.join(timeout=240)
        assert follower.error is None, f"the follower failed: {follower.error!r}"
        assert follower.seqs == list(range(1, COMMITS + 1))  # each once, in order, live
        cluster.restart(leader)
        _check(url, uid, writer.acked)
    finally:
        store.close()


def _check(url: str, uid: str, acked: list[str]) -> None:
    """Each acknowledged commit exactly once, nothing twice, and the chain verifies, read
    through a store that cached nothing (another host)."""
    reader = JetStreamStore(JetStreamOptions.parse(url))
    try:
        subject = wire.journal_subject(reader._opts.prefix, uid)
        stored = [m.head.get("cid") for m in reader._client.messages(subject) if m.kind == "c"]
        counts = collections.Counter(stored)
        assert [cid for cid, n in counts.items() if n > 1] == []  # none stored twice
        assert [cid for cid in acked if counts[cid] != 1] == []  # no acknowledged one lost
        assert acked == [f"c{i}" for i in range(COMMITS)]  # the run completed
        assert stored == acked  # in order, and nothing unacknowledged in between
        report = verify(reader, uid)
        assert report.ok, report
        assert report.last_seq == COMMITS
    finally:
        reader.close()


def test_a_writer_survives_a_sigkill_of_the_stream_leader(nats_cluster: Any) -> None:
    _round(nats_cluster)


@pytest.mark.torture
@pytest.mark.timeout(120 + 120 * ROUNDS)
def test_a_writer_survives_repeated_leader_kills(nats_cluster: Any) -> None:
    if not ROUNDS:
        pytest.skip("set AGENTSESSIONS_TORTURE=N for N rounds of leader kills (~10 s each)")
    for _ in range(ROUNDS):
        _round(nats_cluster)
