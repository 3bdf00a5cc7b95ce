"""A harness hosted on the warm runtime gets the same tools, mediated the same way, as one
in-process (issue 9 loose end 2): ``Start.tools`` crosses the wire, and each ``sink.tool``
call comes back to the caller, whose sink records TOOL_CALL durably before the executor
runs (in the caller's process) and applies the approval rules.

The harness is the chat harness declared REQUIRES_MEMORY_SNAPSHOT (``warm_chat``), so the
default ``auto`` runtime places it on a warm host process; the model is the scripted one.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import warm_chat

from agentsessions.errors import ApprovalUnavailableError
from agentsessions.runtimes.warm_launch import shutdown_all
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.sessions.wiring import HARNESSES

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm hosts need Linux"),
]
HARNESSES.register("warm-chat", warm_chat.create)
PR_SET_CHILD_SUBREAPER = 36


@pytest.fixture(scope="module", autouse=True)
def subreaper() -> Iterator[None]:
    """Hosts orphaned by their launcher become this process's children and are reaped."""
    libc = ctypes.CDLL(None, use_errno=True)
    enabled = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    yield
    if enabled:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "home"
    shutdown_all(tmp_path / "home")


def _tools(tmp_path: Path, home: Path, tier: str) -> tuple[Path, Path]:
    effects, toml = tmp_path / "effects.txt", tmp_path / "tools.toml"
    toml.write_text(
        "[tools.note]\n"
        f'mediation = "{tier}"\n'
        'executor = "python:warm_chat:probe"\n'
        'description = "Note a line"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f"config = {{ path = {json.dumps(str(effects))}, home = {json.dumps(str(home))} }}\n"
    )
    return toml, effects


def _script(tmp_path: Path, *entries: Any) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(entries)))
    return f"scripted:file={path}"


def _kinds(engine: LocalSessions, uid: str) -> list[str]:
    return [str(r.event["kind"]).removeprefix("EVENT_") for r in engine.store.read(uid)]


NOTE = {"tool_calls": [{"name": "note", "arguments": {"line": "hello"}}]}


def test_a_warm_hosted_chat_is_offered_the_tools_and_the_host_mediates_its_calls(
    tmp_path: Path, home: Path
) -> None:
    tools, effects = _tools(tmp_path, home, "mediated")
    model = _script(tmp_path, NOTE, "noted")
    with open_local(home) as engine:
        last = engine.run(None, ["note hello"], harness="warm-chat", model=model, tools=tools)
        uid = last.uid
        assert last.turn is not None and last.turn.outputs[-1] == "noted"
        assert engine.runtime().find(uid) is not None  # the harness ran on a warm host
        compute = engine.runtime().find(uid)
        assert compute is not None and getattr(compute, "pid", os.getpid()) != os.getpid()
        assert effects.read_text() == "hello\n"  # offered, called, run once
        assert _kinds(engine, uid) == [
            "EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT",
            "MODEL_CALL", "OUTPUT", "END",
        ]  # fmt: skip
        result = next(r.event["result"] for r in engine.store.read(uid) if "result" in r.event)
        # the executor ran in this (the caller's) process, after TOOL_CALL was journaled
        assert result["output"] == {"last_kind": "EVENT_TOOL_CALL", "pid": os.getpid()}
        call = next(r.event["tool"] for r in engine.store.read(uid) if "tool" in r.event)
        assert call["mediation"] == "MEDIATION_CONTROLLER_MEDIATED"
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0, report.divergence
        assert effects.read_text() == "hello\n"


def test_an_approval_call_from_a_warm_harness_is_refused_as_in_process(
    tmp_path: Path, home: Path
) -> None:
    """A memory harness's turn cannot park (it is continued by replay, which a memory
    harness is not): the host's sink refuses the gated call before recording it, and the
    refusal reaches the caller as itself, across the wire."""
    tools, effects = _tools(tmp_path, home, "approval")
    model = _script(tmp_path, NOTE, "noted")
    with open_local(home) as engine:
        with pytest.raises(ApprovalUnavailableError):
            engine.run(None, ["note hello"], harness="warm-chat", model=model, tools=tools)
        (session,) = engine.list().sessions
        kinds = _kinds(engine, session.uid)
    assert "TOOL_CALL" not in kinds and "APPROVAL_REQUEST" not in kinds
    assert kinds[-1] == "ERROR" and not effects.exists()


def test_start_tools_and_descriptor_schemas_round_trip_on_the_wire() -> None:
    from dataclasses import replace

    from counting_harness import DESCRIPTOR, start

    from agentsessions.controller.spi import ToolSpec
    from agentsessions.runtimes import warm_wire as wire

    schema = {"type": "object", "properties": {"line": {"type": "string"}}}
    tools = (
        ToolSpec("note", "Note a line", "MEDIATION_REQUIRES_APPROVAL", schema),
        ToolSpec("peek"),
    )
    begun = replace(start("go"), tools=tools)
    frame = json.loads(json.dumps(wire.start_to_wire(begun)))
    assert wire.start_from_wire(frame, begun.history) == begun
    old = {k: v for k, v in frame.items() if k != "tools"}  # a caller from before tools
    assert wire.start_from_wire(old, begun.history).tools == ()
    described = replace(DESCRIPTOR, tools=tools)
    assert wire.descriptor_from_wire(wire.descriptor_to_wire(described)) == described
