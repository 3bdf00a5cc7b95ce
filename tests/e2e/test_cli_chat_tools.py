"""The scripted tool loop through the real command line (issue 9 item 3), one process per step.

A workload gives the session ``append_line`` (mediated, its file a temp file); the chat
harness with a ``scripted:file=`` script whose first answer calls the tool and whose second
answers text. The line is written exactly once, ``log`` shows TOOL_CALL and TOOL_RESULT,
``replay --rerun`` makes no model call and runs no tool, ``verify`` passes.
"""

from __future__ import annotations

import json
from pathlib import Path

from clirun import Cli


def _workload(tmp_path: Path) -> tuple[Path, Path]:
    effects = tmp_path / "notes.txt"
    toml = tmp_path / "tools.toml"
    toml.write_text(
        "[tools.append_line]\n"
        'mediation = "mediated"\n'
        'executor = "append_line"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    return toml, effects


def _script(tmp_path: Path, *entries: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(entries)))
    return f"scripted:file={path}"


def _append(line: str, text: str = "") -> dict[str, object]:
    return {"text": text, "tool_calls": [{"name": "append_line", "arguments": {"line": line}}]}


CALL = _append("buy milk", "Writing it down.")


def test_the_scripted_tool_loop_writes_once_and_replays_without_calls(
    cli: Cli, tmp_path: Path
) -> None:
    tools, effects = _workload(tmp_path)
    model = _script(tmp_path, CALL, "Done: buy milk is noted.")
    run = cli.run("exec", "--harness", "chat", "--model", model, "--tools", str(tools),
                  "--input", "note: buy milk", "--json").ok()  # fmt: skip
    uid = run.json()["uid"]
    assert effects.read_text() == "buy milk\n"

    log = cli.fast("log", uid).ok().out
    kinds = [line.split()[1] for line in log.splitlines()[1:]]
    assert kinds == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL",
                     "TOOL_RESULT", "MODEL_CALL", "OUTPUT", "END"]  # fmt: skip
    assert 'tool call append_line({"line":"buy milk"})' in log

    replay = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert replay["identical"] is True and replay["model_calls"] == 0
    assert effects.read_text() == "buy milk\n"  # no executor call either
    cli.fast("verify", uid).ok()

    # a second turn in a new process: its script's call id is call-0-0 again, its line
    # is written too (the key holds the execution id), and the history carries the first
    second = _script(tmp_path, _append("eggs"), "ok")
    cli.run("exec", uid, "--model", second, "--input", "and eggs").ok()
    assert effects.read_text() == "buy milk\neggs\n"
    assert cli.fast("replay", uid, "--rerun", "--json").ok().json()["model_calls"] == 0
    assert effects.read_text() == "buy milk\neggs\n"


def test_the_step_limit_fails_the_turn_with_exit_14(cli: Cli, tmp_path: Path) -> None:
    tools, effects = _workload(tmp_path)
    model = _script(tmp_path, CALL, CALL)
    run = cli.fast("exec", "--harness", "chat", "--model", model, "--tools", str(tools),
                   "--config", '{"max_steps": 1}', "--input", "loop")  # fmt: skip
    assert run.code == 14, run.err
    error, hint = run.err.splitlines()[-2:]  # after the records exec shows on stderr
    assert error.startswith("agentsessions: error: chat: the model still asks for tools")
    assert "after 1 model calls (max_steps)" in error
    assert hint.startswith("  hint: allow more with --config")
    assert not effects.exists()  # the call the last completion asked for never ran


def test_an_approval_gated_call_parks_then_approve_runs_it_once(cli: Cli, tmp_path: Path) -> None:
    """Issue 9's scripted end-to-end run: the chat harness with the scripted model calls
    append_line under approval, parks (exit 20), ``approve`` continues it in a new process
    (the script goes on where the turn left off), the line is written once, and
    ``replay --rerun`` makes no model call and runs no tool."""
    tools, effects = _workload(tmp_path)
    tools.write_text(tools.read_text().replace('"mediated"', '"approval"'))
    model = _script(tmp_path, CALL, "Done: buy milk is noted.")
    run = cli.fast("exec", "--harness", "chat", "--model", model, "--tools", str(tools),
                   "--input", "note: buy milk")  # fmt: skip
    assert run.code == 20, run.err
    assert not effects.exists()  # nothing runs before a person decides
    uid = cli.fast("list", "--json").ok().json()["sessions"][0]["uid"]
    assert cli.fast("get", uid, "--json").ok().json()["exec_state"] == "EXEC_AWAITING"

    cli.fast("approve", uid, "--reason", "fine", "--actor", "alice").ok()
    assert effects.read_text() == "buy milk\n"
    kinds = [line.split()[1] for line in cli.fast("log", uid).ok().out.splitlines()[1:]]
    assert kinds[-6:] == ["APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "MODEL_CALL",
                          "OUTPUT", "END"]  # fmt: skip
    replay = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert replay["identical"] is True and replay["model_calls"] == 0
    assert effects.read_text() == "buy milk\n"  # the executor did not run again
    cli.fast("verify", uid).ok()
