"""Two engines (two hosts, as far as they know) on one JetStream store: each holds its
writer between turns, and a turn through one takes the session over from the other.

An idle held writer that another host fenced is closed and re-opened before the next turn
(the pool asks ``superseded()``), so the session goes on through either engine; while a
turn runs, the other engine is refused (LockHeldError, exit 6: its probe hears "busy"), as
with the file store's lock, and the turn completes. One durable server, no cluster: the
fencing is the same on one node."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller.spi import Completion
from agentsessions.errors import FencedError, LockHeldError
from agentsessions.journal.stores.jetstream import live
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import new_uid
from agentsessions.models import MODELS
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.sessions.values import SessionFrame
from agentsessions.v1.construct import input_event, text_message

MODEL = "scripted:seed=7"
BOUND = 120.0  # the bound on waiting for the other thread (not a timing)


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


class _Gate:
    """A model that holds its turn open until the test lets it go: while it waits, the turn
    is running (between its first commit and its END), whatever the machine's speed."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def complete(self, request: Any, on_delta: Any = None) -> Completion:
        self.entered.set()
        assert self.release.wait(BOUND), "the test never let the turn go"
        return Completion(message=dict(text_message("assistant", "let go")))


@pytest.fixture
def gate() -> Iterator[tuple[str, _Gate]]:
    name, model = f"gate-{new_uid()[5:13]}", _Gate()
    MODELS.register(name, lambda: model)
    yield name, model
    model.release.set()
    MODELS.unregister(name)


def test_a_running_turn_refuses_another_engine_and_completes(
    stores: tuple[JetStreamStore, JetStreamStore], tmp_path: Path, gate: tuple[str, _Gate]
) -> None:
    a, b = _engines(stores, tmp_path)
    name, model = gate
    with a, b:
        uid = a.run(None, ["hi"], harness="chat", model=MODEL).uid
        fences = [r.fence for r in stores[0].read(uid)]
        frames = a.exec(uid, ["a slow one"], model=name)
        assert model.entered.wait(BOUND)  # a's turn is running: its model was called
        with pytest.raises(LockHeldError, match="is busy: a turn is running on another host"):
            b.run(uid, ["through b"], model=MODEL)
        with pytest.raises(LockHeldError, match=r"\(pid \d+ on "):  # named, as the file store's
            stores[1].writer(uid)
        assert stores[1].writer_elsewhere(uid)  # cancel would ask this turn to stop
        model.release.set()
        done = [f for f in frames if isinstance(f, SessionFrame)][-1].session
        assert (done.exec_state, done.last_seq) == ("EXEC_COMPLETED", 10)  # not fenced
        assert [r.fence for r in stores[0].read(uid)][:5] == fences
        assert {r.fence for r in stores[0].read(uid)} == set(fences)  # b minted no fence
        # parked between turns: no turn of a's runs, so cancel would not wait for one
        assert not stores[1].writer_elsewhere(uid)
        # a's writer is parked between turns now: b takes over, a takes it back
        assert b.run(uid, ["through b"], model=MODEL).session.last_seq == 15
        assert a.run(uid, ["a again"], model=MODEL).session.exec_state == "EXEC_COMPLETED"
        assert a.verify(uid).ok


def test_a_probe_told_idle_makes_the_next_turn_reopen(
    stores: tuple[JetStreamStore, JetStreamStore], tmp_path: Path
) -> None:
    """Between another host's idle answer and its fence, this host's next turn must not
    start on the writer it said may be taken: claiming it busy fails and the pool opens a
    new one (a new fence), which asks the taker first: busy, the turn is refused, never
    fenced mid-turn; parked again, the session is taken back."""
    a, _b = _engines(stores, tmp_path)
    with a:
        uid = a.run(None, ["hi"], harness="chat", model=MODEL).uid
        subject = live.owner_subject(stores[0]._opts.stream, uid)
        assert live.probe(stores[1]._client, subject).state == live.IDLE  # only asking
        assert live.probe(stores[1]._client, subject, take=True).state == live.IDLE  # yields
        again = a.run(uid, ["next"], model=MODEL)  # no fence from the taker yet, but ...
        assert (again.session.exec_state, again.session.last_seq) == ("EXEC_COMPLETED", 10)
        fences = [r.fence for r in stores[0].read(uid)]
        assert fences[5] > fences[4]  # ... a opened a new writer rather than claim that one
        taker = stores[1].writer(uid)  # a is parked: a take-probe, then the taker's fence
        with pytest.raises(LockHeldError, match="a turn is running on another host"):
            a.run(uid, ["too soon"], model=MODEL)  # the taker is busy: refused, not fenced
        taker.set_busy(False)
        third = a.run(uid, ["now"], model=MODEL)  # parked: a takes it back
        assert (third.session.exec_state, third.session.last_seq) == ("EXEC_COMPLETED", 15)
        late = input_event(text_message("user", "late"), execution_id="e1")
        with pytest.raises(FencedError):  # a took it back with a fence
            taker.append([late], expected_last_seq=taker.head[0])
        taker.close()
