"""A tool with a store of its own through the real command line (issue 9 items 3 and 6).

The workload names ``chat`` as the conversation's component and ``notes`` as a tool
component; the chat harness with the scripted model calls ``notes`` in two turns (two
processes). The notes land once each in the tool's store, beside the conversation;
``store`` shows them with the host's author and time; ``replay --rerun`` makes no model call
and adds no note; ``verify`` walks the tool store too; bad input exits with one clear line.
"""

from __future__ import annotations

import json
from pathlib import Path

from clirun import Cli

WORKLOAD = """\
[session]
components = ["chat"]
tool_components = ["notes"]

[tools.notes]
mediation = "mediated"
executor = "notes"
description = "Keep notes between turns"
parameters = { type = "object", properties = { op = { type = "string" } } }
"""


def _script(tmp_path: Path, name: str, *entries: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(list(entries)))
    return f"scripted:file={path}"


def _notes(op: str, **args: str) -> dict[str, object]:
    return {"text": "", "tool_calls": [{"name": "notes", "arguments": {"op": op, **args}}]}


def test_notes_across_two_turns_are_kept_once_and_replayed_without_effects(
    cli: Cli, tmp_path: Path
) -> None:
    tools = tmp_path / "tools.toml"
    tools.write_text(WORKLOAD)
    first = _script(tmp_path, "s1.json", _notes("add", text="buy milk"), "Noted.")
    uid = cli.run("exec", "--harness", "chat", "--model", first, "--tools", str(tools),
                  "--input", "note: buy milk", "--json").ok().json()["uid"]  # fmt: skip
    second = _script(tmp_path, "s2.json", _notes("add", text="eggs"), _notes("list"), "Two.")
    cli.run("exec", uid, "--model", second, "--input", "and eggs").ok()

    entries = cli.run("store", uid, "notes", "--json").ok().json_lines()
    assert [(e["seq"], e["author"], e["data"]) for e in entries] == [
        (1, "notes", {"op": "add", "text": "buy milk"}),
        (2, "notes", {"op": "add", "text": "eggs"}),
    ]
    assert all(e["time_ns"] > 0 for e in entries)
    log = cli.fast("log", uid).ok().out
    assert 'tool result call-1-0: {"notes":["buy milk","eggs"]}' in log
    assert "buy milk" not in cli.fast("store", uid, "notes", "--from-seq", "2").ok().out

    table = cli.fast("store", uid, "notes").ok().out.splitlines()
    assert table[0].split() == ["seq", "author", "time", "data"]
    assert table[1].split()[:2] == ["1", "notes"] and '{"op":"add","text":"buy milk"}' in table[1]

    replay = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert replay["identical"] is True and replay["model_calls"] == 0
    assert len(cli.fast("store", uid, "notes", "--json").ok().json_lines()) == 2  # no new note

    verify = cli.fast("verify", uid).ok().out
    assert f"{uid} tool store notes: 2 records verified" in verify
    report = cli.fast("verify", uid, "--json").ok().json()
    assert [(c["component"], c["ok"], c["last_seq"]) for c in report["components"]] == [
        ("notes", True, 2)
    ]


def test_store_bad_input_exits_with_documented_codes(cli: Cli, tmp_path: Path) -> None:
    tools = tmp_path / "tools.toml"
    tools.write_text(WORKLOAD)
    uid = (
        cli.fast("create", "--harness", "chat", "--tools", str(tools), "--json").ok().json()["uid"]
    )
    assert cli.fast("store", uid, "notes").ok().out.startswith("no entries in tool store 'notes'")
    assert cli.fast("store", uid, "notes", "--json").ok().out == ""
    missing = cli.fast("store", uid, "append").fails(3)
    assert "has no tool store 'append' (its tool stores: notes)" in missing.err
    cli.fast("store", "sess-000000000000000000000000", "notes").fails(3)
    cli.fast("store", uid, "../notes").fails(2)
    cli.fast("store", "not-a-uid", "notes").fails(2)


def test_a_workload_naming_a_component_twice_is_refused_and_writes_nothing(
    cli: Cli, tmp_path: Path, home: Path
) -> None:
    tools = tmp_path / "tools.toml"
    tools.write_text(WORKLOAD.replace('components = ["chat"]', 'components = ["chat", "notes"]'))
    run = cli.fast("exec", "--harness", "chat", "--tools", str(tools), "--input", "hi").fails(2)
    assert "'notes' is named in both components and tool_components" in run.err
    left = cli.fast("create", "--tools", str(tools)).fails(2)
    assert "named in both" in left.err
    assert cli.fast("list", "--json").ok().json()["sessions"] == []
    tools.write_text(WORKLOAD.replace('tool_components = ["notes"]\n', ""))
    hint = cli.fast("create", "--tools", str(tools)).fails(2).err
    assert 'hint: add: [session] tool_components = ["notes"]' in hint


def test_a_harness_the_workload_keeps_out_is_refused_before_a_write(
    cli: Cli, tmp_path: Path
) -> None:
    tools = tmp_path / "tools.toml"
    tools.write_text(WORKLOAD)
    uid = (
        cli.fast("create", "--harness", "echo", "--tools", str(tools), "--json").ok().json()["uid"]
    )
    run = cli.fast("exec", uid, "--input", "hi").fails(2)
    assert "does not let harness 'echo' work in the conversation" in run.err
    assert cli.fast("get", uid, "--json").ok().json()["last_seq"] == 0
