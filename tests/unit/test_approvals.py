"""Human approval through the Sessions API: gate, park, decision, receipt (digest 5.6, 6).

The digest's conformance cases (approved, denied, executor failure) with the tests-only
``tool-line`` harness and the ``append_line`` executor: the effect file's line count is
the effect count. Then the bad inputs of issue 9 for approvals, each one error and nothing
written, and the journal validation. The killed-process cases are
``tests/crash/test_kill_approval.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agentsessions
from agentsessions.controller import approvals as core
from agentsessions.controller import executions
from agentsessions.errors import (
    ApprovalBlockedError,
    ApprovalDecidedError,
    ApprovalInheritedError,
    ApprovalNotPendingError,
    ApprovalParkedError,
    InvalidArgumentError,
    InvalidExecutionLogError,
)
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.values import SessionFrame
from agentsessions.sessions.wiring import HARNESSES
from tests.tool_harness import ToolLineHarness, plan

HARNESSES.register("tool-line", ToolLineHarness)
GATED = "MEDIATION_REQUIRES_APPROVAL"


def gated(call_id: str, line: str, key: str = "") -> dict[str, Any]:
    """One approval-gated append call."""
    args = {"line": line}
    return {"id": call_id, "tool": "append", "key": key or f"k-{call_id}", "args": args,
            "mediation": GATED}  # fmt: skip


def _workload(tmp_path: Path, effects: Path) -> Path:
    path = tmp_path / "w.toml"
    path.write_text(
        '[tools.append]\nmediation = "approval"\nexecutor = "append_line"\n'
        f'config = {{ path = "{effects}" }}\n'
    )
    return path


def _parked(tmp_path: Path, effects: Path | None = None) -> tuple[Sessions, str, Path]:
    """A session whose turn parked on one gated call ``c1``."""
    effects = effects or tmp_path / "effects.txt"
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    uid = engine.create(harness="tool-line", tools=_workload(tmp_path, effects)).uid
    with pytest.raises(ApprovalParkedError) as info:
        engine.run(uid, ["go"], config=plan(gated("c1", "the line")))
    assert info.value.tool_call_id == "c1" and info.value.exit_code == 20
    return engine, uid, effects


def _kinds(engine: Sessions, uid: str) -> list[str]:
    return [str(r.event["kind"]).removeprefix("EVENT_") for r in engine.read(uid)]


def _resume(engine: Sessions, uid: str) -> SessionFrame:
    frames = list(engine.resume(uid))
    last = frames[-1]
    assert isinstance(last, SessionFrame)
    return last


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_gated_call_parks_after_a_durable_request_with_no_end_or_error(tmp_path: Path) -> None:
    engine, uid, effects = _parked(tmp_path)
    assert _kinds(engine, uid) == ["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST"]
    assert _lines(effects) == 0  # nothing ran
    session = engine.get(uid)
    assert session.exec_state == "EXEC_AWAITING"
    ref = session.pending_approval
    assert ref is not None and (ref.tool_call_id, ref.request_seq) == ("c1", 4)
    (request,) = [r for r in engine.read(uid) if r.seq == 4]
    assert ref.execution_id == request.event["execution_id"]
    assert session.to_json()["pending_approval"] == ref.to_json()
    # a resume before any decision parks again and writes nothing
    with pytest.raises(ApprovalParkedError) as again:
        _resume(engine, uid)
    assert again.value.request_seq == 4 and engine.get(uid).last_seq == 4


def test_approved_the_executor_runs_once_and_replay_runs_nothing(tmp_path: Path) -> None:
    engine, uid, effects = _parked(tmp_path)
    decided = engine.approve(uid, approved=True, reason="looks fine", actor="alice")
    assert decided.decision.seq == 5 and not decided.existing
    event = decided.decision.event
    assert event["approval_result"] == {
        "tool_call_id": "c1",
        "approved": True,
        "reason": "looks fine",
        "request_seq": "4",
    }
    assert event["actor"] == {"principal": "alice"} and event["ts"]
    assert decided.session.pending_approval is None and _lines(effects) == 0  # never runs it
    last = _resume(engine, uid)
    assert last.turn is not None and last.turn.outputs[0].startswith("c1: ok ")
    assert _lines(effects) == 1
    kinds = _kinds(engine, uid)
    assert kinds[4:] == ["APPROVAL_RESULT", "TOOL_RESULT", "OUTPUT", "END"]
    result = next(r for r in engine.read(uid) if r.seq == 6).event["result"]
    assert result["approval_request_seq"] == "4" and result["approval_decision_seq"] == "5"
    assert not result.get("is_error") and "code" not in result
    assert verify_session(engine.store, uid).ok  # type: ignore[attr-defined]
    report = engine.rerun(uid)
    assert report.identical and report.model_calls == 0 and _lines(effects) == 1


def test_denied_the_executor_never_runs_and_the_model_reads_the_denial(tmp_path: Path) -> None:
    engine, uid, effects = _parked(tmp_path)
    engine.approve(uid, approved=False, reason="no", actor="bob")
    last = _resume(engine, uid)
    assert last.turn is not None
    assert last.turn.outputs == (f"c1: error {core.DENIED_MESSAGE}",)
    result = next(r for r in engine.read(uid) if r.seq == 6).event["result"]
    assert result == {
        "id": "c1",
        "is_error": True,
        "error": "Tool execution denied by approval decision.",
        "content": [{"text": {"text": "Tool execution denied by approval decision."}}],
        "code": "APPROVAL_DENIED",
        "approval_request_seq": "4",
        "approval_decision_seq": "5",
    }
    assert _lines(effects) == 0 and _kinds(engine, uid)[-1] == "END"
    assert engine.rerun(uid).identical and _lines(effects) == 0


def test_an_executor_failure_is_a_durable_error_receipt(tmp_path: Path) -> None:
    engine, uid, _ = _parked(tmp_path, effects=tmp_path)  # a directory: the append fails
    engine.approve(uid, approved=True)
    last = _resume(engine, uid)
    assert last.turn is not None and last.turn.outputs[0].startswith("c1: error ")
    result = next(r for r in engine.read(uid) if r.seq == 6).event["result"]
    assert result["is_error"] and result["code"] == "EXECUTOR_ERROR"
    assert result["approval_request_seq"] == "4" and result["approval_decision_seq"] == "5"
    assert engine.rerun(uid).identical


def test_an_identical_retry_returns_the_decision_and_a_different_one_is_refused(
    tmp_path: Path,
) -> None:
    engine, uid, _ = _parked(tmp_path)
    first = engine.approve(uid, approved=True, reason="ok", actor="alice", request_seq=4)
    again = engine.approve(uid, approved=True, reason="ok", actor="alice", request_seq=4)
    assert again.existing and again.decision.seq == first.decision.seq == 5
    for other in (
        {"approved": False, "reason": "ok", "actor": "alice"},
        {"approved": True, "reason": "other", "actor": "alice"},
        {"approved": True, "reason": "ok", "actor": "mallory"},
    ):
        with pytest.raises(ApprovalDecidedError) as info:
            engine.approve(uid, request_seq=4, **other)  # type: ignore[arg-type]
        assert info.value.exit_code == 21 and "already approved at seq 5" in str(info.value)
    assert engine.get(uid).last_seq == 5  # nothing written


@pytest.mark.parametrize(
    ("ids", "says"),
    [
        ({"request_seq": 3}, "no approval request at seq 3"),
        ({"tool_call_id": "c9"}, "no approval request for call c9"),
        ({"execution_id": "0123456789abcdef"}, "execution 0123456789abcdef has no open"),
    ],
)
def test_a_decision_naming_another_request_is_refused(
    tmp_path: Path, ids: dict[str, Any], says: str
) -> None:
    engine, uid, _ = _parked(tmp_path)
    with pytest.raises(ApprovalNotPendingError) as info:
        engine.approve(uid, approved=True, **ids)
    assert says in str(info.value) and info.value.exit_code == 21
    assert engine.get(uid).last_seq == 4


def test_an_approval_with_nothing_pending_is_refused(tmp_path: Path) -> None:
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    uid = engine.run(None, ["hi"]).uid
    with pytest.raises(ApprovalNotPendingError) as info:
        engine.approve(uid, approved=True)
    assert "no approval request pending" in str(info.value)
    with pytest.raises(InvalidArgumentError):
        engine.approve(uid, approved=True, request_seq=0)


def test_a_request_inherited_through_a_fork_is_refused_in_the_child(tmp_path: Path) -> None:
    engine, uid, effects = _parked(tmp_path)
    (child,) = engine.fork(uid)
    with pytest.raises(ApprovalInheritedError) as info:
        engine.approve(child.uid, approved=True)
    assert uid in str(info.value) and engine.get(child.uid).last_seq == child.last_seq
    engine.approve(uid, approved=True)  # the parent still decides its own
    _resume(engine, uid)
    assert _lines(effects) == 1


def test_new_input_is_refused_while_an_approval_has_no_receipt(tmp_path: Path) -> None:
    engine, uid, _ = _parked(tmp_path)
    with pytest.raises(ApprovalBlockedError) as info:
        engine.run(uid, ["more"])
    assert "waiting for a decision" in str(info.value) and info.value.exit_code == 21
    engine.approve(uid, approved=False)
    with pytest.raises(ApprovalBlockedError) as decided:
        engine.run(uid, ["more"])
    assert "decided, resume it" in str(decided.value)
    assert engine.get(uid).last_seq == 5
    _resume(engine, uid)
    engine.run(uid, ["more"], harness="echo")  # the receipt is written: input goes on


def test_a_reused_call_id_in_one_turn_is_refused_before_it_is_recorded(tmp_path: Path) -> None:
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    uid = engine.create(harness="tool-line", tools=_workload(tmp_path, tmp_path / "e")).uid
    calls = plan(gated("c1", "a"), gated("c1", "b", key="k2"))
    with pytest.raises(ApprovalParkedError):
        engine.run(uid, ["go"], config=calls)
    engine.approve(uid, approved=True)
    with pytest.raises(InvalidArgumentError, match="already used in this turn"):
        _resume(engine, uid)
    assert _kinds(engine, uid)[-1] == "ERROR"  # the turn failed; c1 stays receipted once
    assert _lines(tmp_path / "e") == 1


def test_a_call_cut_before_its_request_gets_the_request_on_resume(tmp_path: Path) -> None:
    """A journal written elsewhere (the reference appends TOOL_CALL and APPROVAL_REQUEST
    as two commits) may end between them: resume appends the request, then parks."""
    engine, uid, _ = _parked(tmp_path)
    store = engine.store  # type: ignore[attr-defined]
    records = list(store.read(uid))
    fresh = engine.create(harness="tool-line", tools=_workload(tmp_path, tmp_path / "x"))
    engine.close()
    with store.writer(fresh.uid) as writer:
        writer.append([r.event for r in records[:2]], expected_last_seq=0)
        writer.append([records[2].event], expected_last_seq=2)
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    with pytest.raises(ApprovalParkedError) as info:
        _resume(engine, fresh.uid)
    assert info.value.request_seq == 4
    assert _kinds(engine, fresh.uid)[-1] == "APPROVAL_REQUEST"
    assert engine.get(fresh.uid).pending_approval is not None


def _run_of(events: list[dict[str, Any]]) -> executions.Execution:
    numbered = [(i + 1, {**e, "execution_id": "e1"}) for i, e in enumerate(events)]
    (run,) = executions.group(numbered)
    return run


CALL = {"kind": "EVENT_TOOL_CALL", "tool": {"id": "c1", "tool": "t", "mediation": GATED}}
REQUEST = {"kind": "EVENT_APPROVAL_REQUEST", "approval": {"tool_call_id": "c1"}}
START = {"kind": "EVENT_EXECUTION_START", "execution_start": {}}


@pytest.mark.parametrize(
    "after",
    [
        {"kind": "EVENT_OUTPUT", "message": {}},
        {"kind": "EVENT_END", "end": {"state": "COMPLETED"}},
        {"kind": "EVENT_APPROVAL_REQUEST", "approval": {"tool_call_id": "c2"}},
        {"kind": "EVENT_APPROVAL_RESULT", "approval_result": {"tool_call_id": "c1"}},
        {"kind": "EVENT_TOOL_RESULT", "result": {"id": "c1"}},
    ],
)
def test_the_journal_may_not_continue_past_an_unresolved_approval(after: dict[str, Any]) -> None:
    with pytest.raises(InvalidExecutionLogError, match="continued past an unresolved approval"):
        core.gates(_run_of([START, CALL, REQUEST, after]))


def test_a_receipt_must_match_its_decision() -> None:
    decision = {
        "kind": "EVENT_APPROVAL_RESULT",
        "approval_result": {"tool_call_id": "c1", "approved": True, "request_seq": "3"},
    }
    denied = {"kind": "EVENT_TOOL_RESULT", "result": {
        "id": "c1", "code": "APPROVAL_DENIED", "approval_request_seq": "3",
        "approval_decision_seq": "4"}}  # fmt: skip
    with pytest.raises(InvalidExecutionLogError):
        core.gates(_run_of([START, CALL, REQUEST, decision, denied]))
    ok = {**denied, "result": {**denied["result"], "code": "CODE_UNSPECIFIED"}}
    (gate,) = core.gates(_run_of([START, CALL, REQUEST, decision, ok]))
    assert (gate.request_seq, gate.decision_seq, gate.receipt_seq) == (3, 4, 5)
