"""A process killed (SIGKILL) at each step of the approval protocol (digest 5.6).

The tool is ``append_line``: the effect count is the file's line count. After each kill,
the rest of the protocol (approve or deny, resume) runs in a fresh controller: the line is
there exactly once when approved (never when denied) and the chain verifies.

The steps: after the gate (TOOL_CALL + APPROVAL_REQUEST durable, the park not yet returned),
after the decision (APPROVAL_RESULT durable, no resume yet), during the receipt's executor
(line written, outcome not kept: resume refuses to repeat it, ToolOutcomeUnknownError) and
after the outcome was kept (before TOOL_RESULT: resume records it, runs nothing). A cut
between the intent and the request cannot happen here (one commit holds both); a journal
cut there by another writer is ``tests/unit/test_approvals.py``'s call-only case.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentsessions.controller import approvals
from agentsessions.errors import ApprovalParkedError, ToolOutcomeUnknownError
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from tests.crash.approval_proc import GATED, controller
from tests.tool_harness import plan

ROOT = Path(__file__).resolve().parents[2]
PROC = Path(__file__).with_name("approval_proc.py")


def _kill(home: Path, uid: str, effects: Path, where: str, *extra: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-u", str(PROC), str(home), uid, str(effects), where, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the process reached its stop point
    finally:
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    assert line.strip() == "STOPPED", err
    assert proc.returncode == -signal.SIGKILL


def _session(tmp_path: Path) -> tuple[Path, str, Path]:
    home, effects = tmp_path / "home", tmp_path / "effects.txt"
    uid = FileStore(home).create(SessionMeta(uid=new_uid(), harness="tool-line")).uid
    return home, uid, effects


def _park(home: Path, uid: str, effects: Path) -> None:
    with pytest.raises(ApprovalParkedError):
        controller(str(home), str(effects), "").exec(
            uid, [{"role": "user", "parts": [{"text": {"text": "go"}}]}],
            harness="tool-line", config=plan(GATED),
        )  # fmt: skip


def _decide(home: Path, uid: str, effects: Path, approved: bool = True) -> None:
    ctl = controller(str(home), str(effects), "")
    approvals.approve(ctl, uid, approvals.Decision(approved, actor="op"))
    ctl.close()


def _finish(home: Path, uid: str, effects: Path) -> list[str]:
    """Resume in a fresh controller; the journal's kinds after it (the chain verified)."""
    ctl = controller(str(home), str(effects), "")
    result = ctl.resume(uid)
    assert result is not None and ctl.resume(uid) is None
    ctl.close()
    store = FileStore(home)
    assert verify_session(store, uid).ok
    return [str(r.event["kind"]).removeprefix("EVENT_") for r in store.read(uid)]


def _lines(effects: Path) -> int:
    return len(effects.read_text().splitlines()) if effects.exists() else 0


@pytest.mark.parametrize("approved", [True, False])
def test_killed_after_the_gate_the_request_stands_and_the_protocol_goes_on(
    tmp_path: Path, approved: bool
) -> None:
    home, uid, effects = _session(tmp_path)
    _kill(home, uid, effects, "request")
    kinds = [str(r.event["kind"]) for r in FileStore(home).read(uid)]
    assert kinds[-2:] == ["EVENT_TOOL_CALL", "EVENT_APPROVAL_REQUEST"]
    _decide(home, uid, effects, approved)
    assert _finish(home, uid, effects)[-3:] == ["TOOL_RESULT", "OUTPUT", "END"]
    assert _lines(effects) == (1 if approved else 0)


@pytest.mark.parametrize("approved", [True, False])
def test_killed_after_the_decision_resume_writes_the_receipt_once(
    tmp_path: Path, approved: bool
) -> None:
    home, uid, effects = _session(tmp_path)
    _park(home, uid, effects)
    _kill(home, uid, effects, "decision", *([] if approved else ["deny"]))
    assert [str(r.event["kind"]) for r in FileStore(home).read(uid)][-1] == (
        "EVENT_APPROVAL_RESULT"
    )
    kinds = _finish(home, uid, effects)
    assert kinds.count("TOOL_RESULT") == 1 and kinds[-1] == "END"
    assert _lines(effects) == (1 if approved else 0)


def test_killed_after_the_outcome_was_kept_resume_records_it_and_runs_nothing(
    tmp_path: Path,
) -> None:
    home, uid, effects = _session(tmp_path)
    _park(home, uid, effects)
    _decide(home, uid, effects)
    _kill(home, uid, effects, "receipt")
    assert _lines(effects) == 1
    kinds = _finish(home, uid, effects)
    assert kinds.count("TOOL_RESULT") == 1 and _lines(effects) == 1


def test_killed_while_the_executor_ran_resume_refuses_to_repeat_it(tmp_path: Path) -> None:
    home, uid, effects = _session(tmp_path)
    _park(home, uid, effects)
    _decide(home, uid, effects)
    _kill(home, uid, effects, "effect")
    assert _lines(effects) == 1
    store = FileStore(home)
    before = store.get(uid).last_seq
    ctl = controller(str(home), str(effects), "")
    with pytest.raises(ToolOutcomeUnknownError):
        ctl.resume(uid)
    ctl.close()
    assert _lines(effects) == 1 and FileStore(home).get(uid).last_seq == before
    assert verify_session(FileStore(home), uid).ok
