"""``resolve`` as a user drives it: an unresolved call shown by ``get``, refused input, the
answer kept and the turn continued, and every bad input refused with nothing changed.

In-process (typer's CliRunner), because the tests-only ``tool-line`` harness is registered
in this process. Exit codes: 19 the outcome is unknown, 22 not unresolved, 2 bad usage.
"""

from __future__ import annotations

import json
from pathlib import Path

from clirun import Cli
from conftest import snapshot

from agentsessions.journal.stores.file.store import FileStore
from tests.unresolved import cut_session


def _unresolved(cli: Cli, tmp_path: Path) -> tuple[str, Path]:
    effects = tmp_path / "effects.txt"
    uid = cut_session(cli.home, effects)
    run = cli.fast("resume", uid).fails(19)  # the resume that finds the outcome unknown
    assert "tool call c1 (append, key 'k-c1')" in run.err and "unresolved" in run.err
    assert f"hint: check the tool's effect by hand, then: agentsessions resolve {uid} " in run.err
    return uid, effects


def test_get_shows_the_unresolved_call_and_new_input_names_resolve(
    cli: Cli, tmp_path: Path
) -> None:
    uid, effects = _unresolved(cli, tmp_path)
    got = cli.fast("get", uid, "--json").ok().json()
    assert got["exec_state"] == "EXEC_RUNNING"
    assert got["unresolved_call"] == {
        "execution_id": got["unresolved_call"]["execution_id"],
        "tool_call_id": "c1",
        "tool": "append",
        "idempotency_key": "k-c1",
        "call_seq": 3,
    }
    shown = cli.fast("get", uid).ok().out
    assert "unresolved" in shown and "tool call c1 (append, key k-c1, seq 3" in shown
    before = snapshot(cli.home)
    run = cli.fast("exec", uid, "--input", "more").fails(19)
    assert f"agentsessions resolve {uid} --call c1" in run.err
    assert snapshot(cli.home) == before  # refused before anything was opened
    last = FileStore(cli.home).get(uid).last_seq
    cli.fast("resume", uid).fails(19)  # refuses again; the journal is as it was
    assert FileStore(cli.home).get(uid).last_seq == last
    assert effects.read_text() == "the line\n"


def test_resolve_result_keeps_the_answer_and_continues_the_turn(cli: Cli, tmp_path: Path) -> None:
    uid, effects = _unresolved(cli, tmp_path)
    run = cli.fast("resolve", uid, "--call", "c1", "--result", '{"bytes": 9}', "--actor", "ops")
    run.ok()
    assert "call c1 (append) resolved with a result; resuming the turn" in run.err
    assert 'c1: ok {"bytes": 9}' in run.out
    got = cli.fast("get", uid, "--json").ok().json()
    assert "unresolved_call" not in got and got["exec_state"] == "EXEC_COMPLETED"
    assert effects.read_text() == "the line\n"  # never run again
    store = FileStore(cli.home)
    results = [r.event["result"] for r in store.read(uid) if r.event["kind"] == "EVENT_TOOL_RESULT"]
    assert len(results) == 1 and results[0]["output"] == {"bytes": 9}
    cli.fast("verify", uid).ok()
    again = cli.fast("resolve", uid, "--call", "c1", "--failed", "x").fails(22)
    assert "is not unresolved" in again.err


def test_resolve_failed_json_gives_the_model_an_error_result(cli: Cli, tmp_path: Path) -> None:
    uid, _ = _unresolved(cli, tmp_path)
    args = ("resolve", uid, "--call", "c1", "--failed", "disk full", "--actor", "ops", "--json")
    doc = cli.fast(*args).ok().json()
    assert doc["tool_call_id"] == "c1" and doc["result"]["is_error"] is True
    assert doc["result"]["error"] == "disk full (resolved by ops)"
    assert doc["result"]["code"] == "EXECUTOR_ERROR"
    assert doc["turn"]["outputs"] == ["c1: error disk full (resolved by ops)"]


def test_bad_resolve_input_is_refused_and_changes_nothing(cli: Cli, tmp_path: Path) -> None:
    uid, _ = _unresolved(cli, tmp_path)
    before = snapshot(cli.home)
    bad = {
        2: [
            ("--call", "c1"),  # neither
            ("--call", "c1", "--result", "{}", "--failed", "x"),  # both
            ("--call", "c1", "--result", "[1, 2]"),  # not an object
            ("--call", "c1", "--result", "{nope"),  # not JSON
            ("--call", "c1", "--failed", " "),  # no reason
            (
                "--result",
                "{}",
            ),  # no call id
        ],
        22: [("--call", "c9", "--result", "{}")],  # not the unresolved call
    }
    for code, cases in bad.items():
        for case in cases:
            cli.fast("resolve", uid, *case).fails(code)
    assert snapshot(cli.home) == before
    other = cli.create()  # a session with nothing unresolved
    run = cli.fast("resolve", other, "--call", "c1", "--result", "{}").fails(22)
    assert "has no unresolved tool call" in run.err
    cli.fast("resolve", "sess-000000000000000000000000", "--call", "c1", "--failed", "x").fails(3)
    assert json.loads(cli.fast("get", uid, "--json").ok().out)["unresolved_call"]["tool_call_id"]
