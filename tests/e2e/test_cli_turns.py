"""The controller's commands as a user drives them: exec, replay, resume, fork, suspend.

Every run is the command line with ``--home`` under ``tmp_path``: in-process where the process
is not the point, a subprocess where it is (stdin, a lock another process holds, warm hosts
across processes); the models are the built-in echo model and the offline scripted model
with a seed, so every answer is deterministic and nothing touches the network.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from clirun import Run, clean_env

from agentsessions.journal.stores.file.store import FileStore

if TYPE_CHECKING:
    from clirun import Cli

UID = re.compile(r"sess-[0-9a-f]{24}")
CHAT = ("--harness", "chat", "--model", "scripted:seed=7")
COMMANDS = ["exec", "replay", "resume", "fork", "suspend"]


def with_stdin(cli: Cli, text: str, *args: str) -> Run:
    """Run the CLI in a subprocess with ``text`` on its stdin."""
    proc = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(cli.home), *args],
        cwd=cli.cwd,
        env=clean_env(),
        input=text,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    return Run(args, proc.returncode, proc.stdout, proc.stderr)


def exec_json(cli: Cli, *args: str) -> dict[str, Any]:
    """``exec ... --json`` (stdin closed), parsed."""
    result: dict[str, Any] = cli.fast("exec", "--json", *args).ok().json()
    return result


def chain(cli: Cli, uid: str) -> list[dict[str, Any]]:
    """The session's records as LogRecord JSON (``log --json``)."""
    return cli.fast("log", uid, "--json").ok().json_lines()


def kinds(cli: Cli, uid: str) -> list[str]:
    return [r["event"]["kind"].removeprefix("EVENT_") for r in chain(cli, uid)]


def info(cli: Cli, uid: str) -> dict[str, Any]:
    result: dict[str, Any] = cli.fast("get", uid, "--json").ok().json()
    return result


@pytest.mark.parametrize("command", COMMANDS)
def test_every_turn_command_explains_itself_and_takes_json(cli: Cli, command: str) -> None:
    out = cli.fast(command, "--help").ok().out
    assert "--json" in out and "Example" in out


# --- exec ----------------------------------------------------------------------------------


def test_exec_creates_a_session_and_prints_only_the_answer_on_stdout(cli: Cli) -> None:
    run = cli.fast("exec", "--input", "hello").ok()
    assert run.out == "echo:hello\n"
    first = run.err.splitlines()[0]
    assert first.startswith("session ")
    uid = UID.search(first)
    assert uid is not None
    for kind in ("EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"):
        assert kind in run.err
    meta = info(cli, uid.group())
    assert (meta["harness"], meta["model"], meta["exec_state"]) == (
        "echo",
        "echo",
        "EXEC_COMPLETED",
    )


def test_a_second_exec_continues_the_same_session(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "hello")["uid"]
    second = cli.fast("exec", uid, "--input", "again").ok()
    assert second.out == "echo:again\n"
    assert kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"] * 2


def test_exec_reads_the_input_from_stdin(cli: Cli) -> None:
    run = with_stdin(cli, "from stdin\n", "exec").ok()
    assert run.out == "echo:from stdin\n"


def test_exec_json_is_the_turn_result(cli: Cli) -> None:
    result = exec_json(cli, "--input", "a", "--input", "b", "--project", "acme", "--name", "n")
    assert result["created"] is True and result["resumed"] is False
    assert result["outputs"] == ["echo:b"]  # echo answers the turn's last input
    assert (result["first_seq"], result["last_seq"], result["model_calls"]) == (1, 6, 1)
    meta = info(cli, result["uid"])
    assert (meta["project"], meta["name"]) == ("acme", "n")


def test_exec_with_chat_streams_the_scripted_answer_deterministically(cli: Cli) -> None:
    first = cli.fast("exec", *CHAT, "--input", "hi", "--config", '{"system_prompt": "Be brief."}')
    again = cli.fast("exec", *CHAT, "--input", "hi", "--config", '{"system_prompt": "Be brief."}')
    assert first.ok().out == again.ok().out
    assert first.out.startswith("scripted-7-")


def test_exec_config_from_a_file_is_recorded_verbatim(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "chat.json"
    config.write_bytes(b'{"system_prompt":  "spaces kept"}')
    uid = exec_json(cli, *CHAT, "--input", "hi", "--config", f"@{config}")["uid"]
    start = chain(cli, uid)[0]["event"]["execution_start"]
    assert start["config"] == "eyJzeXN0ZW1fcHJvbXB0IjogICJzcGFjZXMga2VwdCJ9"  # the file's bytes


@pytest.mark.parametrize(
    "args",
    [
        ("exec",),  # a new session needs an input
        ("exec", "--input", "x", "--harness", "no-such-harness"),
        ("exec", "--input", "x", "--model", "scripted:nope=1"),
        ("exec", "--input", "x", "--config", "@/no/such/file"),
    ],
)
def test_exec_refuses_bad_requests_before_creating_anything(cli: Cli, args: tuple[str]) -> None:
    cli.fast(*args).fails(2)
    assert cli.fast("list", "--json").ok().json()["sessions"] == []


def test_exec_model_applies_to_one_turn_and_is_recorded(cli: Cli) -> None:
    uid = exec_json(cli, *CHAT, "--input", "hi")["uid"]
    cli.fast("exec", uid, "--input", "x", "--name", "renamed").fails(2)
    assert len(chain(cli, uid)) == 5
    cli.fast("exec", uid, "--input", "x", "--model", "scripted:seed=8").ok()
    calls = [r["event"]["model"]["model"] for r in chain(cli, uid) if "model" in r["event"]]
    assert calls[-1] == "scripted:seed=8" and calls[0] != calls[-1]
    assert cli.fast("replay", uid, "--rerun").ok()


# --- replay --------------------------------------------------------------------------------


def test_replay_streams_the_stored_records(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "hello")["uid"]
    out = cli.fast("replay", uid).ok().out.splitlines()
    assert [line.split()[:2] for line in out] == [
        ["1", "EXECUTION_START"],
        ["2", "INPUT"],
        ["3", "MODEL_CALL"],
        ["4", "OUTPUT"],
        ["5", "END"],
    ]
    assert "echo:hello" in out[3]
    lines = cli.fast("replay", uid, "--from", "4", "--json").ok().json_lines()
    assert [r["seq"] for r in lines] == ["4", "5"]


def test_replay_rerun_calls_no_model_and_is_identical(cli: Cli) -> None:
    uid = exec_json(cli, *CHAT, "--input", "one")["uid"]
    exec_json(cli, uid, "--input", "two")
    run = cli.fast("replay", uid, "--rerun").ok()
    assert "model_calls 0" in run.out and "identical   yes" in run.out
    result = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert (result["executions"], result["replayed"]) == (2, 2)
    assert result["model_calls"] == 0 and result["identical"] is True


def test_replay_rerun_of_the_imported_go_journal_with_the_echo_harness(cli: Cli) -> None:
    uid = cli.import_fixture()
    cli.fast("replay", uid, "--rerun").fails(2)  # the Go journal names no harness
    result = cli.fast("replay", uid, "--rerun", "--harness", "echo", "--json").ok().json()
    assert result["model_calls"] == 0 and result["identical"] is True
    assert result["replayed"] == result["executions"] == 1


def test_replay_rerun_with_another_harness_exits_16(cli: Cli) -> None:
    uid = exec_json(cli, *CHAT, "--input", "one")["uid"]
    cli.fast("replay", uid, "--rerun", "--harness", "echo").fails(16)


# --- resume --------------------------------------------------------------------------------


def test_resume_with_nothing_to_do_says_so(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "hello")["uid"]
    assert "nothing to resume" in cli.fast("resume", uid).ok().out
    result = cli.fast("resume", uid, "--json").ok().json()
    assert result["turn"] is None and result["compute_resumed"] is False
    assert result["last_seq"] == 5


def interrupt(home: Path, uid: str, text: str) -> int:
    """Journal a turn cut off after its MODEL_CALL, as a killed ``exec`` leaves it."""
    from agentsessions.controller.inputhash import model_input_hash
    from agentsessions.controller.spi import ModelRequest
    from agentsessions.v1 import construct

    message = dict(construct.text_message("user", text))
    request = ModelRequest(model="echo", messages=(message,), params=None)
    exec_id = "0123456789abcdef"
    events = [
        construct.execution_start(
            input_count=1, harness="echo", harness_version="1", execution_id=exec_id
        ),
        construct.input_event(construct.text_message("user", text), execution_id=exec_id),
        construct.model_call_event(
            "echo", input_hash=model_input_hash(request), call_id="c1", execution_id=exec_id
        ),
    ]
    store = FileStore(home)
    try:
        with store.writer(uid) as writer:
            return writer.append(events).last_seq
    finally:
        store.close()


def test_resume_completes_an_interrupted_turn_once(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "hello")["uid"]
    call_seq = interrupt(cli.home, uid, "cut off")
    assert info(cli, uid)["exec_state"] == "EXEC_RUNNING"
    cli.fast("exec", uid, "--input", "new").fails(17)  # new input must wait for resume
    run = cli.fast("resume", uid).ok()
    assert "echo:cut off" in run.out and "completed the interrupted turn" in run.out
    records = chain(cli, uid)
    assert [r["event"]["kind"] for r in records[call_seq:]] == ["EVENT_OUTPUT", "EVENT_END"]
    assert kinds(cli, uid).count("MODEL_CALL") == 2  # the recorded call was not repeated
    assert "nothing to resume" in cli.fast("resume", uid).ok().out


def test_an_inputless_exec_continues_an_interrupted_turn(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "hello")["uid"]
    interrupt(cli.home, uid, "cut off")
    result = exec_json(cli, uid)
    assert result["resumed"] is True and result["outputs"] == ["echo:cut off"]
    assert result["model_calls"] == 1
    assert info(cli, uid)["exec_state"] == "EXEC_COMPLETED"


# --- fork ----------------------------------------------------------------------------------


def test_fork_prints_each_child_whose_log_shares_the_parents_prefix(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    exec_json(cli, uid, "--input", "two")
    out = cli.fast("fork", uid, "--at", "5", "--count", "2", "--name", "a", "--name", "b")
    children = out.ok().out.split()
    assert len(children) == 2 and all(UID.fullmatch(c) for c in children)
    prefix = [(r["seq"], r.get("prev_hash", ""), r["content_hash"]) for r in chain(cli, uid)[:5]]
    for child, name in zip(children, ("a", "b"), strict=True):
        records = chain(cli, child)
        assert [(r["seq"], r.get("prev_hash", ""), r["content_hash"]) for r in records[:5]] == (
            prefix
        )
        marker = records[5]["event"]["lifecycle"]
        assert marker["kind"] == "LIFECYCLE_FORK" and marker["detail"] == "parent@5"
        meta = info(cli, child)
        assert (meta["name"], meta["parent_uid"], meta["harness"]) == (name, uid, "echo")
    assert cli.fast("exec", children[0], "--input", "three").ok().out == "echo:three\n"


def test_fork_json_lists_the_children(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    children = cli.fast("fork", uid, "--label", "try=x", "--json").ok().json()
    assert len(children) == 1 and children[0]["labels"] == {"try": "x"}
    assert children[0]["fork_seq"] == 5


@pytest.mark.parametrize(
    "args",
    [
        ("--count", "0"),
        ("--count", "129"),
        ("--count", "2", "--name", "only-one"),
        ("--at", "6"),
        ("--label", "no-equals"),
    ],
)
def test_fork_refuses_bad_input_and_creates_nothing(cli: Cli, args: tuple[str, ...]) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    cli.fast("fork", uid, *args).fails(2)
    assert [s["uid"] for s in cli.fast("list", "--json").ok().json()["sessions"]] == [uid]


# --- suspend -------------------------------------------------------------------------------


def test_suspend_then_exec_brings_the_compute_back(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    out = cli.fast("suspend", uid).ok().out
    assert out == f"session {uid} suspended compute=COMPUTE_COLD last_seq=6\n"
    assert info(cli, uid)["compute_state"] == "COMPUTE_COLD"
    run = cli.fast("exec", uid, "--input", "two").ok()
    assert run.out == "echo:two\n" and "resuming its compute" in run.err
    assert info(cli, uid)["compute_state"] == "COMPUTE_LIVE"


def test_resume_brings_back_a_suspended_session(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    assert cli.fast("suspend", uid, "--json").ok().json()["compute_state"] == "COMPUTE_COLD"
    result = cli.fast("resume", uid, "--json").ok().json()
    assert result["compute_resumed"] is True and result["turn"] is None
    assert result["compute_state"] == "COMPUTE_LIVE"


# --- a harness whose state is its memory --------------------------------------------------


def test_a_memory_harness_is_refused_on_local_before_anything_is_written(cli: Cli) -> None:
    run = cli.fast("exec", "--harness", "counter", "--runtime", "local", "--input", "a").fails(15)
    assert "--runtime warm" in run.err
    assert cli.fast("list", "--json").ok().json()["sessions"] == []


@pytest.mark.parametrize("warm", [("--runtime", "warm"), ()], ids=["warm", "auto-default"])
def test_the_counter_keeps_counting_across_processes_and_suspend_on_warm(
    cli: Cli, warm: tuple[str, ...]
) -> None:
    from agentsessions.runtimes.warm_launch import shutdown_all

    env = {"AGENTSESSIONS_WARM_IDLE_SECONDS": "120"}
    try:
        first = cli.run("exec", "--harness", "counter", *warm, "--input", "a", env=env).ok()
        uid = first.err.split()[1]
        assert first.out == "count:1\n"
        assert cli.run("exec", uid, *warm, "--input", "b", env=env).ok().out == "count:2\n"
        cli.run("suspend", uid, *warm, env=env).ok()
        assert cli.run("exec", uid, *warm, "--input", "c", env=env).ok().out == "count:3\n"
    finally:
        shutdown_all(cli.home)


# --- one writer at a time -------------------------------------------------------------------


def test_exec_on_a_busy_session_fails_fast_naming_the_holder(cli: Cli) -> None:
    uid = exec_json(cli, "--input", "one")["uid"]
    store = FileStore(cli.home)
    try:
        with store.writer(uid):
            busy = cli.run("exec", uid, "--input", "two").fails(6)
            assert "busy" in busy.err and f"pid {os.getpid()}" in busy.err
            cli.run("exec", uid, "--input", "two", "--wait", "0.5").fails(6)
            error = cli.run("exec", uid, "--input", "two", "--json").fails(6).json()
            assert error["error"] == "busy" and error["session"] == uid
    finally:
        store.close()
    assert cli.fast("exec", uid, "--input", "two").ok().out == "echo:two\n"
