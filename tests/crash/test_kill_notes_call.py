"""A process killed between a ``notes`` call's TOOL_CALL and its TOOL_RESULT (SIGKILL).

The note's commit in the tool store is durable, the host's receipt and TOOL_RESULT are not.
``notes`` is idempotent on its own (the call's idempotency key is its commit id), so resume
re-drives it: the second run finds the first commit and appends nothing. Afterwards the
store holds exactly one note, the turn ended, and both chains verify.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions import open_local

ROOT = Path(__file__).resolve().parents[2]
PROC = Path(__file__).with_name("notes_proc.py")
WORKLOAD = (
    '[session]\ncomponents = ["chat"]\ntool_components = ["notes"]\n'
    '[tools.notes]\nmediation = "mediated"\nexecutor = "notes"\n'
)


def test_killed_after_the_note_landed_resume_keeps_exactly_one_note(tmp_path: Path) -> None:
    home, tools, script = tmp_path / "home", tmp_path / "tools.toml", tmp_path / "script.json"
    tools.write_text(WORKLOAD)
    call = {"name": "notes", "arguments": {"op": "add", "text": "buy milk"}}
    script.write_text(json.dumps([{"text": "", "tool_calls": [call]}, "Noted."]))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-u", str(PROC), str(home), str(script), str(tools)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the process reached its stop point
    finally:
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    assert line.startswith("STOPPED "), err
    assert proc.returncode == -signal.SIGKILL
    uid = line.split()[1]
    store = FileStore(home)
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds[-1] == "EVENT_TOOL_CALL"  # the intent was durable, the result never came
    assert len(list(store.component(uid, "notes").read())) == 1  # the effect landed

    with open_local(home) as engine:
        frames = list(engine.resume(uid))
        turn = frames[-1].turn  # type: ignore[union-attr]
        assert turn is not None and turn.outputs[-1] == "Noted."
        entries = engine.tool_store(uid, "notes")
        assert [e.data for e in entries] == [{"op": "add", "text": "buy milk"}]  # exactly one
        assert list(engine.resume(uid))[-1].turn is None  # type: ignore[union-attr]
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds.count("EVENT_TOOL_CALL") == 1 and kinds.count("EVENT_TOOL_RESULT") == 1
    assert kinds[-1] == "EVENT_END"
    result = [r.event["result"] for r in store.read(uid) if r.event["kind"] == "EVENT_TOOL_RESULT"]
    assert result[0].get("is_error") is not True
    report = verify_session(store, uid)
    assert report.ok and [name for name, part in report.components if part.ok] == ["notes"]
