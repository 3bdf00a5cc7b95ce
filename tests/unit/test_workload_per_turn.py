"""Each execution keeps the workload it ran with (issue 9 loose end 1).

A later ``--tools`` replaces a session's workload for new turns only: replay, resume and
approval of an older execution offer, and run, the tools its EXECUTION_START names (the
digest in its config envelope, ``agentsessions/v1/workloadref.py``), never the new ones.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agentsessions.controller import executions
from agentsessions.errors import ApprovalParkedError, InvalidArgumentError
from agentsessions.journal.tools.verify import verify_session
from agentsessions.sessions.local import LocalSessions, open_local
from agentsessions.v1 import compaction, workloadref


def _tools(tmp_path: Path, name: str, effects: Path, tier: str = "mediated") -> Path:
    """A workload whose append_line tool has a description of its own: the offered tool
    definitions (and so every model request's input hash) differ between two of them."""
    path = tmp_path / name
    path.write_text(
        "[tools.append_line]\n"
        f'mediation = "{tier}"\n'
        'executor = "append_line"\n'
        f'description = "Append a line ({name})"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    return path


def _script(tmp_path: Path, name: str, *entries: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(list(entries)))
    return f"scripted:file={path}"


def _append(line: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "append_line", "arguments": {"line": line}}]}


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _runs(engine: LocalSessions, uid: str) -> list[executions.Execution]:
    return executions.group((r.seq, r.event) for r in engine.store.read(uid))


def test_replay_after_a_later_tools_uses_each_turns_own_workload(tmp_path: Path) -> None:
    a_file, b_file = tmp_path / "a.txt", tmp_path / "b.txt"
    tools_a, tools_b = _tools(tmp_path, "a.toml", a_file), _tools(tmp_path, "b.toml", b_file)
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", tools=tools_a).uid
        engine.run(uid, ["one"], model=_script(tmp_path, "1.json", _append("first"), "ok"))
        engine.run(
            uid, ["two"], model=_script(tmp_path, "2.json", _append("second"), "ok"), tools=tools_b
        )
        assert _lines(a_file) == ["first"] and _lines(b_file) == ["second"]
        first, second = _runs(engine, uid)
        assert first.workload == workloadref.digest_of(tools_a.read_text())
        assert second.workload == workloadref.digest_of(tools_b.read_text())
        assert first.config == b""  # the harness's config, without the envelope

        report = engine.rerun(uid)
        assert report.identical, report.divergence
        assert report.model_calls == 0 and report.replayed == 2
        assert _lines(a_file) == ["first"] and _lines(b_file) == ["second"]
        assert verify_session(engine.store, uid).ok


def test_a_fork_child_replays_its_parents_turns_with_their_workloads(tmp_path: Path) -> None:
    """The child keeps no workload of its own: the digests its inherited turns name are
    found with the parent, whatever the parent's --tools became."""
    a_file, b_file = tmp_path / "a.txt", tmp_path / "b.txt"
    tools_a, tools_b = _tools(tmp_path, "a.toml", a_file), _tools(tmp_path, "b.toml", b_file)
    with open_local(tmp_path / "home") as engine:
        uid = engine.create(harness="chat", tools=tools_a).uid
        engine.run(uid, ["one"], model=_script(tmp_path, "1.json", _append("first"), "ok"))
        (child,) = engine.fork(uid)
        engine.run(
            uid, ["two"], model=_script(tmp_path, "2.json", _append("second"), "ok"), tools=tools_b
        )
        report = engine.rerun(child.uid)
        assert report.identical and report.replayed == 1, report.divergence
        assert report.model_calls == 0 and _lines(a_file) == ["first"]


def test_an_approval_parked_under_a_resumes_with_a_after_b_was_set(tmp_path: Path) -> None:
    a_file, b_file = tmp_path / "a.txt", tmp_path / "b.txt"
    tools_a = _tools(tmp_path, "a.toml", a_file, tier="approval")
    tools_b = _tools(tmp_path, "b.toml", b_file, tier="mediated")
    model = _script(tmp_path, "s.json", _append("gated"), "done")
    home = tmp_path / "home"
    with open_local(home) as engine:
        uid = engine.create(harness="chat", tools=tools_a, model=model).uid
        with pytest.raises(ApprovalParkedError):
            engine.run(uid, ["go"])
        # a later --tools, recorded while the turn waits (as exec --tools would record it)
        engine.store.set_workload(uid, tools_b.read_text())
    with open_local(home) as engine:  # a fresh process
        engine.approve(uid, approved=True, actor="tester")
        frames = list(engine.resume(uid))
        assert frames[-1].turn is not None and frames[-1].turn.outputs[-1] == "done"
        # A's executor ran (its file), and the call kept A's tier: B was never offered
        assert _lines(a_file) == ["gated"] and _lines(b_file) == []
        report = engine.rerun(uid)
        assert report.identical, report.divergence
        assert report.model_calls == 0


def test_a_cut_turn_under_a_is_re_driven_with_as_executor(tmp_path: Path) -> None:
    """A mediated call cut between its intent and its result (the process died in the
    executor) is re-driven by key on resume, by the executor of the turn's own workload."""
    a_file, b_file = tmp_path / "a.txt", tmp_path / "b.txt"

    def tools(name: str, effects: Path) -> Path:
        path = tmp_path / name
        path.write_text(
            "[tools.append_line]\n"
            'mediation = "mediated"\n'
            'executor = "python:tests.unit.test_workload_per_turn:dying_append"\n'
            f"config = {{ path = {json.dumps(str(effects))} }}\n"
        )
        return path

    tools_a, tools_b = tools("a.toml", a_file), tools("b.toml", b_file)
    model = _script(tmp_path, "s.json", _append("once"), "done")
    home = tmp_path / "home"
    Path(f"{a_file}.die").touch()  # A's executor dies once
    with open_local(home) as engine:
        uid = engine.create(harness="chat", tools=tools_a, model=model).uid
        with pytest.raises(KeyboardInterrupt):
            engine.run(uid, ["go"])
        engine.store.set_workload(uid, tools_b.read_text())
    with open_local(home) as engine:
        frames = list(engine.resume(uid))
        assert frames[-1].turn is not None and frames[-1].turn.outputs[-1] == "done"
    assert _lines(a_file) == ["once"] and _lines(b_file) == []


def dying_append(request: Any) -> dict[str, Any]:
    """A python executor that dedups by key: while ``<path>.die`` exists its call removes
    it and dies before any effect (as a killed process would); otherwise it appends
    ``line`` to ``config["path"]``."""
    path = Path(request.config["path"])
    flag = Path(f"{path}.die")
    if flag.exists():
        flag.unlink()
        raise KeyboardInterrupt
    with path.open("a") as f:
        f.write(f"{request.args['line']}\n")
    return {"path": str(path)}


dying_append.idempotent = True  # type: ignore[attr-defined]


def test_a_session_without_tools_records_its_config_unchanged(tmp_path: Path) -> None:
    config = json.dumps({"max_steps": 3}).encode()
    with open_local(tmp_path / "home") as engine:
        uid = engine.run(None, ["hi"], harness="chat", model="scripted", config=config).uid
        start = next(r.event for r in engine.store.read(uid))
        assert base64.b64decode(start["execution_start"]["config"]) == config


def test_a_compaction_under_a_workload_is_still_a_compaction(tmp_path: Path) -> None:
    recorded = workloadref.wrap(b'{"compact":{"keep_turns":2}}', "a" * 64)
    event = {
        "kind": "EVENT_EXECUTION_START",
        "execution_start": {"config": base64.b64encode(recorded).decode()},
    }
    assert compaction.is_compaction_start(event)
    assert workloadref.split(recorded) == (b'{"compact":{"keep_turns":2}}', "a" * 64)
    assert workloadref.split(b"\x00agentsessions.workload sha256:zz\n{}")[1] == ""


def test_a_config_in_the_envelopes_form_is_refused(tmp_path: Path) -> None:
    with open_local(tmp_path / "home") as engine:
        with pytest.raises(InvalidArgumentError, match="workload"):
            engine.run(None, ["hi"], harness="chat", config=workloadref.PREFIX + b"x")
        assert not engine.list().sessions
