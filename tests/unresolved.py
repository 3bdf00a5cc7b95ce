"""Tests-only: a session whose mediated call is cut after its effect, before its receipt.

The executor appends its line (the effect) and then raises KeyboardInterrupt, as a user's
Ctrl-C would: the exception is not a tool failure, so the host keeps no receipt and writes
no TOOL_RESULT, and the turn is left open with its TOOL_CALL last: the state a SIGKILL at
that point leaves (``tests/crash/test_kill_tool_call.py`` makes it with a real kill). The
session's recorded workload runs ``append`` as the built-in append_line, which cannot
confirm a call by key, so a resume finds the outcome unknown.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentsessions.controller.spi import BoundTool, ToolOutcome, ToolRequest
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.wiring import HARNESSES, build_controller
from agentsessions.tools import AppendLine, static_resolver
from agentsessions.v1 import construct
from tests.tool_harness import ToolLineHarness, line_call, plan

HARNESSES.register("tool-line", ToolLineHarness)


class _CutAfterEffect:
    """append_line, then an interrupt before the host can keep the outcome."""

    def call(self, request: ToolRequest) -> ToolOutcome:
        AppendLine().call(request)
        raise KeyboardInterrupt


def workload(effects: Path) -> str:
    """A workload running the harness's ``append`` as append_line into ``effects``."""
    return (
        '[tools.append]\nmediation = "mediated"\nexecutor = "append_line"\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )


def cut_session(home: Path, effects: Path) -> str:
    """A session under ``home`` whose call c1 (key k-c1) wrote its line to ``effects`` and
    has no receipt and no TOOL_RESULT; its uid."""
    store = FileStore(home)
    uid = store.create(SessionMeta(uid=new_uid(), harness="tool-line")).uid
    store.set_workload(uid, workload(effects))
    ctl = build_controller(store, home)
    ctl.tools = static_resolver(
        {"append": BoundTool("append", _CutAfterEffect(), {"path": str(effects)})}
    )
    inputs = [dict(construct.text_message("user", "go"))]
    try:
        ctl.exec(uid, inputs, harness="tool-line", config=plan(line_call("c1", "the line")))
    except KeyboardInterrupt:
        pass
    else:  # pragma: no cover - the executor always interrupts
        raise AssertionError("the turn was not cut")
    ctl.close()
    store.close()
    return uid


def cut_append(request: ToolRequest) -> ToolOutcome:
    """A ``python:tests.unresolved:cut_append`` executor: append_line into
    ``config["path"]``, then interrupt when the call's id is in ``config["cut"]``."""
    outcome = AppendLine().call(request)
    if request.call_id in request.config.get("cut", []):
        raise KeyboardInterrupt
    return outcome


def cut_workload(effects: Path, mediation: str = "mediated", cut: str = "c2") -> str:
    """A workload running ``append`` as :func:`cut_append`, cutting call ``cut``."""
    return (
        f'[tools.append]\nmediation = "{mediation}"\n'
        'executor = "python:tests.unresolved:cut_append"\n'
        f"config = {{ path = {json.dumps(str(effects))}, cut = [{json.dumps(cut)}] }}\n"
    )
