"""What each durability mode promises after a crash, with a real ``agentsessions exec`` killed
(SIGKILL) while its model call is in flight (a scripted model streaming over 20 s: its first
delta on stdout says the call is under way), and the turn retried with its commit id.

- ``step`` (the default): the turn's START and INPUT were durable before the call; the
  retry finds its commit id landed and finishes that turn (one INPUT, END).
- ``turn``: nothing of the unacknowledged turn is in the journal (its one sync is at END);
  every acknowledged turn before it is intact; the retry runs it as new and it lands once.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agentsessions
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.tools.verify import verify_session


def _kinds(store: FileStore, uid: str) -> list[str]:
    return [str(r.event["kind"]) for r in store.read(uid)]


def _kill_mid_call(home: Path, uid: str, model: str, durability: str) -> None:
    """Run a turn with commit id ``d-2`` in another process; kill it once its answer streams."""
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "agentsessions", "--home", str(home), "exec", uid,
         "--input", "second", "--model", model, "--commit-id", "d-2",
         "--durability", durability],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.read(1)  # a delta: the model call is in flight
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert first and proc.returncode == -signal.SIGKILL  # killed mid-call, not finished


@pytest.mark.parametrize("durability", ["step", "turn"])
def test_a_turn_killed_mid_call_is_retried_with_its_commit_id_and_lands_once(
    tmp_path: Path, durability: str
) -> None:
    home, answers = tmp_path / "home", tmp_path / "answers.json"
    answers.write_text(json.dumps(["first answer"]))
    fast = f"scripted:file={answers}"
    with agentsessions.open(home, model=fast, durability=durability) as engine:
        uid = engine.create(harness="chat").uid
        acked = engine.run(uid, ["first"], commit_id="d-1").session.last_seq  # acknowledged
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps([" ".join(f"word{i}" for i in range(40))]))
    _kill_mid_call(home, uid, f"scripted:file={slow},delay=20", durability)

    store = FileStore(home)
    kinds = _kinds(store, uid)
    assert len(kinds) >= acked and kinds[acked - 1] == "EVENT_END"  # the acknowledged turn is whole
    if durability == "turn":  # the unacknowledged turn left nothing
        assert len(kinds) == acked and store.get(uid).exec_state == "EXEC_COMPLETED"
    else:  # its input was durable before the call
        assert kinds[acked:] == ["EVENT_EXECUTION_START", "EVENT_INPUT"]
    assert verify_session(store, uid).ok
    store.close()

    answers.write_text(json.dumps(["second answer"]))
    with agentsessions.open(home, model=fast, durability=durability) as engine:
        retry = engine.run(uid, ["second"], commit_id="d-2")
        assert retry.turn is not None and retry.turn.model_calls == 1
        assert retry.turn.duplicate == (durability == "step")  # finished, or run as new
        again = engine.run(uid, ["second"], commit_id="d-2")
        assert again.turn is not None and again.turn.duplicate and again.turn.model_calls == 0
        assert engine.run(uid, ["first"], commit_id="d-1").turn.duplicate  # type: ignore[union-attr]
    store = FileStore(home)
    kinds = _kinds(store, uid)
    assert kinds.count("EVENT_INPUT") == 2 and kinds.count("EVENT_END") == 2
    assert kinds[-1] == "EVENT_END" and verify_session(store, uid).ok
