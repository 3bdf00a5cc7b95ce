"""The workload (``--tools FILE``): strict validation, recorded with the session, used by turns."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsessions
from agentsessions.errors import WorkloadError
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools.workload import load_workload, parse_workload
from tests.tool_harness import ToolLineHarness, line_call, plan

HARNESSES.register("tool-line", ToolLineHarness)


def _workload(tmp_path: Path, effects: Path, name: str = "w.toml") -> Path:
    path = tmp_path / name
    path.write_text(
        '[tools.append]\nmediation = "mediated"\nexecutor = "append_line"\n'
        'description = "Append a line"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f'config = {{ path = "{effects}" }}\n'
    )
    return path


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("tools = [", "not valid TOML"),
        ("[other]\nx = 1\n", "other: unknown table"),
        ('[tools.a]\nmediation = "sometimes"\nexecutor = "append_line"\n', "[tools.a] mediation"),
        ('[tools.a]\nmediation = "mediated"\nexecutor = "nope"\n', "[tools.a] executor"),
        ('[tools.a]\nmediation = "mediated"\n', "[tools.a] executor: a mediated tool needs"),
        (
            '[tools.a]\nmediation = "mediated"\nexecutor = "append_line"\ncolour = 1\n',
            "[tools.a] colour",
        ),
        (
            '[tools.a]\nmediation = "mediated"\nexecutor = "append_line"\nconfig = 3\n',
            "[tools.a] config",
        ),
    ],
)
def test_a_bad_workload_is_one_clear_error_naming_the_place(text: str, where: str) -> None:
    with pytest.raises(WorkloadError) as info:
        parse_workload(text, "w.toml")
    assert info.value.exit_code == 2 and "w.toml" in str(info.value) and where in str(info.value)


def test_definitions_are_what_a_harness_offers_the_model(tmp_path: Path) -> None:
    workload = load_workload(_workload(tmp_path, tmp_path / "e.txt"))
    (definition,) = workload.definitions()
    assert definition == {
        "name": "append",
        "description": "Append a line",
        "input_schema": {"type": "object", "properties": {"line": {"type": "string"}}},
    }


def test_the_workload_is_recorded_with_the_session_and_used_by_its_turns(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    session = engine.create(harness="tool-line", tools=_workload(tmp_path, effects))
    engine.run(session.uid, ["go"], config=plan(line_call("c1", "first")))
    # a later turn, on a fresh engine, uses the recorded tools
    again = agentsessions.open(tmp_path / "home", runtime="local")
    again.run(session.uid, ["more"], config=plan(line_call("c2", "second")))
    assert effects.read_text() == "first\nsecond\n"
    # a later --tools replaces them for new turns
    other = tmp_path / "other.txt"
    again.run(
        session.uid,
        ["moved"],
        config=plan(line_call("c3", "third")),
        tools=_workload(tmp_path, other, "w2.toml"),
    )
    assert other.read_text() == "third\n" and effects.read_text() == "first\nsecond\n"
    report = again.replay(session.uid, rerun=True)
    assert report.identical


def test_a_bad_workload_on_exec_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[tools.a]\nmediation = "sometimes"\n')
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    with pytest.raises(WorkloadError):
        engine.run(None, ["go"], harness="tool-line", tools=bad)
    assert not engine.list().sessions
