"""The daemon under load (issue 10), bounded and loopback only: 32 clients, each on its own
channel, run exec turns on 32 sessions at once, and 8 clients race for one session.

No record is lost or duplicated (every session's seqs are 1..N with N what its turns
wrote), every chain verifies, and a racing writer that finds the session busy sees ABORTED
(our LockHeldError, mapped back) and retries. The server is a real gRPC server in this
process over a real file-store engine, so the test can count what each client saw.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need

need("grpc", "grpc")

import agentsessions
from agentsessions.client import dial
from agentsessions.errors import LockHeldError
from agentsessions.server.app import build_server
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.wiring import HARNESSES

CLIENTS, TURNS, RACERS, RACE_TURNS = 32, 3, 8, 3
RECORDS_PER_TURN = 5  # EXECUTION_START, INPUT, MODEL_CALL, OUTPUT, END (echo)


@pytest.fixture
def address(tmp_path: Path) -> Iterator[str]:
    with agentsessions.open(tmp_path / "home") as engine:
        server = build_server(engine, "127.0.0.1:0")
        try:
            yield server.address
        finally:
            server.stop(grace=None)


def _threads(n: int, work: object) -> list[BaseException]:
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)  # type: ignore[operator]
        except BaseException as exc:  # reported by the test, never lost in a thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _check(client: Sessions, uid: str, turns: int) -> list[str]:
    records = list(client.replay(uid))
    assert [r.seq for r in records] == list(range(1, turns * RECORDS_PER_TURN + 1))
    assert client.verify(uid).ok
    return [r.event["kind"] for r in records]


def test_32_clients_on_32_sessions_lose_and_duplicate_nothing(address: str) -> None:
    uids: list[str] = [""] * CLIENTS
    outputs: dict[int, list[str]] = {}

    def client(i: int) -> None:
        with dial(address) as c:
            for n in range(TURNS):
                done = c.run(uids[i] or None, [f"c{i}t{n}"])
                uids[i] = done.uid
                assert done.turn is not None
                outputs.setdefault(i, []).extend(done.turn.outputs)

    assert _threads(CLIENTS, client) == []
    assert len(set(uids)) == CLIENTS
    with dial(address) as c:
        for i, uid in enumerate(uids):
            kinds = _check(c, uid, TURNS)
            assert kinds.count("EVENT_END") == TURNS
            assert outputs[i] == [f"echo:c{i}t{n}" for n in range(TURNS)]


class GateHarness:
    """Echo's turn, held until GATE opens: the session stays busy while racers arrive."""

    def describe(self) -> Any:
        from agentsessions.controller.spi import HarnessDescriptor

        return HarnessDescriptor(id="load-gate", version="1")

    def run(self, start: Any, sink: Any) -> None:
        from agentsessions.controller.spi import ModelRequest

        GATE.wait()
        sink.model(ModelRequest(model="echo", messages=(start.inputs[-1],), params=None))


GATE = threading.Event()
HARNESSES.register("load-gate", GateHarness)


def test_8_racing_clients_see_aborted_and_retry_until_each_turn_lands(address: str) -> None:
    GATE.clear()
    refused = [0] * RACERS
    seen = threading.Condition()
    first = dial(address)
    holder = first.exec(None, ["start"], harness="load-gate")  # holds the session at GATE
    uid = next(holder).uid

    def racer(i: int) -> None:
        with dial(address) as c:
            for n in range(RACE_TURNS):
                while True:
                    try:
                        c.run(uid, [f"r{i}t{n}"], harness="echo")  # wait=0: busy is refused
                        break
                    except LockHeldError:  # ABORTED on the wire: another writer holds it
                        with seen:
                            refused[i] += 1
                            seen.notify_all()

    def release() -> None:
        with seen:  # every racer has been refused once while the first turn held the session
            seen.wait_for(lambda: all(refused))
        GATE.set()
        list(holder)

    opener = threading.Thread(target=release)
    opener.start()
    assert _threads(RACERS, racer) == []
    opener.join()
    first.close()
    with dial(address) as c:
        _check(c, uid, 1 + RACERS * RACE_TURNS)
        inputs = [r.event["message"]["parts"][0]["text"]["text"] for r in c.replay(uid)
                  if r.event["kind"] == "EVENT_INPUT"]  # fmt: skip
    # every racer's every turn landed exactly once, whatever the interleaving
    assert sorted(inputs[1:]) == sorted(f"r{i}t{n}" for i in range(RACERS)
                                        for n in range(RACE_TURNS))  # fmt: skip
    assert all(refused)
