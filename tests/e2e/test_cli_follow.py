"""``agentsessions follow`` as a user drives it: log's lines, then each new commit, until
--idle-exit, Ctrl-C (130, quietly) or a reader that hangs up (0, quietly)."""

from __future__ import annotations

import signal
import subprocess
import sys

from clirun import Cli, clean_env


def _session(cli: Cli) -> str:
    run = cli.fast("exec", "--input", "hi", "--json").ok()
    return str(run.json()["session"]["uid"]) if "session" in run.json() else str(run.json()["uid"])


def test_follow_prints_the_records_then_exits_when_idle(cli: Cli) -> None:
    uid = _session(cli)
    out = cli.fast("follow", uid, "--idle-exit", "0.2").ok().out.splitlines()
    assert [line.split()[0] for line in out] == ["1", "2", "3", "4", "5"]
    assert out[4].split()[1] == "END" and "COMPLETED" in out[4]
    as_json = cli.fast("follow", uid, "--from", "3", "--json", "--idle-exit", "0").ok().out
    assert as_json == cli.fast("log", uid, "--from", "3", "--json").ok().out


def test_follow_sees_another_process_commit_and_ctrl_c_exits_130(cli: Cli) -> None:
    uid = _session(cli)
    argv = [sys.executable, "-m", "agentsessions", "--home", str(cli.home), "follow", uid]
    proc = subprocess.Popen(
        [*argv, "--from", "6"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
        preexec_fn=_as_in_a_terminal,
    )  # fmt: skip
    with proc:
        try:
            assert proc.stdout is not None
            cli.run("exec", uid, "--input", "again").ok()
            lines = [proc.stdout.readline().decode() for _ in range(5)]
            assert [line.split()[0] for line in lines] == ["6", "7", "8", "9", "10"]
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 130
    assert err == b""


def _as_in_a_terminal() -> None:
    """Ctrl-C reaches a foreground command: a test run from a background job (``pytest &``)
    hands its children SIGINT ignored, and Python then keeps it ignored, as Unix asks."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_follow_ends_quietly_when_the_reader_hangs_up(cli: Cli) -> None:
    uid = _session(cli)
    argv = [sys.executable, "-m", "agentsessions", "--home", str(cli.home), "follow", uid]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    assert proc.stdout is not None
    assert proc.stdout.readline().split()[0] == b"1"
    proc.stdout.close()  # the reader hangs up; the next record's write fails with EPIPE
    cli.fast("exec", uid, "--input", "again").ok()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr is not None
    with proc.stderr:
        assert proc.stderr.read() == b""


def test_follow_of_an_unknown_session_is_one_error_line(cli: Cli) -> None:
    cli.fast("follow", "sess-0123456789abcdef01234567").fails(3)


def test_follow_notices_a_reader_that_hangs_up_while_no_record_comes(cli: Cli) -> None:
    """``follow S | head -1``: the reader goes while follow waits, and nothing is committed
    after it; follow exits 0 on its own (no write would ever tell it)."""
    uid = _session(cli)
    argv = [sys.executable, "-m", "agentsessions", "--home", str(cli.home), "follow", uid]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().split()[0] == b"1"
    for _ in range(4):  # every record there is: follow is idle from here on
        proc.stdout.readline()
    proc.stdout.close()  # the reader hangs up, and no record comes after it
    try:
        code = proc.wait(timeout=60)  # a hang guard: follow must end without a record
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("follow kept waiting after its reader hung up") from None
    assert code == 0
    with proc.stderr:
        assert proc.stderr.read() == b""
