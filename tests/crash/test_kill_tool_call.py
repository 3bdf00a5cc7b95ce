"""A process killed between a mediated call's TOOL_CALL and its TOOL_RESULT (SIGKILL).

The tool is ``append_line``, so the effect count is the file's line count. Killed after the
host kept its receipt: resume records TOOL_RESULT from the receipt, runs nothing, the line
is there once and the chain verifies. Killed after the effect but before the receipt: the
outcome is unknown, resume refuses (ToolOutcomeUnknownError, exit 19) and writes nothing, and
the line is still there once: never repeated blindly. That resume marks the call unresolved
(``get`` shows it, in any process); ``resolve`` with the real result, or a failure, records
TOOL_RESULT from it and the turn goes on, the effect still once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentsessions.controller.spi import BoundTool
from agentsessions.errors import ToolNotUnresolvedError, ToolOutcomeUnknownError
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions import LocalSessions, open_local
from agentsessions.sessions.wiring import HARNESSES, build_controller
from agentsessions.tools import AppendLine, static_resolver
from tests.tool_harness import ToolLineHarness

ROOT = Path(__file__).resolve().parents[2]
PROC = Path(__file__).with_name("tool_proc.py")
HARNESSES.register("tool-line", ToolLineHarness)


def _kill_at(tmp_path: Path, where: str, durability: str = "") -> tuple[FileStore, str, Path]:
    home, effects = tmp_path / "home", tmp_path / "effects.txt"
    uid = FileStore(home).create(SessionMeta(uid=new_uid(), harness="tool-line")).uid
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-u", str(PROC), str(home), uid, str(effects), where, durability],
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
    store = FileStore(home)
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds[-1] == "EVENT_TOOL_CALL"  # the intent was durable, the result never came
    assert effects.read_text() == "the line\n"
    return store, uid, effects


def test_killed_after_the_receipt_resume_records_the_result_and_the_effect_stays_once(
    tmp_path: Path,
) -> None:
    store, uid, effects = _kill_at(tmp_path, "receipt")
    ctl = build_controller(store, store.home)
    ctl.tools = static_resolver(
        {"append": BoundTool("append", AppendLine(), {"path": str(effects)})}
    )
    result = ctl.resume(uid)
    assert result is not None and result.tool_calls == 0
    assert effects.read_text() == "the line\n"  # exactly one effect
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds.count("EVENT_TOOL_CALL") == 1 and kinds.count("EVENT_TOOL_RESULT") == 1
    assert kinds[-1] == "EVENT_END" and ctl.resume(uid) is None
    assert verify_session(store, uid).ok


def test_in_turn_mode_the_intent_is_durable_before_the_executor_runs_too(
    tmp_path: Path,
) -> None:
    """durability=turn holds a turn's commits for its one sync, but not past a tool call:
    the TOOL_CALL (with the turn's START and INPUT before it) is synced before the effect,
    and resume goes on from the receipt exactly as in step mode."""
    store, uid, effects = _kill_at(tmp_path, "receipt", "turn")
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds[:2] == ["EVENT_EXECUTION_START", "EVENT_INPUT"]
    ctl = build_controller(store, store.home)
    ctl.tools = static_resolver(
        {"append": BoundTool("append", AppendLine(), {"path": str(effects)})}
    )
    result = ctl.resume(uid)
    assert result is not None and result.tool_calls == 0
    assert effects.read_text() == "the line\n"  # exactly one effect
    assert verify_session(store, uid).ok


def test_killed_after_the_effect_before_the_receipt_resume_refuses_to_repeat_it(
    tmp_path: Path,
) -> None:
    store, uid, effects = _kill_at(tmp_path, "effect")
    before = store.get(uid).last_seq
    ctl = build_controller(store, store.home)
    ctl.tools = static_resolver(
        {"append": BoundTool("append", AppendLine(), {"path": str(effects)})}
    )
    with pytest.raises(ToolOutcomeUnknownError) as info:
        ctl.resume(uid)
    assert info.value.exit_code == 19 and "c1" in str(info.value)
    assert store.get(uid).last_seq == before and effects.read_text() == "the line\n"
    assert verify_session(store, uid).ok


def _workload(effects: Path) -> str:
    """The session's recorded tools: the harness's ``append`` as the built-in append_line."""
    return (
        '[tools.append]\nmediation = "mediated"\nexecutor = "append_line"\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )


def _unresolved_after_kill(tmp_path: Path) -> tuple[FileStore, str, Path, LocalSessions]:
    """Killed after the effect, before the receipt; a resume finds the outcome unknown."""
    store, uid, effects = _kill_at(tmp_path, "effect")
    store.set_workload(uid, _workload(effects))
    engine = open_local(store.home)
    assert engine.get(uid).unresolved_call is None  # nobody has tried to re-drive it yet
    before = store.get(uid).last_seq
    with pytest.raises(ToolOutcomeUnknownError) as info:
        list(engine.resume(uid))
    assert info.value.exit_code == 19
    assert f"agentsessions resolve {uid} --call c1" in info.value.hint
    assert store.get(uid).last_seq == before  # the journal is untouched
    return store, uid, effects, engine


def test_an_unknown_outcome_is_unresolved_and_a_result_resolves_it_once(tmp_path: Path) -> None:
    store, uid, effects, engine = _unresolved_after_kill(tmp_path)
    with engine:
        session = engine.get(uid)
        ref = session.unresolved_call
        assert ref is not None and ref.tool_call_id == "c1" and ref.tool == "append"
        assert ref.idempotency_key == "k-c1" and ref.call_seq == store.get(uid).last_seq
        assert session.to_json()["unresolved_call"]["tool_call_id"] == "c1"
        assert session.exec_state == "EXEC_RUNNING"  # exec_state stays as it was
        # seen from another process's engine too: the mark is durable, not in memory
        with open_local(store.home) as other:
            assert other.get(uid).unresolved_call == ref
            with pytest.raises(ToolOutcomeUnknownError):
                list(other.resume(uid))  # a second resume refuses again, writes nothing
        last = store.get(uid).last_seq
        with pytest.raises(ToolOutcomeUnknownError) as refused:  # new input names the call
            list(engine.exec(uid, ["more"]))
        assert "resolve" in refused.value.hint and store.get(uid).last_seq == last
        for wrong in ("c9", ""):  # not the unresolved call: refused, nothing changed
            with pytest.raises(ToolNotUnresolvedError) as bad:
                engine.resolve(uid, call_id=wrong, result={})
            assert bad.value.exit_code == 22
        assert engine.get(uid).unresolved_call == ref
        done = engine.resolve(uid, call_id="c1", result={"bytes": 9}, actor="ops")
        assert done.turn is not None and done.turn.outputs == ('c1: ok {"bytes": 9}',)
        assert done.session.unresolved_call is None and done.session.exec_state != "EXEC_RUNNING"
        with pytest.raises(ToolNotUnresolvedError):  # answered now: nothing is changed
            engine.resolve(uid, call_id="c1", failed="again")
    assert effects.read_text() == "the line\n"  # exactly one effect: never repeated
    kinds = [str(r.event["kind"]) for r in store.read(uid)]
    assert kinds.count("EVENT_TOOL_CALL") == 1 and kinds.count("EVENT_TOOL_RESULT") == 1
    assert kinds[-1] == "EVENT_END"
    assert verify_session(store, uid).ok


def test_a_failed_resolution_continues_with_an_error_result_the_model_sees(
    tmp_path: Path,
) -> None:
    store, uid, effects, engine = _unresolved_after_kill(tmp_path)
    with engine:
        done = engine.resolve(uid, call_id="c1", failed="the disk was full", actor="ops")
    assert done.turn is not None
    assert done.turn.outputs == ("c1: error the disk was full (resolved by ops)",)
    result = [r.event["result"] for r in store.read(uid) if r.event["kind"] == "EVENT_TOOL_RESULT"]
    assert result[0]["is_error"] is True and result[0]["code"] == "EXECUTOR_ERROR"
    assert effects.read_text() == "the line\n"
    assert verify_session(store, uid).ok
