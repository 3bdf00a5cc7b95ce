"""A closed or failing terminal never fails a command: rendering is off the failure path.

Real subprocesses with real pipes: "``| true``" is a pipe whose read end is closed before
the command writes (so every write gets EPIPE), ``/dev/full`` gives ENOSPC, and a shell
closes a descriptor with ``>&-`` / ``2>&-``. In every case the turn must be journaled to
its END; only the exit status and one stderr line tell what happened to the output.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from clirun import Run, clean_env

if TYPE_CHECKING:
    from clirun import Cli

FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")


def argv(cli: Cli, *args: str) -> list[str]:
    """The command line of ``agentsessions --home HOME ARGS``."""
    return [sys.executable, "-m", "agentsessions", "--home", str(cli.home), *args]


def into_closed_pipe(cli: Cli, *args: str) -> Run:
    """Run with stdout on a pipe nobody reads (``... | true``): every write is EPIPE."""
    proc = subprocess.Popen(
        argv(cli, *args),
        cwd=cli.cwd,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes anything
    err = proc.stderr.read().decode("utf-8")
    proc.stderr.close()
    return Run(args, proc.wait(timeout=120), "", err)


def in_shell(cli: Cli, *args: str, redirect: str) -> Run:
    """Run through ``sh -c`` with a redirection such as ``>/dev/full`` or ``2>&-``."""
    line = shlex.join(argv(cli, *args)) + " " + redirect
    proc = subprocess.run(
        ["sh", "-c", line],
        cwd=cli.cwd,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    out = proc.stdout.decode("utf-8", "replace")
    return Run(args, proc.returncode, out, proc.stderr.decode("utf-8", "replace"))


def only_session(cli: Cli) -> dict[str, object]:
    """The one session in the home, as ``list --json`` shows it."""
    sessions = cli.fast("list", "--json").ok().json()["sessions"]
    assert len(sessions) == 1, sessions
    session: dict[str, object] = sessions[0]
    return session


def assert_turn_journaled(cli: Cli) -> str:
    """The only session's turn ended with END (not ERROR) and its chain verifies."""
    session = only_session(cli)
    uid = str(session["uid"])
    assert session["exec_state"] == "EXEC_COMPLETED", session
    kinds = [r["event"]["kind"] for r in cli.fast("log", uid, "--json").ok().json_lines()]
    assert "EVENT_ERROR" not in kinds and kinds[-1] == "EVENT_END", kinds
    cli.fast("verify", uid).ok()
    return uid


def assert_quiet(err: str) -> None:
    """No error line, no traceback, no interpreter complaint at exit."""
    for noise in ("error", "Traceback", "Exception ignored", "Broken pipe", "Errno"):
        assert noise not in err, err


@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["text", "json"])
def test_exec_into_a_closed_pipe_completes_the_turn_and_exits_0(
    cli: Cli, json_flag: tuple[str, ...]
) -> None:
    run = into_closed_pipe(cli, "exec", "--input", "hello", *json_flag)
    assert run.code == 0, run.err
    assert_quiet(run.err)
    assert_turn_journaled(cli)


def test_a_streamed_chat_answer_into_a_closed_pipe_is_journaled(cli: Cli) -> None:
    chat = ("--harness", "chat", "--model", "scripted:seed=3")
    run = into_closed_pipe(cli, "exec", *chat, "--input", "x")
    assert run.code == 0, run.err
    assert_quiet(run.err)
    assert_turn_journaled(cli)


def test_exec_with_stderr_closed_completes_and_exits_0(cli: Cli) -> None:
    run = in_shell(cli, "exec", "--input", "hello", redirect="2>&-")
    assert run.code == 0
    assert run.out == "echo:hello\n"
    assert_turn_journaled(cli)


def test_exec_with_stdout_and_stderr_closed_still_journals_the_turn(cli: Cli) -> None:
    run = in_shell(cli, "exec", "--input", "hello", "--json", redirect=">&- 2>&-")
    assert run.code == 13  # the output was lost, which the status says; the turn was not
    assert_turn_journaled(cli)


@needs_dev_full
@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["text", "json"])
def test_exec_into_a_full_disk_says_so_in_one_line_and_exits_13(
    cli: Cli, json_flag: tuple[str, ...]
) -> None:
    run = in_shell(cli, "exec", "--input", "hello", *json_flag, redirect=">/dev/full")
    uid = assert_turn_journaled(cli)
    assert run.code == 13, run.err
    errors = [line for line in run.err.splitlines() if "error" in line]
    assert errors == [
        "agentsessions: error: cannot write the output: No space left on device; "
        "the turn completed and is journaled (seq 5)"
    ], run.err
    if not json_flag:
        assert uid in run.err  # the stream's diagnostics on stderr were not disturbed
    assert "Exception ignored" not in run.err and "Traceback" not in run.err


def test_exec_with_stdout_closed_reports_it_and_exits_13(cli: Cli) -> None:
    run = in_shell(cli, "exec", "--input", "hello", redirect=">&-")
    assert_turn_journaled(cli)
    assert run.code == 13
    assert (
        "agentsessions: error: cannot write the output: stdout is closed; the turn completed "
        "and is journaled (seq 5)"
    ) in run.err.splitlines()


@pytest.mark.parametrize(
    "command",
    [
        ("log", "{uid}"),
        ("log", "{uid}", "--json"),
        ("replay", "{uid}"),
        ("replay", "{uid}", "--rerun"),
        ("list",),
        ("list", "--json"),
        ("get", "{uid}"),
        ("verify", "{uid}"),
    ],
    ids=lambda c: "-".join(c).replace("{uid}", "S"),
)
def test_reading_commands_end_quietly_on_a_closed_pipe(cli: Cli, command: tuple[str, ...]) -> None:
    uid = cli.fast("exec", "--input", "hello", "--json").ok().json()["uid"]
    run = into_closed_pipe(cli, *(part.format(uid=uid) for part in command))
    assert run.code == 0, run.err
    assert_quiet(run.err)


@needs_dev_full
@pytest.mark.parametrize("command", [("log", "{uid}"), ("log", "{uid}", "--json"), ("list",)])
def test_reading_commands_into_a_full_disk_exit_13(cli: Cli, command: tuple[str, ...]) -> None:
    uid = cli.fast("exec", "--input", "hello", "--json").ok().json()["uid"]
    run = in_shell(cli, *(part.format(uid=uid) for part in command), redirect=">/dev/full")
    assert run.code == 13
    assert run.err == "agentsessions: error: cannot write the output: No space left on device\n"


def test_a_failing_command_keeps_its_own_exit_code_when_its_output_fails(cli: Cli) -> None:
    run = into_closed_pipe(cli, "get", "sess-0123456789abcdef01234567", "--json")
    assert run.code == 3  # not found, whatever happened to the JSON error object
    assert run.err.startswith("agentsessions: error: ")


@pytest.mark.parametrize("command", [("log",), ("log", "--json"), ("replay",)])
def test_a_long_listing_into_a_pipe_closed_mid_way_exits_0_without_noise(
    cli: Cli, command: tuple[str, ...]
) -> None:
    uid = cli.fast("exec", *[f"-i{n}" for n in range(2000)], "--json").ok().json()["uid"]
    proc = subprocess.Popen(
        argv(cli, command[0], uid, *command[1:]),
        cwd=cli.cwd,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()  # read one line, then hang up, as ``| head -1`` does
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8")
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0, err
    assert_quiet(err)


def test_export_to_a_pipe_writes_through_it_and_keeps_the_node(cli: Cli, tmp_path: Path) -> None:
    """A device or FIFO target is written in place: renaming over it would replace the node
    (``export -o /dev/stdout --force`` used to turn /dev/stdout into a regular file)."""
    import stat
    import threading

    uid = cli.fast("exec", "--input", "hello", "--json").ok().json()["uid"]
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    holder = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the FIFO's inode, whatever happens
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    try:
        run = cli.run("export", uid, "-o", str(fifo), "--no-compress", "--json")
    finally:
        # a writer that opens and closes ends the reader's wait even if the command never
        # opened the FIFO (it was renamed over, or the command failed first)
        os.close(os.open(f"/proc/self/fd/{holder}", os.O_WRONLY))
        reader.join()
        os.close(holder)
    assert run.code == 0, run.err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert received and b'"agentsessions_export"' in received[0]
    assert run.out == ""  # the summary went to stderr, not into the exported stream
    assert f'"uid": "{uid}"' in run.err


def test_export_to_stdout_ends_quietly_on_a_closed_pipe(cli: Cli) -> None:
    # /proc/self/fd/1 rather than /dev/stdout: even a regression cannot rename over it
    uid = cli.fast("exec", "--input", "hello", "--json").ok().json()["uid"]
    run = into_closed_pipe(cli, "export", uid, "-o", "/proc/self/fd/1", "--no-compress")
    assert run.code == 0, run.err
    assert_quiet(run.err)


def test_a_turn_that_fails_on_its_own_keeps_exit_14_into_a_closed_pipe(
    cli: Cli, tmp_path: Path
) -> None:
    answers = tmp_path / "none.json"
    answers.write_text("[]", encoding="utf-8")  # every model call fails
    model = f"scripted:file={answers}"
    run = into_closed_pipe(cli, "exec", "--harness", "chat", "--model", model, "-i", "x", "--json")
    assert run.code == 14
    assert run.err.startswith("agentsessions: error: model ")
    assert "Broken pipe" not in run.err and "Exception ignored" not in run.err
    assert only_session(cli)["exec_state"] == "EXEC_FAILED"
