"""``replay --rerun`` of sessions with canceled turns, driven as the README's tour does.

A session of several turns, one in the middle stopped by ``cancel`` while its model call
streamed (its MODEL_CALL recorded without an answer), then more turns: ``replay --rerun``
re-drives every execution, the canceled one to its cancel point, with 0 model calls, and
exits 0 identical. The same for a turn stopped by a request's deadline (the daemon cancels
it with reason TIMEOUT), and for a fork child whose inherited prefix holds the canceled turn.
Nothing is timed: a turn is known to be mid-call when its first streamed word arrived.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from clirun import Cli, clean_env
from needs import need

WAIT = 120  # a hang guard, not an assertion
TURN = ["EVENT_EXECUTION_START", "EVENT_INPUT"]
ABANDONED = [*TURN, "EVENT_MODEL_CALL", "EVENT_LIFECYCLE", "EVENT_END"]


def _slow(tmp_path: Path) -> str:
    essay = tmp_path / "essay.json"
    essay.write_text(json.dumps([" ".join(["word"] * 600)]))
    return f"scripted:file={essay},delay=60"  # 600 words streamed over 60 s


def _canceled_mid_call(cli: Cli, uid: str, model: str) -> None:
    """A slow turn, canceled once its first word streamed (its model call in flight)."""
    argv = [sys.executable, "-m", "agentsessions", "--home", str(cli.home), "exec", uid,
            "--model", model, "--input", "write an essay"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env(), cwd=cli.cwd)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.read(1)  # streaming: mid-call
        cli.fast("cancel", uid, "--wait", str(WAIT)).ok()
        _, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 18, err  # the turn's own exit: canceled


def _turns(cli: Cli, uid: str) -> list[tuple[list[str], dict[str, Any]]]:
    """Each execution's kinds and its last event, in order."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for record in cli.fast("log", uid, "--json").ok().json_lines():
        event = record["event"]
        runs.setdefault(event["execution_id"], []).append(event)
    return [([e["kind"] for e in run], run[-1]) for run in runs.values()]


def _identical(cli: Cli, uid: str, executions: int, *, text: bool = False) -> None:
    head = cli.fast("get", uid, "--json").ok().json()["last_seq"]
    report = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert report["identical"] is True, report["divergence"]
    assert (report["executions"], report["replayed"], report["model_calls"]) == (
        executions, executions, 0)  # fmt: skip
    assert report["last_seq"] == head  # replay wrote nothing
    if text:  # what a user reads
        out = cli.fast("replay", uid, "--rerun").ok().out
        assert f"replayed {executions} of {executions} executions" in out
        assert "model_calls 0\nidentical   yes" in out


def test_replay_of_the_tour_session_with_a_canceled_turn_and_its_fork(
    cli: Cli, tmp_path: Path
) -> None:
    made = cli.fast("exec", "--harness", "chat", "--model", "scripted:seed=7", "--input",
                    "plan a trip", "--json").ok()  # fmt: skip
    uid = made.json()["uid"]
    cli.fast("exec", uid, "--input", "make it shorter").ok()
    _canceled_mid_call(cli, uid, _slow(tmp_path))
    cli.fast("exec", uid, "--input", "just the dates").ok()
    cli.fast("exec", uid, "--input", "and the hotel").ok()
    turns = _turns(cli, uid)
    assert turns[2][0] == ABANDONED  # its MODEL_CALL kept, no answer, then CANCEL + END
    assert turns[2][1]["end"]["state"] == "CANCELED"
    _identical(cli, uid, 5, text=True)

    after = cli.fast("log", uid, "--json").ok().json_lines()
    fork_at = next(int(r["seq"]) for r in after if r["event"]["kind"] == "EVENT_END"
                   and r["event"]["end"]["state"] == "CANCELED") + 5  # fmt: skip
    child = cli.fast("fork", uid, "--at", str(fork_at), "--json").ok().json()[0]["uid"]
    _identical(cli, child, 4)  # the child's prefix: two turns, the canceled one, one more
    cli.fast("exec", child, "--input", "in the child").ok()
    _identical(cli, child, 5)
    cli.fast("verify", child).ok()


@contextmanager
def _served(home: Path) -> Iterator[str]:
    """A daemon over ``home`` on a free loopback port; its address."""
    argv = [sys.executable, "-m", "agentsessions", "--home", str(home), "serve",
            "--listen", "127.0.0.1:0", "--no-auth"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env())  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), line
        yield line.split()[-1]
        proc.terminate()
        _, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0 and "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _deadline_turn(address: str, uid: str, model: str) -> None:
    """A slow turn asked with a deadline 2-3 s on: the daemon cancels it mid-call."""
    grpc = need("grpc", "grpc")
    from agentsessions.wire.gen import common_pb2, session_pb2, session_pb2_grpc

    text = common_pb2.Part(text=common_pb2.TextPart(text="write a long essay"))
    request = session_pb2.ExecRequest(
        session=uid, inputs=[common_pb2.Message(role="user", parts=[text])], model=model,
        deadline_unix=int(time.time()) + 3,
    )  # fmt: skip
    with grpc.insecure_channel(address) as channel:
        stub = session_pb2_grpc.SessionsStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            list(stub.Exec(request, timeout=WAIT))
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_replay_with_a_deadline_stopped_turn_between_canceled_and_completed_ones(
    cli: Cli, tmp_path: Path
) -> None:
    need("grpc", "grpc")
    slow = _slow(tmp_path)
    made = cli.fast("exec", "--harness", "chat", "--model", "scripted:seed=7", "--input",
                    "plan a trip", "--json").ok()  # fmt: skip
    uid = made.json()["uid"]
    _canceled_mid_call(cli, uid, slow)
    with _served(cli.home) as address:
        _deadline_turn(address, uid, slow)
    cli.fast("exec", uid, "--input", "just the dates").ok()
    turns = _turns(cli, uid)
    assert [last["end"]["state"] for _, last in turns] == [
        "COMPLETED", "CANCELED", "CANCELED", "COMPLETED"]  # fmt: skip
    assert turns[1][0] == ABANDONED
    assert "EVENT_OUTPUT" not in turns[2][0]  # stopped mid-call (or, on a slow day, before it)
    timed_out = [e for e in cli.fast("log", uid, "--json").ok().json_lines()
                 if e["event"]["kind"] == "EVENT_LIFECYCLE"][-1]  # fmt: skip
    assert "TIMEOUT" in timed_out["event"]["lifecycle"]["detail"]  # the deadline's cancel
    _identical(cli, uid, 4)
