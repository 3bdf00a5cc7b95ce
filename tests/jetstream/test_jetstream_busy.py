"""A session busy on one host, asked for by another, through the CLI: as the file store's
lock, a live host's running turn refuses the other's ``exec`` (exit 6) and completes; a
writer held idle between turns is taken over, and its host's next turn takes it back; read
commands (``get``, ``log``, ``verify``, ``follow``) neither probe nor take anything.

Host A is a child process (``busy_turn.py``) whose model holds its turn open until the test
says go; host B is the CLI. One durable server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsessions.journal.stores.jetstream import live
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.store import new_uid
from agentsessions.sessions.storeurl import STORE_ENV

ROOT = Path(__file__).resolve().parents[2]
BOUND = 120.0  # the bound on one child's answer (not a timing)
MODEL = "scripted:seed=7"
END = b"end of the test"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != STORE_ENV}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI on host B, which knows host A's ``gate`` model (busy_turn.py ``cli``): a
    turn is resumed on the model it started on."""
    script = str(Path(__file__).with_name("busy_turn.py"))
    return subprocess.run(
        [sys.executable, script, "cli", "--home", str(home), "--store", url, *args],
        env=_env(), capture_output=True, text=True, timeout=BOUND,
    )  # fmt: skip


class _Host:
    """Host A: a child running gated turns (see busy_turn.py)."""

    def __init__(self, url: str, home: Path, uid: str) -> None:
        script = str(Path(__file__).with_name("busy_turn.py"))
        self.proc = subprocess.Popen(
            [sys.executable, script, url, str(home), uid],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_env(), text=True,
        )  # fmt: skip

    def say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def hear(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.say("quit")
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # a turn still waiting for "go" reads the end instead
            try:
                self.proc.wait(timeout=BOUND)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def session(nats_server: Any, tmp_path: Path) -> Iterator[tuple[str, str, _Host]]:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"B{token}", prefix=f"b{token}")
    made = _cli(tmp_path / "b", url, "exec", "--harness", "chat", "--model", MODEL,
                "--input", "hi", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    uid = json.loads(made.stdout)["uid"]
    host = _Host(url, tmp_path / "a", uid)
    try:
        yield url, uid, host
    finally:
        host.stop()


def _fences(url: str, uid: str) -> list[int]:
    store = JetStreamStore(JetStreamOptions.parse(url))
    try:
        return [r.fence for r in store.read(uid)]
    finally:
        store.close()


def test_exec_on_another_host_while_a_turn_runs_is_busy_and_the_turn_completes(
    session: tuple[str, str, _Host], tmp_path: Path
) -> None:
    url, uid, host = session
    host.say("turn")
    assert host.hear() == "running"  # A's turn is between its first commit and its END
    before = _fences(url, uid)
    busy = _cli(tmp_path / "b", url, "exec", uid, "--model", MODEL, "--input", "from b")
    assert busy.returncode == 6, busy.stderr
    first = busy.stderr.splitlines()[0]
    assert first.startswith(f"agentsessions: error: session {uid} is busy: a turn is running "
                            "on another host (pid "), busy.stderr  # fmt: skip
    assert f"agentsessions cancel {uid}" in busy.stderr  # the hint says how to stop it
    assert _fences(url, uid) == before  # nothing written, no fence
    # exec --wait asks again until A's turn is over; A then holds its writer idle between
    # turns, which B's exec takes over ...
    argv = [
        sys.executable,
        "-m",
        "agentsessions",
        "--home",
        str(tmp_path / "b"),
        "--store",
        url,
        "exec",
        uid,
        "--model",
        MODEL,
        "--input",
        "from b",
        "--json",
        "--wait",
        "120",
    ]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=_env()) as waiting:  # fmt: skip
        host.say("go")
        assert host.hear() == "done EXEC_COMPLETED 10"  # not fenced (exit 5)
        out, err = waiting.communicate(timeout=BOUND)
    assert waiting.returncode == 0, err
    assert json.loads(out)["last_seq"] == 15
    # ... and A's next turn opens a new writer (B's exited: nobody answers) and completes
    host.say("turn")
    assert host.hear() == "running"
    host.say("go")
    assert host.hear() == "done EXEC_COMPLETED 20"
    fences = _fences(url, uid)
    assert fences == sorted(fences) and len(set(fences)) == 4  # four writers, in order
    verified = _cli(tmp_path / "b", url, "verify", uid)
    assert verified.returncode == 0 and "20 records verified" in verified.stdout, verified


def test_a_host_stopped_mid_turn_is_taken_over_and_fenced_when_it_resumes(
    session: tuple[str, str, _Host], tmp_path: Path
) -> None:
    """A stalled host must not block the session forever: its probe goes unanswered, the
    other host takes over after the probe's timeout, and the stalled turn is fenced."""
    url, uid, host = session
    host.say("turn")
    assert host.hear() == "running"
    os.kill(host.proc.pid, signal.SIGSTOP)  # GC, VM pause, partition: connected but silent
    try:
        took = _cli(tmp_path / "b", url, "resume", uid)  # finishes A's turn
        assert took.returncode == 0, took.stderr
    finally:
        os.kill(host.proc.pid, signal.SIGCONT)
    host.say("go")
    assert host.hear() == "error 5"  # A's next commit: FencedError, nothing written
    got = json.loads(_cli(tmp_path / "b", url, "get", uid, "--json").stdout)
    assert (got["exec_state"], got["last_seq"]) == ("EXEC_COMPLETED", 10)
    assert _cli(tmp_path / "b", url, "verify", uid).returncode == 0


def test_read_commands_from_another_host_never_probe_or_take(
    session: tuple[str, str, _Host], tmp_path: Path
) -> None:
    url, uid, host = session
    host.say("turn")
    assert host.hear() == "running"
    store = JetStreamStore(JetStreamOptions.parse(url))
    try:
        probes: list[bytes] = []
        ended = threading.Event()
        nc = store._client._nc
        assert nc is not None

        async def sniff() -> Any:  # hears every probe on the stream's live subjects, in order
            async def heard(msg: Any) -> None:
                probes.append(msg.data)
                if msg.data == END:
                    ended.set()

            sub = await nc.subscribe(live.owner_subject(store._opts.stream, "*"), cb=heard)
            await nc.flush()
            return sub

        store._client._call(sniff)
        before = _fences(url, uid)
        home = tmp_path / "b"
        for args in (("get", uid), ("log", uid), ("verify", uid),
                     ("follow", uid, "--idle-exit", "0.1")):  # fmt: skip
            done = _cli(home, url, *args)
            assert done.returncode == 0, (args, done.stderr)
        assert json.loads(_cli(home, url, "get", uid, "--json").stdout)["exec_state"] == (
            "EXEC_RUNNING"
        )
        # a last request of the test's own: every probe sent before it reaches the sniffer
        # first (one subscription's messages are handled in order)
        subject = live.owner_subject(store._opts.stream, uid)
        reply = store._client._call(lambda: nc.request(subject, END, timeout=BOUND))
        assert json.loads(reply.data)["state"] == live.BUSY  # A answers: its turn runs
        assert ended.wait(BOUND)
        assert probes == [END]  # the read commands sent none
        assert _fences(url, uid) == before
    finally:
        store.close()
    host.say("go")
    assert host.hear() == "done EXEC_COMPLETED 10"
