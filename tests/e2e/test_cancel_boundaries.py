"""Cancel at every effect boundary of a live turn, with real processes on both sides.

The turn runs in its own process (``gated_turn.py``: the real engine on the file store, a
harness and a model that park at gates); the canceller is the real ``agentsessions cancel``.
Each case parks the turn at one boundary, starts the cancel, waits until its durable request
(the session's ``CANCEL`` file) exists, notes the journal head and how many model calls had
started, and only then lets the turn go on. Nothing is timed: every wait is on state the
other process makes visible.

The boundaries of the live path (``controller/sinks.py``, ``controller/controller.py``):
before each model call, while one streams (the call is abandoned at its next delta, its
MODEL_CALL kept as audit), before the harness's output, a usage report and a tool result,
before END; on a resumed turn's live side; on a suspended (cold) session that exec woke.
For each: the journal ends LIFECYCLE CANCEL + END CANCELED, nothing after the request is a
new effect, no model call started after it, the chain verifies, a repeated cancel changes
nothing, the next exec runs to END COMPLETED, and a replay of the session in another process
re-drives every turn, the canceled one to where it stopped, identical with no model call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from clirun import Cli

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.v1 import construct

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "gated_turn.py"
ROOT = HERE.parents[1]
BOUND = 120.0  # every wait is for visible state; this only turns a hang into a failure
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # every process runs this checkout's code
LC, END, CALL = "EVENT_LIFECYCLE", "EVENT_END", "EVENT_MODEL_CALL"


@dataclass(frozen=True)
class Case:
    """One boundary: the harness's steps, where the turn is parked, what follows the request."""

    steps: tuple[str, ...]
    parked: str  # the marker file that says the turn is parked at the boundary
    release: str  # the file that lets it go on
    after: tuple[str, ...]  # the kinds committed after the cancel request was recorded
    mode: str = "exec"
    cold: bool = False


GATE = ("g.reached", "g.go")
CASES = {
    "before-first-model-call": Case(("gate:g", "model", "output"), *GATE, (LC, END)),
    "model-call-streaming": Case(
        ("model", "output"), "model-1.streaming", "model-1.go", (CALL, LC, END)
    ),
    "between-model-calls": Case(("model", "gate:g", "model", "output"), *GATE, (LC, END)),
    "after-model-call-before-output": Case(("model", "gate:g", "output"), *GATE, (LC, END)),
    "before-usage": Case(("gate:g", "usage"), *GATE, (LC, END)),
    "before-tool-result": Case(("gate:g", "report"), *GATE, (LC, END)),
    "before-end": Case(("model", "output", "gate:g"), *GATE, (LC, END)),
    "resumed-turn": Case(("gate:g", "model"), *GATE, (LC, END), mode="resume"),
    "cold-session-woken-by-exec": Case(("gate:g", "model"), *GATE, (LC, END), cold=True),
}


def _cli(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "agentsessions", "--home", str(home), *args]


def _driver(home: Path, gates: Path, uid: str, mode: str, steps: tuple[str, ...]) -> list[str]:
    return [sys.executable, str(DRIVER), str(home), str(gates), uid, mode, json.dumps(steps)]


def _wait_for(path: Path, *procs: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + BOUND
    while not path.exists():
        for proc in procs:
            assert proc.poll() is None, f"process exited {proc.returncode} before {path.name}"
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


def _started(gates: Path) -> int:
    return len(list(gates.glob("model-*.started")))


def _run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(args, capture_output=True, timeout=BOUND, cwd=ROOT, env=ENV)


def _seed_interrupted(store: FileStore, uid: str, steps: tuple[str, ...]) -> None:
    """START and INPUT of a turn whose process died before its first effect."""
    exec_id = "00000000000000aa"
    events = [
        construct.execution_start(
            input_count=1,
            config=json.dumps(steps).encode(),
            harness="gated",
            harness_version="1",
            execution_id=exec_id,
        ),
        construct.input_event(construct.text_message("user", "hello"), execution_id=exec_id),
    ]
    with store.writer(uid) as writer:
        writer.append(events)


@pytest.mark.parametrize("name", list(CASES))
def test_cancel_at_each_effect_boundary(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    home, gates = tmp_path / "home", tmp_path / "gates"
    gates.mkdir()
    store = FileStore(home)
    uid = store.create(SessionMeta(uid=new_uid(), harness="gated", model="gated")).uid
    if case.cold:  # one completed turn, then suspend: the next exec wakes it first
        (tmp_path / "warmup").mkdir()
        done = _run(_driver(home, tmp_path / "warmup", uid, "exec", ("model",)))
        assert done.returncode == 0, done.stdout + done.stderr
        done = _run(_driver(home, tmp_path / "warmup", uid, "suspend", ()))
        assert done.returncode == 0, done.stdout + done.stderr
        assert store.get(uid).compute_state == "COMPUTE_COLD"
    if case.mode == "resume":
        _seed_interrupted(store, uid, case.steps)
    if case.parked.startswith("model-"):
        (gates / "model-1.hold").touch()

    turn = subprocess.Popen(
        _driver(home, gates, uid, case.mode, case.steps),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=ENV,
    )
    canceller: subprocess.Popen[bytes] | None = None
    try:
        _wait_for(gates / case.parked, turn)
        canceller = subprocess.Popen(
            _cli(home, "cancel", uid, "--wait", str(BOUND)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
        )
        _wait_for(store.session_dir(uid) / "CANCEL", turn, canceller)
        head, started = store.get(uid).last_seq, _started(gates)
        (gates / case.release).touch()
        out, err = canceller.communicate(timeout=BOUND)
    finally:
        (gates / case.release).touch()
        turn_out, turn_err = turn.communicate(timeout=BOUND)
        if canceller is not None and canceller.poll() is None:
            canceller.kill()
            canceller.communicate()
    assert canceller.returncode == 0, err
    assert out.startswith(f"session {uid} canceled exec=EXEC_CANCELED".encode()), out
    assert turn.returncode == 18, turn_out + turn_err  # the turn's own exit: canceled
    assert json.loads(turn_out.splitlines()[-1])["canceled"] is True

    records = list(store.read(uid))
    after = [r for r in records if r.seq > head]
    assert tuple(str(r.event["kind"]) for r in after) == case.after
    assert after[-2].event["lifecycle"]["kind"] == "LIFECYCLE_CANCEL"
    assert after[-1].event["end"]["state"] == "CANCELED"
    exec_id = after[-1].event["execution_id"]
    run = [r for r in records if r.event.get("execution_id") == exec_id]
    assert run[0].event["kind"] == "EVENT_EXECUTION_START"
    assert _started(gates) == started  # no model call started after the request
    assert sum(r.event["kind"] == CALL for r in run) == started  # each start is on the record
    if case.cold:
        kinds = [str(r.event["kind"]) for r in records if r.seq < run[0].seq]
        assert kinds[-1] == LC and records[run[0].seq - 2].event["lifecycle"]["kind"] == (
            "LIFECYCLE_RESUME"
        )  # exec woke the session before the turn it then canceled
    assert store.get(uid).exec_state == "EXEC_CANCELED"
    assert not (store.session_dir(uid) / "CANCEL").exists()  # the request was answered
    assert verify_session(store, uid).ok

    last = store.get(uid).last_seq
    again = Cli(home, ROOT).fast("cancel", uid)  # in-process: the process is not the point
    assert again.code == 0, again.err  # idempotent: nothing appended
    assert store.get(uid).last_seq == last
    (tmp_path / "next").mkdir()
    nxt = _run(_driver(home, tmp_path / "next", uid, "exec", ("model", "output")))
    assert nxt.returncode == 0, nxt.stdout + nxt.stderr
    assert store.get(uid).exec_state == "EXEC_COMPLETED"
    assert verify_session(store, uid).ok

    head = store.get(uid).last_seq
    replayed = _run(_driver(home, gates, uid, "replay", ()))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    report = json.loads(replayed.stdout.splitlines()[-1])
    turns = 3 if case.cold else 2
    assert (report["executions"], report["replayed"], report["model_calls"]) == (turns,) * 2 + (0,)
    assert report["made_calls"] == 0 and report["identical"]
    assert store.get(uid).last_seq == head  # replay wrote nothing


def test_cancel_of_an_idle_session_exits_17(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = FileStore(home)
    uid = store.create(SessionMeta(uid=new_uid(), harness="gated", model="gated")).uid
    done = _run(_cli(home, "cancel", uid))
    assert done.returncode == 17
    assert done.stderr.startswith(b"agentsessions: error: ")
    assert b"no execution to cancel" in done.stderr
    assert store.get(uid).last_seq == 0
