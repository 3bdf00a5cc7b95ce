"""A session's tools misconfigured, as a user meets it on the command line.

- A tool server that does not start (``mcp:nosuchcmd``): the turn that needed it ends with
  its ERROR journaled (exit 12, the server's one line), so it is failed, not RUNNING: new
  input is taken, and ``resume`` retries it and fails the same way with one more ERROR.
- A typo inside a tool's ``config`` (``pth`` for ``path``): refused when the workload loads
  (exit 2, naming the file, the tool and the key), before any session or record exists.
"""

from __future__ import annotations

import json
from pathlib import Path

from clirun import Cli
from needs import need


def _script(tmp_path: Path, *entries: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(entries)), encoding="utf-8")
    return f"scripted:file={path}"


def _kinds(cli: Cli, uid: str) -> list[str]:
    return [str(r["event"]["kind"]) for r in cli.fast("log", uid, "--json").ok().json_lines()]


def test_a_tool_server_that_does_not_start_fails_the_turn_and_blocks_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    need("mcp", "mcp")
    tools = tmp_path / "tools.toml"
    tools.write_text('[tools.look]\nmediation = "mediated"\nexecutor = "mcp:nosuchcmd"\n')
    model = _script(tmp_path, {"tool_calls": [{"name": "look", "arguments": {}}]}, "done")
    run = cli.fast("exec", "--harness", "chat", "--model", model, "--tools", str(tools),
                   "--input", "look around")  # fmt: skip
    uid = run.err.split()[1]
    run.err = run.err[run.err.index("agentsessions: error: ") :]  # after the record lines
    run.fails(12)
    assert "did not start" in run.err
    assert f"hint: fix the tool server, then: agentsessions resume {uid}" in run.err
    assert _kinds(cli, uid)[-1] == "EVENT_ERROR"
    assert cli.fast("get", uid, "--json").ok().json()["exec_state"] == "EXEC_FAILED"
    # resume retries the failed turn: the server still does not start, one more ERROR
    again = cli.fast("resume", uid)
    again.err = again.err[again.err.index("agentsessions: error: ") :]
    again.fails(12)
    assert _kinds(cli, uid)[-2:] == ["EVENT_ERROR", "EVENT_ERROR"]
    # new input is a new turn; the failed one stays as audit
    cli.fast("exec", uid, "--input", "just talk", "--model", "scripted:seed=1").ok()
    assert _kinds(cli, uid)[-1] == "EVENT_END"
    cli.fast("verify", uid).ok()


def test_a_typo_in_a_tool_config_is_refused_when_the_workload_loads(
    cli: Cli, tmp_path: Path
) -> None:
    tools = tmp_path / "tools.toml"
    tools.write_text(
        '[tools.append_line]\nmediation = "mediated"\nexecutor = "append_line"\n'
        f"config = {{ pth = {json.dumps(str(tmp_path / 'notes.txt'))} }}\n"
    )
    model = _script(tmp_path, {"tool_calls": [{"name": "append_line", "arguments": {}}]}, "Noted.")
    run = cli.fast("exec", "--harness", "chat", "--model", model, "--tools", str(tools),
                   "--input", "note: buy milk").fails(2)  # fmt: skip
    assert f"workload {tools}: [tools.append_line] config.pth: unknown key" in run.err
    assert "(known: path)" in run.err
    assert cli.fast("list", "--json").ok().json()["sessions"] == []  # nothing was written
