"""Ctrl-C on a running turn, as a user presses it: a real ``exec`` process, a real SIGINT.

The first SIGINT cancels the turn at its next effect boundary (the same durable request as
``agentsessions cancel``), says so on stderr at once, and the process exits 130 once END
CANCELED is journaled; a second SIGINT exits 130 at once and leaves the turn open for
``cancel``/``resume``. The same holds over ``--server``, where the turn runs in the daemon.

Nothing waits on a clock: a test signals once the exec process has shown what it is doing
(its streamed text, its record lines, its interrupt line); ``WAIT`` only turns a hang into a
failure.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from clirun import Cli, clean_env
from needs import need

WAIT = 120  # a hang guard, not an assertion
CANCELING = "agentsessions: interrupt: canceling the turn at its next effect boundary"


def _script(tmp_path: Path, words: int) -> str:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps([" ".join(f"w{i}" for i in range(words))]), encoding="utf-8")
    return f"scripted:file={path}"


def _start(prefix: Sequence[str], model: str, cwd: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "agentsessions", *prefix, "exec", "--harness", "chat",
            "--model", model, "--input", "take your time"]  # fmt: skip
    return subprocess.Popen(
        argv, cwd=cwd, env=clean_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _lines_until(proc: subprocess.Popen[str], marker: str) -> Iterator[str]:
    """stderr's lines up to and including the first that contains ``marker``."""
    assert proc.stderr is not None
    for line in proc.stderr:
        yield line
        if marker in line:
            return
    raise AssertionError(f"exec ended before printing {marker!r}")


def _uid(lines: Sequence[str]) -> str:
    found = re.findall(r"sess-[0-9a-f]{24}", "".join(lines))
    assert found, lines
    return found[0]


def _log(prefix: Sequence[str], uid: str, cwd: Path) -> list[dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "agentsessions", *prefix, "log", uid, "--json"],
        cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=WAIT, check=True,
    )  # fmt: skip
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _interrupt_once(prefix: Sequence[str], tmp_path: Path) -> None:
    """One Ctrl-C while the model streams: canceled at the next delta, exit 130."""
    proc = _start(prefix, f"{_script(tmp_path, 40)},delay=60", tmp_path)
    seen = list(_lines_until(proc, "session "))
    uid = _uid(seen)
    assert proc.stdout is not None and proc.stdout.read(1)  # the model call streams now
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 130, err
    assert CANCELING in err
    assert "Traceback" not in err
    assert err.rstrip().splitlines()[-1].startswith("agentsessions: interrupted: the turn was")
    log = _log(prefix, uid, tmp_path)
    events = [record["event"] for record in log]
    assert events[-1]["end"] == {"state": "CANCELED"}  # type: ignore[index]
    assert "reason USER" in str(events[-2]["lifecycle"])  # type: ignore[index]
    # the session takes new input again
    again = subprocess.run(
        [sys.executable, "-m", "agentsessions", *prefix, "exec", uid, "--input", "hi",
         "--model", "scripted:seed=1"],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr


def _interrupt_twice(prefix: Sequence[str], tmp_path: Path, *, close: bool) -> None:
    """Two Ctrl-Cs before the turn reaches a boundary: exit 130 at once, the turn open
    (``close``: then ``cancel`` closes it; a turn live in a daemon would take 120 s)."""
    # two pieces over 240 s: the first delta, the turn's next boundary, is 120 s away
    proc = _start(prefix, f"{_script(tmp_path, 2)},delay=240", tmp_path)
    seen = list(_lines_until(proc, "INPUT"))  # the turn is open, its model call starting
    uid = _uid(seen)
    proc.send_signal(signal.SIGINT)
    seen += list(_lines_until(proc, CANCELING))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 130, err
    assert f"agentsessions cancel {uid} closes it now" in err
    events = [record["event"] for record in _log(prefix, uid, tmp_path)]
    assert all(event["kind"] != "EVENT_END" for event in events)  # left open
    if not close:
        return
    closed = subprocess.run(
        [sys.executable, "-m", "agentsessions", *prefix, "cancel", uid, "--wait", "200"],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=WAIT * 2,
    )  # fmt: skip
    assert closed.returncode == 0, closed.stderr
    events = [record["event"] for record in _log(prefix, uid, tmp_path)]
    assert events[-1]["end"] == {"state": "CANCELED"}  # type: ignore[index]


def test_ctrl_c_cancels_a_local_turn_and_exits_130_once_canceled(cli: Cli, tmp_path: Path) -> None:
    _interrupt_once(["--home", str(cli.home)], tmp_path)


def test_a_second_ctrl_c_exits_at_once_and_leaves_the_turn_for_cancel(
    cli: Cli, tmp_path: Path
) -> None:
    _interrupt_twice(["--home", str(cli.home)], tmp_path, close=True)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[list[str]]:
    need("grpc", "grpc")
    from test_serve import served

    (tmp_path / "served").mkdir()
    with served(tmp_path / "served") as daemon:
        yield ["--server", daemon.address]


def test_ctrl_c_over_server_cancels_the_turn_in_the_daemon(
    server: list[str], tmp_path: Path
) -> None:
    _interrupt_once(server, tmp_path)


def test_a_second_ctrl_c_over_server_exits_at_once(server: list[str], tmp_path: Path) -> None:
    _interrupt_twice(server, tmp_path, close=False)


def test_ctrl_c_cancels_a_resumed_turn(cli: Cli, tmp_path: Path) -> None:
    """``resume`` of a turn a killed exec cut off: Ctrl-C cancels it as it does exec's."""
    prefix = ["--home", str(cli.home)]
    first = _start(prefix, f"{_script(tmp_path, 40)},delay=60", tmp_path)
    uid = _uid(list(_lines_until(first, "session ")))
    assert first.stdout is not None and first.stdout.read(1)  # in flight
    first.kill()  # a crash: the turn is left open
    first.communicate(timeout=WAIT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentsessions", *prefix, "resume", uid],
        cwd=tmp_path, env=clean_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.read(1)  # the model call streams again
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 130, err
    assert CANCELING in err and "Traceback" not in err
    events = [record["event"] for record in _log(prefix, uid, tmp_path)]
    assert events[-1]["end"] == {"state": "CANCELED"}  # type: ignore[index]
