"""``exec`` on a turn that parks, ``approve`` and ``deny`` as a user drives them.

In-process (typer's CliRunner), because the tests-only ``tool-line`` harness is registered
in this process. The exit codes are the documented ones: 20 parked, 21 an approval refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from clirun import Cli
from conftest import snapshot

from agentsessions.sessions.wiring import HARNESSES
from tests.tool_harness import ToolLineHarness

HARNESSES.register("tool-line", ToolLineHarness)
CALL = {
    "id": "c1",
    "tool": "append",
    "key": "k1",
    "args": {"line": "hello"},
    "mediation": "MEDIATION_REQUIRES_APPROVAL",
}


def _parked(cli: Cli, tmp_path: Path) -> tuple[str, Path]:
    effects = tmp_path / "effects.txt"
    workload = tmp_path / "w.toml"
    workload.write_text(
        '[tools.append]\nmediation = "approval"\nexecutor = "append_line"\n'
        f'config = {{ path = "{effects}" }}\n'
    )
    uid = cli.create("--harness", "tool-line", "--tools", str(workload))
    config = json.dumps({"calls": [CALL]})
    run = cli.fast("exec", uid, "--input", "go", "--config", config)
    assert run.code == 20, run.err
    assert "tool append, call c1, execution " in run.err and "request seq 4" in run.err
    assert f"approve: agentsessions approve {uid}" in run.err
    assert f"deny:    agentsessions deny {uid}" in run.err
    assert not effects.exists()
    return uid, effects


def test_exec_that_parks_says_what_it_awaits_and_exits_20(cli: Cli, tmp_path: Path) -> None:
    uid, _ = _parked(cli, tmp_path)
    got = cli.fast("get", uid, "--json").ok().json()
    assert got["exec_state"] == "EXEC_AWAITING"
    assert got["pending_approval"]["tool_call_id"] == "c1"
    assert got["pending_approval"]["request_seq"] == 4
    assert "awaiting" in cli.fast("get", uid).ok().out
    parked = cli.fast("resume", uid, "--json")  # no decision yet: parks again
    assert parked.code == 20 and parked.json()["request_seq"] == 4


def test_approve_commits_and_resumes_in_one_step(cli: Cli, tmp_path: Path) -> None:
    uid, effects = _parked(cli, tmp_path)
    run = cli.fast("approve", uid, "--reason", "fine", "--actor", "alice").ok()
    assert "call c1 approved: decision at seq 5; resuming the turn" in run.err
    assert "resumed and completed" in run.err and "c1: ok" in run.out
    assert effects.read_text() == "hello\n"
    log = cli.fast("log", uid, "--json").ok().json_lines()
    decision = log[4]["event"]
    assert decision["actor"] == {"principal": "alice"}
    assert decision["approval_result"]["reason"] == "fine"
    # the same decision again: the recorded one, nothing to resume, nothing run
    again = cli.fast("approve", uid, "--reason", "fine", "--actor", "alice", "--json").ok()
    assert again.json()["existing"] is True and again.json()["turn"] is None
    assert effects.read_text() == "hello\n"
    rerun = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert rerun["identical"] and rerun["model_calls"] == 0
    assert effects.read_text() == "hello\n"


def test_deny_resumes_with_the_denial(cli: Cli, tmp_path: Path) -> None:
    uid, effects = _parked(cli, tmp_path)
    run = cli.fast("deny", uid, "--reason", "no", "--json").ok()
    out = run.json()
    assert out["approved"] is False and out["request_seq"] == 4
    assert out["turn"]["outputs"] == ["c1: error Tool execution denied by approval decision."]
    assert not effects.exists()


def test_bad_approvals_are_one_error_line_exit_21_and_change_nothing(
    cli: Cli, home: Path, tmp_path: Path
) -> None:
    uid, _ = _parked(cli, tmp_path)
    before = snapshot(home)
    cli.fast("approve", uid, "--request-seq", "3").fails(21)
    cli.fast("approve", uid, "--call", "c9").fails(21)
    cli.fast("deny", uid, "--execution", "0123456789abcdef").fails(21)
    cli.fast("exec", uid, "--input", "more").fails(21)
    assert snapshot(home) == before
    (child,) = cli.fast("fork", uid, "--json").ok().json()
    after_fork = snapshot(home)
    cli.fast("approve", child["uid"]).fails(21)
    assert snapshot(home) == after_fork
    cli.fast("approve", uid, "--actor", "alice").ok()
    cli.fast("deny", uid, "--actor", "alice").fails(21)  # decided differently
    done = cli.create()
    cli.fast("approve", done).fails(21)  # nothing pending


def test_a_resume_that_fails_after_the_decision_says_so(cli: Cli, tmp_path: Path) -> None:
    uid, _ = _parked(cli, tmp_path)
    (tmp_path / "w.toml").unlink()  # the workload is recorded: break the recorded one instead
    session_dir = next(cli.home.rglob(uid))
    # the turn runs with the workload it recorded (WORKLOAD.<digest>): break that one too; a
    # kept workload whose bytes no longer have its digest is damage (exit 8), not used
    for kept in session_dir.glob("WORKLOAD*"):
        kept.write_text(
            '[tools.other]\nmediation = "approval"\nexecutor = "append_line"\n'
            'config = { path = "/nonexistent/x" }\n'
        )
    run = cli.fast("approve", uid)
    assert run.code == 8, run.err
    # both copies are damaged: whichever is read first says so (the current one, since a
    # damaged WORKLOAD is refused too)
    assert any(why in run.err for why in ("the kept workload does not have the digest it is "
               "named by", "the session's workload matches none of its kept copies"))  # fmt: skip
    assert "the decision was committed (seq 5), but the resume failed" in run.err
    assert f"agentsessions resume {uid}" in run.err
