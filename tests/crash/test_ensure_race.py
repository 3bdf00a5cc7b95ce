"""``Sessions.ensure`` across real processes, on the file store and on JetStream.

- A race: N processes (``multiprocessing`` spawn, released together by a barrier) each call
  ``ensure`` on one new key, several rounds: every round makes exactly one session, every
  process gets its uid, exactly one of them ``created`` it.
- The same race through ``exec`` by origin (no uid): every round makes one session, in
  which every process's input landed once, and exactly one turn ``created`` it.
- A crash: a process killed (SIGKILL) after its claim and before its create leaves a
  claim without a session; ``find`` says None (nothing to read yet) and the next ``ensure``
  creates the session under the claimed uid, once.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import claims_proc
import pytest

from agentsessions.journal.stores.capabilities import KEY_CLAIMS
from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.journal.stores.store import new_uid
from agentsessions.sessions.local import open_local

PROCESSES = 4
ROUNDS = 4


@pytest.fixture(params=["file", "jetstream"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``(home, url)`` as the processes open it: a file store home, or a fresh stream."""
    home = str(tmp_path / "home")
    if request.param == "file":
        yield home, ""
        return
    token = new_uid()[5:17]
    url = request.getfixturevalue("nats_server").store_url(stream=f"R{token}", prefix=f"r{token}")
    yield home, str(url)


def _open(where: tuple[str, str]) -> Any:
    home, url = where
    return open_local(home, store_url=url or None)


def test_processes_racing_on_one_new_key_make_one_session(where: tuple[str, str]) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=claims_proc.racer, args=(where, "key", ROUNDS, barrier, out))
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    try:
        got = [out.get(timeout=180) for _ in range(PROCESSES * ROUNDS)]
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs)
    with _open(where) as engine:
        listed = engine.list(project=claims_proc.PROJECT, page_size=100).sessions
        assert sorted(s.name for s in listed) == [str(r) for r in range(ROUNDS)]  # one a round
        for r in range(ROUNDS):
            mine = [(uid, created) for rr, uid, created in got if rr == r]
            found = engine.find(f"key-{r}", project=claims_proc.PROJECT)
            assert found is not None and {uid for uid, _ in mine} == {found.uid}
            assert sum(created for _, created in mine) == 1  # exactly one process made it


def test_processes_racing_exec_on_one_new_origin_make_one_session(
    where: tuple[str, str],
) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=claims_proc.exec_racer, args=(where, ROUNDS, barrier, out))
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    try:
        got = [out.get(timeout=180) for _ in range(PROCESSES * ROUNDS)]
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs)
    with _open(where) as engine:
        listed = engine.list(project=claims_proc.PROJECT, page_size=100).sessions
        assert len(listed) == ROUNDS  # one session a round
        for r in range(ROUNDS):
            mine = [(uid, created, pid) for rr, uid, created, pid in got if rr == r]
            origin = {"source": "github", "subject": f"o/r#{r}"}
            found = engine.find(origin=origin, project=claims_proc.PROJECT)
            assert found is not None and {uid for uid, _, _ in mine} == {found.uid}
            assert found.origin == origin
            made = sum(created for _, created, _ in mine)  # exactly one turn made it; on
            assert made == 1 or (where[1] and made == 0)  # JetStream its turn may be fenced
            inputs = [
                rec.event["message"]["parts"][0]["text"]["text"]
                for rec in engine.read(found.uid)
                if rec.event.get("kind") == "EVENT_INPUT"
            ]
            assert sorted(inputs) == sorted(f"from {pid}" for _, _, pid in mine)  # each once
            assert engine.verify(found.uid).ok


def test_a_process_killed_between_claim_and_create_is_completed(
    where: tuple[str, str],
) -> None:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=claims_proc.claim_then_hang, args=(where, "issue-12", out))
    proc.start()
    try:
        claimed = out.get(timeout=120)  # the claim is durable: the process is past it
    except queue.Empty:
        proc.kill()
        raise
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL
    with _open(where) as engine:
        key = ClaimKey.of(claims_proc.PROJECT, "issue-12")
        assert (
            KEY_CLAIMS.need(engine.store, "test").lookup(key) == claimed
        )  # a claim, no session yet
        assert engine.find("issue-12", project=claims_proc.PROJECT) is None
        session, created = engine.ensure("issue-12", project=claims_proc.PROJECT, name="i12")
        assert (session.uid, created, session.name) == (claimed, True, "i12")
        again, created = engine.ensure("issue-12", project=claims_proc.PROJECT)
        assert (again.uid, created) == (claimed, False)
        found = engine.find("issue-12", project=claims_proc.PROJECT)
        assert found is not None and found.uid == claimed
        assert [s.uid for s in engine.list(project=claims_proc.PROJECT).sessions] == [claimed]
