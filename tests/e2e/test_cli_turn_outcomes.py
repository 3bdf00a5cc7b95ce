"""Failures charged to the right party (issue 7.3): replay of a memory harness, refused
input that must leave nothing behind, and the life of a failed turn.

Real subprocesses; the failing model is the offline scripted model with an answer file
that is empty (every call fails) until the test writes an answer into it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from clirun import Run, clean_env

if TYPE_CHECKING:
    from clirun import Cli


def exec_json(cli: Cli, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = cli.fast("exec", *args, "--json").ok().json()
    return result


def kinds(cli: Cli, uid: str) -> list[str]:
    records = cli.fast("log", uid, "--json").ok().json_lines()
    return [str(r["event"]["kind"]).removeprefix("EVENT_") for r in records]


def sessions(cli: Cli) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = cli.fast("list", "--json").ok().json()["sessions"]
    return found


def raw_run(cli: Cli, *args: str | bytes, stdin: bytes = b"") -> Run:
    """Run with byte arguments and byte stdin (what a shell can hand over)."""
    proc = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(cli.home), *args],
        cwd=cli.cwd,
        env=clean_env(),
        input=stdin,
        capture_output=True,
        timeout=120,
    )
    return Run([os.fsdecode(a) for a in args], proc.returncode, "", proc.stderr.decode())


# --- 2. replay of a memory harness ----------------------------------------------------------


@pytest.fixture
def warm_home(cli: Cli) -> Any:
    from agentsessions.runtimes.warm_launch import shutdown_all

    yield cli
    shutdown_all(cli.home)


def test_replay_of_the_counter_runs_its_turns_in_order_on_one_instance(warm_home: Cli) -> None:
    cli = warm_home
    uid = exec_json(cli, "--harness", "counter", "--input", "one")["uid"]
    assert exec_json(cli, uid, "--input", "two")["outputs"] == ["count:2"]
    assert exec_json(cli, uid, "--input", "three")["outputs"] == ["count:3"]
    result = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert result["identical"] is True, result["divergence"]
    assert (result["executions"], result["replayed"], result["model_calls"]) == (3, 3, 0)
    assert result["outputs"] == ["count:1", "count:2", "count:3"]


def test_replay_of_a_forked_counter_covers_the_parents_executions(warm_home: Cli) -> None:
    cli = warm_home
    uid = exec_json(cli, "--harness", "counter", "--input", "one")["uid"]
    exec_json(cli, uid, "--input", "two")
    child = cli.fast("fork", uid).ok().out.strip()
    assert exec_json(cli, child, "--input", "three")["outputs"] == ["count:3"]
    result = cli.fast("replay", child, "--rerun", "--json").ok().json()
    assert result["identical"] is True, result["divergence"]
    assert result["outputs"] == ["count:1", "count:2", "count:3"]


def test_rerun_from_a_later_seq_is_refused(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    cli.fast("replay", uid, "--rerun", "--from", "3").fails(2)


# --- 3. a refused input leaves nothing -------------------------------------------------------


def test_oversized_stdin_is_refused_before_a_session_exists(cli: Cli) -> None:
    run = raw_run(cli, "exec", stdin=b"a" * (5 << 20))
    run.fails(7)
    assert "do not fit in one commit" in run.err
    assert sessions(cli) == []


def test_non_utf8_stdin_says_so_and_creates_nothing(cli: Cli) -> None:
    run = raw_run(cli, "exec", stdin=b"ab\xffcd\n")
    run.fails(2)
    assert run.err.startswith("agentsessions: error: stdin is not UTF-8: byte 0xff at offset 2")
    assert sessions(cli) == []


@pytest.mark.parametrize("flag", ["--input", "--config"])
def test_a_non_utf8_flag_value_says_so_and_creates_nothing(cli: Cli, flag: str) -> None:
    args: list[str | bytes] = ["exec", flag, b"a\xff"]
    if flag == "--config":
        args += ["--input", "x"]
    run = raw_run(cli, *args)
    run.fails(2)
    assert f"{flag} is not UTF-8 text" in run.err
    assert sessions(cli) == []


def test_an_oversized_input_to_an_existing_session_writes_nothing(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    raw_run(cli, "exec", uid, stdin=b"a" * (5 << 20)).fails(7)
    assert kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]


def test_the_library_checks_a_new_sessions_inputs_before_creating_it(tmp_path: Path) -> None:
    from agentsessions.errors import CommitTooLargeError
    from agentsessions.journal.stores.file.store import FileStore
    from agentsessions.sessions.wiring import build_controller
    from agentsessions.v1 import construct

    store = FileStore(tmp_path)
    ctl = build_controller(store, tmp_path, runtime="local")
    big = [dict(construct.text_message("user", "a" * (5 << 20)))]
    with pytest.raises(CommitTooLargeError):
        ctl.exec(None, big)
    assert list(store.uids()) == []


# --- 4. a failed turn -------------------------------------------------------------------------


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    """The scripted model's answer file, empty: every model call fails until it is filled."""
    path = tmp_path / "answers.json"
    path.write_text("[]", encoding="utf-8")
    return path


def failed_turn(cli: Cli, answers: Path) -> str:
    """A chat session whose first turn failed in its model call (ERROR recorded, exit 14)."""
    model = f"scripted:file={answers}"
    cli.fast("exec", "--harness", "chat", "--model", model, "--input", "hi", "--json").fails(14)
    uid = str(sessions(cli)[0]["uid"])
    assert kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR"]
    assert cli.fast("get", uid, "--json").ok().json()["exec_state"] == "EXEC_FAILED"
    return uid


def test_a_failed_turn_resumed_ends_with_end_after_its_error(cli: Cli, answers: Path) -> None:
    uid = failed_turn(cli, answers)
    answers.write_text(json.dumps(["hello there"]), encoding="utf-8")
    run = cli.fast("resume", uid).ok()
    assert run.out.startswith("hello there\n")
    assert "completed the failed turn" in run.out
    assert kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "OUTPUT", "END"]
    cli.fast("verify", uid).ok()
    replayed = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert replayed["identical"] is True and replayed["model_calls"] == 0
    assert replayed["outputs"] == ["hello there"]
    assert "nothing to resume" in cli.fast("resume", uid).ok().out


def test_a_resumed_turn_that_fails_again_appends_one_error(cli: Cli, answers: Path) -> None:
    uid = failed_turn(cli, answers)
    cli.fast("resume", uid, "--json").fails(14)
    assert kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "ERROR"]
    cli.fast("verify", uid).ok()


def test_exec_with_input_after_a_failed_turn_starts_a_new_one(cli: Cli, answers: Path) -> None:
    uid = failed_turn(cli, answers)
    answers.write_text(json.dumps(["next answer"]), encoding="utf-8")
    result = exec_json(cli, uid, "--input", "again")
    assert result["resumed"] is False and result["outputs"] == ["next answer"]
    assert kinds(cli, uid)[4:] == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]
    assert "nothing to resume" in cli.fast("resume", uid).ok().out  # the failed one is audit
    replayed = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert replayed["identical"] is True and replayed["replayed"] == 1


def test_an_inputless_exec_after_a_failed_turn_retries_it(cli: Cli, answers: Path) -> None:
    uid = failed_turn(cli, answers)
    answers.write_text(json.dumps(["retried"]), encoding="utf-8")
    result = exec_json(cli, uid)
    assert result["resumed"] is True and result["outputs"] == ["retried"]
    assert kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "OUTPUT", "END"]
