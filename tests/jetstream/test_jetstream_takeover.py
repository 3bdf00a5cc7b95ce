"""Two engines (two hosts, as far as they know) on one JetStream store: each holds its
writer between turns, and a turn through one takes the session over from the other.

An idle held writer that another host fenced is closed and re-opened before the next turn
(the pool asks ``superseded()``), so the session goes on through either engine; a writer
fenced while its turn runs fails that turn with FencedError. One durable server, no cluster:
the fencing is the same on one node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsessions.errors import FencedError
from agentsessions.journal.stores.jetstream import JetStreamStore
from agentsessions.journal.stores.jetstream_conn import JetStreamOptions
from agentsessions.journal.stores.store import new_uid
from agentsessions.sessions.api import RecordFrame
from agentsessions.sessions.local import LocalSessions, open_local

MODEL = "scripted:seed=7"


@pytest.fixture
def stores(nats_server: Any) -> Iterator[tuple[JetStreamStore, JetStreamStore]]:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"T{token}", prefix=f"t{token}")
    a, b = JetStreamStore(JetStreamOptions.parse(url)), JetStreamStore(JetStreamOptions.parse(url))
    yield a, b
    a.close()
    b.close()


def _engines(
    stores: tuple[JetStreamStore, JetStreamStore], tmp_path: Path
) -> tuple[LocalSessions, LocalSessions]:
    return open_local(tmp_path / "a", store=stores[0]), open_local(tmp_path / "b", store=stores[1])


def test_an_idle_writer_fenced_by_another_engine_takes_the_session_back(
    stores: tuple[JetStreamStore, JetStreamStore], tmp_path: Path
) -> None:
    a, b = _engines(stores, tmp_path)
    with a, b:
        uid = a.run(None, ["hi"], harness="chat", model=MODEL).uid
        fence_a = stores[0].get(uid).fence
        assert b.run(uid, ["through b"]).session.last_seq == 10  # b takes over: a new fence
        assert stores[1].get(uid).fence > fence_a
        # a still holds its writer from the first turn; it was fenced while idle, so this
        # turn re-opens (taking the session back) instead of failing on a lost CAS
        again = a.run(uid, ["through a again"])
        assert again.session.last_seq == 15
        assert again.session.exec_state == "EXEC_COMPLETED"
        assert b.run(uid, ["and b once more"]).session.last_seq == 20
        report = a.verify(uid)
        assert report.ok and report.last_seq == 20
        fences = [r.fence for r in stores[0].read(uid)]
        assert fences == sorted(fences) and len(set(fences)) == 4  # four incarnations


def test_a_writer_fenced_mid_turn_fails_that_turn(
    stores: tuple[JetStreamStore, JetStreamStore], tmp_path: Path
) -> None:
    a, b = _engines(stores, tmp_path)
    with a, b:
        uid = a.run(None, ["hi"], harness="chat", model=MODEL).uid
        frames = a.exec(uid, ["a slow one"], model="scripted:seed=7,delay=1")
        with pytest.raises(FencedError, match="a newer writer superseded this one"):
            for frame in frames:
                if isinstance(frame, RecordFrame):  # the turn's first commit is in
                    stores[1].writer(uid).close()  # another host takes the session over
        assert a.verify(uid).ok  # what landed before the takeover is a valid chain
