"""Crash tests of a whole turn: a real ``agentsessions exec`` killed with SIGKILL mid-turn.

The model is the offline scripted one with a delay, so kills land before, during and after
the model call. After each kill ``resume`` completes the interrupted turn and we check
what a user relies on: every turn ends with exactly one END, every MODEL_CALL has exactly
one OUTPUT right after it (nothing recorded is repeated, a lost completion is re-invoked
once), and the chain verifies. ``AGENTSESSIONS_TORTURE`` sets the number of kills.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.wiring import build_controller

KILLS = max(3, int(os.environ.get("AGENTSESSIONS_TORTURE", "12")) // 2)
MODEL = "scripted:seed=5,delay=0.4"


def _exec(home: Path, uid: str, text: str, kill_after: float) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentsessions", "--home", str(home), "exec", uid, "--input", text],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode in (0, -signal.SIGKILL), err.decode()[-2000:]


@pytest.mark.timeout(120 + 30 * KILLS)  # a torture run takes longer than the suite default
def test_killed_turns_are_completed_once_by_resume(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = FileStore(home)
    uid = store.create(SessionMeta(uid=new_uid(), harness="chat", model=MODEL)).uid
    rng = random.Random(7)
    resumed_calls = 0
    for i in range(KILLS):
        # Staggered over an exec's life (~0.45 s to start, 0.4 s in the model call) plus jitter,
        # so kills land before the turn, during the model call and after it.
        _exec(home, uid, f"turn {i}", 0.25 + (i % 5) * 0.2 + rng.uniform(0.0, 0.15))
        controller = build_controller(FileStore(home), home)
        result = controller.resume(uid)
        if result is not None:
            resumed_calls += result.model_calls
            assert result.model_calls <= 1
        # PENDING only when no turn has started yet (killed before its first commit)
        assert controller.store.get(uid).exec_state in ("EXEC_PENDING", "EXEC_COMPLETED")
    events = [r.event for r in store.read(uid)]
    kinds = [e["kind"] for e in events]
    for i, kind in enumerate(kinds):
        if kind == "EVENT_MODEL_CALL":
            assert kinds[i + 1] == "EVENT_OUTPUT", f"seq {i + 1}: MODEL_CALL without its OUTPUT"
    assert kinds.count("EVENT_MODEL_CALL") == kinds.count("EVENT_OUTPUT")
    starts = [e for e in events if e["kind"] == "EVENT_EXECUTION_START"]
    ends = [e for e in events if e["kind"] == "EVENT_END"]
    assert len(starts) == len(ends)  # every turn, killed or not, was closed exactly once
    assert {e["execution_id"] for e in starts} == {e["execution_id"] for e in ends}
    assert verify_session(store, uid).ok
