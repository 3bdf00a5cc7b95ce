"""A model call cut by a crash is made once more, now that its intent rides with its OUTPUT.

Spec decision 11: MODEL_CALL and its OUTPUT share one sync. A real ``agentsessions exec`` is
killed with SIGKILL while its model call is in flight (a scripted model answering in 20 s;
the turn's inputs are committed): the journal holds the turn's START and INPUT
only, and resume makes the call exactly once and closes the turn, just as it re-drives a
MODEL_CALL recorded without its OUTPUT.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.wiring import build_controller


def _wait_for_the_call(store: FileStore, uid: str, deadline: float) -> None:
    """Until the turn's START and INPUT are committed: the harness calls the model next, and
    the call (20 s of scripted delay) is then in flight for long after the short pause."""
    while time.monotonic() < deadline:
        if store.get(uid).last_seq >= 2:
            time.sleep(1.0)  # well inside the call; where exactly does not matter
            return
        time.sleep(0.05)
    raise AssertionError("the turn never committed its inputs")


def test_a_kill_during_the_model_call_leaves_no_intent_and_resume_calls_once(
    tmp_path: Path,
) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([" ".join(f"word{i}" for i in range(40))]))
    model = f"scripted:file={answers},delay=20"  # deltas spread over 20 s
    home = tmp_path / "home"
    uid = FileStore(home).create(SessionMeta(uid=new_uid(), harness="chat")).uid
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "agentsessions", "--home", str(home), "exec", uid,
         "--input", "hello", "--model", model],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    store = FileStore(home)
    try:
        _wait_for_the_call(store, uid, time.monotonic() + 60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL  # killed mid-call, not finished
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds == ["EVENT_EXECUTION_START", "EVENT_INPUT"]  # the intent was not synced alone
    assert store.get(uid).exec_state == "EXEC_RUNNING"

    answers.write_text(json.dumps(["the answer"]))  # the resumed call is fast
    controller = build_controller(store, home)
    controller.default_model = f"scripted:file={answers}"
    result = controller.resume(uid)
    assert result is not None and result.model_calls == 1  # made once more, as before
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds == [
        "EVENT_EXECUTION_START",
        "EVENT_INPUT",
        "EVENT_MODEL_CALL",
        "EVENT_OUTPUT",
        "EVENT_END",
    ]
    assert controller.resume(uid) is None  # nothing left open: never called a third time
    assert verify_session(store, uid).ok
