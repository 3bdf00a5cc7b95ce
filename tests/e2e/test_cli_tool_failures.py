"""A session's tools misconfigured, as a user meets it on the command line.

- A tool server that does not start (``mcp:nosuchcmd``): the turn that needed it ends with
  its ERROR journaled (exit 12, the server's one line), so it is failed, not RUNNING: new
  input is taken, and ``resume`` retries it and fails the same way with one more ERROR.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import Cli


def _script(tmp_path: Path, *entries: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(entries)), encoding="utf-8")
    return f"scripted:file={path}"


def _kinds(cli: Cli, uid: str) -> list[str]:
    return [str(r["event"]["kind"]) for r in cli.run("log", uid, "--json").ok().json_lines()]


def test_a_tool_server_that_does_not_start_fails_the_turn_and_blocks_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    tools = tmp_path / "tools.toml"
    tools.write_text('[tools.look]\nmediation = "mediated"\nexecutor = "mcp:nosuchcmd"\n')
    model = _script(tmp_path, {"tool_calls": [{"name": "look", "arguments": {}}]}, "done")
    run = cli.run("exec", "--harness", "chat", "--model", model, "--tools", str(tools),
                  "--input", "look around")  # fmt: skip
    uid = run.err.split()[1]
    run.err = run.err[run.err.index("agentsessions: error: ") :]  # after the record lines
    run.fails(12)
    assert "did not start" in run.err
    assert _kinds(cli, uid)[-1] == "EVENT_ERROR"
    assert cli.run("get", uid, "--json").ok().json()["exec_state"] == "EXEC_FAILED"
    # resume retries the failed turn: the server still does not start, one more ERROR
    again = cli.run("resume", uid)
    again.err = again.err[again.err.index("agentsessions: error: ") :]
    again.fails(12)
    assert _kinds(cli, uid)[-2:] == ["EVENT_ERROR", "EVENT_ERROR"]
    # new input is a new turn; the failed one stays as audit
    cli.run("exec", uid, "--input", "just talk", "--model", "scripted:seed=1").ok()
    assert _kinds(cli, uid)[-1] == "EVENT_END"
    cli.run("verify", uid).ok()
