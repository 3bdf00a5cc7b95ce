"""Two ``agentsessions serve`` daemons on one three-node JetStream cluster (R3).

Each daemon has its own home and its own connection; they share only the cluster. A
session made through one is followed live through the OTHER (the Follow RPC), turns go
through either, and each daemon's writer held between turns is taken over by the other's
next turn (a fence) and taken back by its own next one: no turn fails, the follower sees
every record without restarting, and the chain verifies."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from needs import need

from agentsessions.journal.stores.store import new_uid
from agentsessions.sessions.storeurl import STORE_ENV

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0  # the bound on waiting for one line from a process (not a timing)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != STORE_ENV}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentsessions", *args],
        env=_env(), capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip


class _Lines:
    """A child's stdout lines, read on a thread, so waiting for one has a bound."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc, self._q = proc, queue.Queue[str]()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self._q.put(line)
        except (OSError, ValueError):
            pass  # closed under the reader as the child is stopped
        self._q.put("")

    def next(self) -> str:
        try:
            line = self._q.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError("no line from the child within the bound") from None
        assert line, f"the child ended: {self.proc.poll()}"
        return line


def _daemon(stack: ExitStack, home: Path, url: str) -> str:
    argv = [sys.executable, "-m", "agentsessions", "--home", str(home), "serve",
            "--listen", "127.0.0.1:0", "--no-auth", "--store", url]  # fmt: skip
    home.mkdir(parents=True)
    with open(home / "serve.log", "w") as log:  # the child keeps its own copy
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=_env())
    stack.callback(_stop, proc)
    first = _Lines(proc).next()
    assert first.startswith("listening on 127.0.0.1:"), first
    return first.split()[-1]


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def daemons(nats_cluster: Any, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    need("grpc", "grpc")
    token = new_uid()[5:17]
    url = nats_cluster.store_url(stream=f"TS{token}", prefix=f"ts{token}")
    with ExitStack() as stack:
        a = _daemon(stack, tmp_path / "a", url)
        b = _daemon(stack, tmp_path / "b", url)
        yield url, a, b


def _seqs(follower: _Lines, upto: int) -> list[int]:
    """The seqs the follower prints until it has printed ``upto``."""
    seen: list[int] = []
    while not seen or seen[-1] < upto:
        seen.append(int(json.loads(follower.next())["seq"]))
    return seen


def test_a_session_runs_and_is_followed_across_two_daemons(
    daemons: tuple[str, str, str],
) -> None:
    url, a, b = daemons
    made = _cli("--server", a, "exec", "--harness", "chat", "--model", "scripted:seed=7",
                "--input", "hi", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    uid = json.loads(made.stdout)["uid"]
    argv = [sys.executable, "-m", "agentsessions", "--server", b, "follow", uid, "--json"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=_env()) as proc:
        try:
            follower = _Lines(proc)
            assert _seqs(follower, 5) == [1, 2, 3, 4, 5]
            # a slow turn through a: its first records reach b's follower while it runs
            slow = subprocess.Popen(
                [sys.executable, "-m", "agentsessions", "--server", a, "exec", uid,
                 "--model", "scripted:seed=7,delay=4", "--input", "slowly"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
            )  # fmt: skip
            assert _seqs(follower, 7) == [6, 7]  # EXECUTION_START, INPUT
            assert slow.poll() is None  # the turn is still waiting on its model
            _out, err = slow.communicate(timeout=WAIT)
            assert slow.returncode == 0, err
            assert _seqs(follower, 10) == [8, 9, 10]
            # b takes the session over (its writer fences a's idle one) ...
            through_b = _cli("--server", b, "exec", uid, "--input", "through b", "--json")
            assert through_b.returncode == 0, through_b.stderr
            assert _seqs(follower, 15) == [11, 12, 13, 14, 15]
            # ... and a, fenced while idle, takes it back instead of failing (exit 5)
            again = _cli("--server", a, "exec", uid, "--input", "through a", "--json")
            assert again.returncode == 0, again.stderr
            assert _seqs(follower, 20) == [16, 17, 18, 19, 20]
        finally:
            proc.kill()
    verified = _cli("--store", url, "verify", uid)
    assert verified.returncode == 0 and "20 records verified" in verified.stdout, verified
    got = json.loads(_cli("--store", url, "get", uid, "--json").stdout)
    assert (got["last_seq"], got["exec_state"]) == (20, "EXEC_COMPLETED")
