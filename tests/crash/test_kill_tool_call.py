"""A process killed between a mediated call's TOOL_CALL and its TOOL_RESULT (SIGKILL).

The tool is ``append_line``, so the effect count is the file's line count. Killed after the
host kept its receipt: resume records TOOL_RESULT from the receipt, runs nothing, the line
is there once and the chain verifies. Killed after the effect but before the receipt: the
outcome is unknown, resume refuses (ToolOutcomeUnknownError, exit 19) and writes nothing, and
the line is still there once: never repeated blindly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentsessions.controller.spi import BoundTool
from agentsessions.errors import ToolOutcomeUnknownError
from agentsessions.journal.stores.filestore import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.wiring import HARNESSES, build_controller
from agentsessions.tools import AppendLine, static_resolver
from tests.tool_harness import ToolLineHarness

ROOT = Path(__file__).resolve().parents[2]
PROC = Path(__file__).with_name("tool_proc.py")
HARNESSES.register("tool-line", ToolLineHarness)


def _kill_at(tmp_path: Path, where: str) -> tuple[FileStore, str, Path]:
    home, effects = tmp_path / "home", tmp_path / "effects.txt"
    uid = FileStore(home).create(SessionMeta(uid=new_uid(), harness="tool-line")).uid
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-u", str(PROC), str(home), uid, str(effects), where],
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
