"""Crash test of working state: a process driving the memory harness is killed with SIGKILL
mid-session, then its warm host is killed too; a fresh process continues from the state
the session holds.

What a user relies on: every acknowledged fact is still remembered (the state committed
with each turn survived), no turn's state was applied twice (the state version equals the
number of completed turns, whatever resume re-drove), the next answer counts the turns
right, the chain verifies, and ``replay --rerun`` reproduces every turn with zero model
calls while writing nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="warm hosts need Linux"
)
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTSESSIONS_WARM_IDLE_SECONDS": "120"}
ACKS = int(os.environ.get("AGENTSESSIONS_TORTURE", "3"))


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "agentsessions", "--home", str(home), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)


def _json(home: Path, *args: str) -> Any:
    done = _cli(home, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.timeout(240)
def test_a_fresh_process_continues_from_the_committed_state(tmp_path: Path) -> None:
    from agentsessions.runtimes.warm_launch import shutdown_all

    home = tmp_path / "home"
    uid = FileStore(home).create(SessionMeta(uid=new_uid(), harness="memory")).uid
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "memory_proc.py"), str(home), uid],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    try:
        acked: list[tuple[int, int]] = []
        assert proc.stdout is not None
        while len(acked) < ACKS:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "driver ended"
            _, turn, version = line.split()
            acked.append((int(turn), int(version)))
        proc.send_signal(signal.SIGKILL)  # wherever it is: maybe mid-turn
        proc.wait(timeout=30)
        assert acked == [(i, i) for i in range(1, ACKS + 1)]
        for host in _json(home, "compute", "list")["compute"]:
            os.kill(int(host["pid"]), signal.SIGKILL)  # the warm host is lost too

        resumed = _cli(home, "resume", uid)
        assert resumed.returncode == 0, resumed.stderr
        turn = _json(home, "exec", uid, "--input", "what do you remember")
        answer = turn["outputs"][0]
        head, facts = answer.split(": I remember ")
        remembered = facts.split("; ")
        assert remembered[:ACKS] == [f"fact-{i}" for i in range(1, ACKS + 1)]  # nothing lost
        assert remembered == [f"fact-{i}" for i in range(1, len(remembered) + 1)]

        store = FileStore(home)
        events = [r.event for r in store.read(uid)]
        ends = [e for e in events if e["kind"] == "EVENT_END"]
        starts = [e for e in events if e["kind"] == "EVENT_EXECUTION_START"]
        assert len(starts) == len(ends) and head == f"turn {len(ends)}"
        state = store.state(uid)
        assert state.version == len(ends)  # one state per turn: none applied twice
        assert json.loads(state.data) == {"facts": remembered, "turns": len(ends)}
        shown = _json(home, "get", uid)["working_state"]
        assert shown["version"] == len(ends) and shown["size"] == len(state.data)
        assert verify_session(store, uid).ok
        before = store.get(uid)
        rerun = _cli(home, "replay", uid, "--rerun")
        assert rerun.returncode == 0 and "identical   yes" in rerun.stdout, rerun.stdout
        after = FileStore(home).get(uid)
        assert (after.last_seq, after.last_hash) == (before.last_seq, before.last_hash)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)  # reaps it and closes its pipes
        shutdown_all(home)
