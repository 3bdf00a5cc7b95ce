"""The workload (``--tools FILE``): strict validation, recorded with the session, used by turns."""

from __future__ import annotations

from pathlib import Path

import pytest
from needs import need

import agentsessions
from agentsessions.errors import WorkloadError
from agentsessions.sessions.wiring import HARNESSES
from agentsessions.tools.configschema import ConfigKey, ConfigSchema
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
    report = again.rerun(session.uid)
    assert report.identical


def test_a_bad_workload_on_exec_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[tools.a]\nmediation = "sometimes"\n')
    engine = agentsessions.open(tmp_path / "home", runtime="local")
    with pytest.raises(WorkloadError):
        engine.run(None, ["go"], harness="tool-line", tools=bad)
    assert not engine.list().sessions


def _one(executor: str, config: str) -> str:
    return f'[tools.t]\nmediation = "mediated"\nexecutor = "{executor}"\nconfig = {config}\n'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (_one("append_line", '{ pth = "/tmp/x" }'), "config.pth: unknown key for executor"),
        (_one("append_line", "{}"), "config.path: executor 'append_line' needs it"),
        (_one("append_line", "{ path = 7 }"), "config.path: must be a string; got 7"),
        (_one("notes", "{ path = 'x' }"), "config.path: unknown key for executor 'notes'"),
        (_one("unix:///run/t.sock", "{ timeout = 'soon' }"), "config.timeout: must be a positive"),
        (_one("unix:///run/t.sock", "{ timeout = 0 }"), "config.timeout: must be a positive"),
        (_one("unix:///run/t.sock", "{ max_response_bytes = 1.5 }"), "config.max_response_bytes"),
        (_one("unix:///run/t.sock", "{ tool = true }"), "config.tool: must be a string"),
    ],
)
def test_a_config_its_executor_does_not_take_is_refused_naming_file_tool_and_key(
    text: str, where: str
) -> None:
    with pytest.raises(WorkloadError) as info:
        parse_workload(text, "w.toml")
    message = str(info.value)
    assert message.startswith("workload w.toml: [tools.t] ") and where in message
    assert info.value.exit_code == 2 and info.value.fields["key"].startswith("config.")


def test_a_config_its_executor_takes_is_accepted() -> None:
    parse_workload(_one("append_line", '{ path = "/tmp/x" }'))
    # a unix server gets the whole config: keys of its own pass, its executor's are typed
    parse_workload(_one("unix:///run/t.sock", '{ timeout = 2.5, tool = "x", region = "eu" }'))
    # a python function's config is its own unless it declares a schema
    parse_workload(_one("python:tests.unresolved:cut_append", "{ anything = [1, 2] }"))


def test_mcp_config_keys_are_declared_and_typed() -> None:
    need("mcp", "mcp")
    parse_workload(_one("mcp:true", '{ tool = "x", startup_timeout = 5, timeout = 1.5 }'))
    with pytest.raises(WorkloadError, match=r"config.timout: unknown key .*startup_timeout"):
        parse_workload(_one("mcp:true", "{ timout = 5 }"))
    with pytest.raises(WorkloadError, match=r"config\.startup_timeout: must be a positive number"):
        parse_workload(_one("mcp:true", "{ startup_timeout = -1 }"))


def test_a_python_function_may_declare_its_config_schema() -> None:
    text = _one("python:tests.unit.test_workload:strict_tool", '{ lang = "en" }')
    parse_workload(text)
    with pytest.raises(WorkloadError, match=r"\[tools.t\] config.lnag: unknown key"):
        parse_workload(_one("python:tests.unit.test_workload:strict_tool", '{ lnag = "en" }'))


def strict_tool(request: object) -> str:
    """A python: executor that declares the config it reads."""
    return "ok"


strict_tool.config_schema = ConfigSchema({"lang": ConfigKey("string")})  # type: ignore[attr-defined]
