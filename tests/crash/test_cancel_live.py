"""Cancel of a turn running in another process, and of one whose process was SIGKILLed.

A real ``agentsessions exec`` runs the chat harness against a scripted model that answers
slowly; a second real process runs ``agentsessions cancel``. The running turn finds the
durable CANCEL request at its next effect boundary (here: after the model call in flight,
before END), records LIFECYCLE CANCEL + END CANCELED and exits 18; the canceller exits 0.
The killed-process path: SIGKILL mid-call, then cancel closes the open turn as its writer.
Either way the chain verifies, the next exec runs, and ``replay --rerun`` reproduces both
turns, the canceled one to where it stopped, with no model call.
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


def _cli(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-u", "-m", "agentsessions", "--home", str(home), *args]


def _slow_turn(tmp_path: Path) -> tuple[Path, str, subprocess.Popen[bytes], FileStore]:
    """A session whose exec is in flight in another process (its inputs committed)."""
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([" ".join(f"word{i}" for i in range(20))]))
    home = tmp_path / "home"
    store = FileStore(home)
    uid = store.create(SessionMeta(uid=new_uid(), harness="chat")).uid
    model = f"scripted:file={answers},delay=3"
    proc = subprocess.Popen(
        _cli(home, "exec", uid, "--input", "hello", "--model", model),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while store.get(uid).last_seq < 2:  # START and INPUT durable: the model call is next
        assert time.monotonic() < deadline and proc.poll() is None, "the turn never started"
        time.sleep(0.02)
    return home, uid, proc, store


def _ends_canceled(store: FileStore, uid: str) -> None:
    records = list(store.read(uid))
    kinds = [str(r.event["kind"]) for r in records]
    assert kinds[-2:] == ["EVENT_LIFECYCLE", "EVENT_END"], kinds
    assert records[-2].event["lifecycle"]["kind"] == "LIFECYCLE_CANCEL"
    assert records[-1].event["end"]["state"] == "CANCELED"
    assert store.get(uid).exec_state == "EXEC_CANCELED"
    assert not (store.session_dir(uid) / "CANCEL").exists()  # the request was answered
    assert verify_session(store, uid).ok


def _replays_identical(home: Path, uid: str, executions: int) -> None:
    done = subprocess.run(_cli(home, "replay", uid, "--rerun", "--json"), capture_output=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["identical"] and report["model_calls"] == 0
    assert report["replayed"] == report["executions"] == executions


def test_cancel_stops_a_turn_running_in_another_process(tmp_path: Path) -> None:
    home, uid, proc, store = _slow_turn(tmp_path)
    try:
        done = subprocess.run(_cli(home, "cancel", uid, "--wait", "60"), capture_output=True)
    finally:
        _, err = proc.communicate(timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"canceled exec=EXEC_CANCELED" in done.stdout
    assert proc.returncode == 18, err  # the running exec: "the turn was canceled"
    _ends_canceled(store, uid)
    head = store.get(uid).last_seq
    again = subprocess.run(_cli(home, "cancel", uid), capture_output=True)
    assert again.returncode == 0 and store.get(uid).last_seq == head  # idempotent
    nxt = subprocess.run(_cli(home, "exec", uid, "--input", "next"), capture_output=True)
    assert nxt.returncode == 0, nxt.stderr
    assert store.get(uid).exec_state == "EXEC_COMPLETED"
    _replays_identical(home, uid, 2)


def test_cancel_after_sigkill_closes_the_turn_and_exec_proceeds(tmp_path: Path) -> None:
    home, uid, proc, store = _slow_turn(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert store.get(uid).exec_state == "EXEC_RUNNING"
    blocked = subprocess.run(_cli(home, "exec", uid, "--input", "x"), capture_output=True)
    assert blocked.returncode == 17  # the interrupted turn blocks new input
    done = subprocess.run(_cli(home, "cancel", uid), capture_output=True)
    assert done.returncode == 0, done.stderr
    _ends_canceled(store, uid)
    nxt = subprocess.run(_cli(home, "exec", uid, "--input", "again"), capture_output=True)
    assert nxt.returncode == 0, nxt.stderr
    assert store.get(uid).exec_state == "EXEC_COMPLETED"
    _replays_identical(home, uid, 2)
