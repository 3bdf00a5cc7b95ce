"""Bring your own harness, through the real command line (issue 10 item 3).

``agentsessions harness serve chat --listen unix:///...`` runs as a real subprocess;
``harness register`` names it in the home; ``exec --harness NAME`` runs turns on it over
Harness.Connect: a turn with the scripted model and a mediated tool call, then ``replay
--rerun`` with zero model calls and no executor call. A harness process killed with SIGKILL
mid-turn leaves the turn open (exit 12, nothing lost), and ``resume`` with the harness back
completes it with no repeated model call; the chain verifies. ``harness serve memory``
commits its working state over the wire: a second turn remembers the first, a fresh
harness process continues from the state, replay makes no model call. And the bad inputs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import Cli, clean_env

HERE = Path(__file__).resolve().parent
BOUND = 120.0  # a bound on waiting for a file the harness makes, not a timing


def _address(tag: str) -> str:
    return f"unix://{tempfile.mkdtemp(prefix='ash-', dir='/tmp')}/{tag}.sock"


class Node:
    """A harness process; ``address`` once it said it listens."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(argv, cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert self.proc.stdout is not None
        self.line = self.proc.stdout.readline().strip()
        assert " listening on " in self.line, self.proc.stderr and self.proc.stderr.read()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        self.proc.communicate(timeout=60)  # and closes its pipes
        return self.proc.returncode


def serve(cli: Cli, name: str, address: str) -> Node:
    return Node([sys.executable, "-m", "agentsessions", "harness", "serve", name,
                 "--listen", address], cli.cwd)  # fmt: skip


@pytest.fixture
def chat_node(cli: Cli) -> Iterator[tuple[Node, str]]:
    address = _address("chat")
    node = serve(cli, "chat", address)
    yield node, address
    if node.proc.poll() is None:
        node.stop(signal.SIGKILL)


def _kinds(cli: Cli, uid: str) -> list[str]:
    return [line.split()[1] for line in cli.fast("log", uid).ok().out.splitlines()[1:]]


def test_a_chat_turn_with_a_tool_call_runs_over_the_wire_and_replays_with_no_calls(
    cli: Cli, tmp_path: Path, chat_node: tuple[Node, str]
) -> None:
    node, address = chat_node
    assert node.line == f"harness chat listening on {address}"
    cli.fast("harness", "register", "my-chat", "--address", address).ok()
    effects = tmp_path / "notes.txt"
    tools = tmp_path / "tools.toml"
    params = 'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
    tools.write_text(
        '[tools.append_line]\nmediation = "mediated"\nexecutor = "append_line"\n'
        f"{params}config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    script = tmp_path / "script.json"
    call = {"name": "append_line", "arguments": {"line": "buy milk"}}
    script.write_text(json.dumps([{"text": "Writing.", "tool_calls": [call]}, "Noted."]))
    run = cli.fast("exec", "--harness", "my-chat", "--model", f"scripted:file={script}",
                  "--tools", str(tools), "--input", "note: buy milk", "--json").ok()  # fmt: skip
    turn = run.json()
    assert turn["model_calls"] == 2 and turn["outputs"][-1] == "Noted."
    assert effects.read_text() == "buy milk\n"
    assert _kinds(cli, turn["uid"]) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT",
        "TOOL_CALL", "TOOL_RESULT", "MODEL_CALL", "OUTPUT", "END"]  # fmt: skip
    replay = cli.fast("replay", turn["uid"], "--rerun", "--json").ok().json()
    assert replay["identical"] is True and replay["model_calls"] == 0
    assert effects.read_text() == "buy milk\n"  # no executor call on replay
    cli.fast("verify", turn["uid"]).ok()
    assert node.stop(signal.SIGTERM) == 0  # graceful on SIGTERM


def test_a_served_memory_harness_commits_its_state_over_the_wire(cli: Cli) -> None:
    address = _address("memory")
    node = serve(cli, "memory", address)
    try:
        cli.fast("harness", "register", "mem", "--address", address).ok()
        first = cli.fast("exec", "--harness", "mem", "--input", "remember blue", "--json").ok()
        uid = first.json()["uid"]
        second = cli.fast("exec", uid, "--input", "what", "--json").ok().json()
        assert second["outputs"] == ["turn 2: I remember blue"]  # the first turn's state
        assert cli.fast("get", uid, "--json").ok().json()["working_state"]["version"] == 2
        assert all(kind != "STATE" for kind in _kinds(cli, uid))  # beside the journal
    finally:
        assert node.stop(signal.SIGTERM) == 0
    again = serve(cli, "memory", address)  # a fresh harness process, a fresh engine
    try:
        third = cli.fast("exec", uid, "--input", "and now", "--json").ok().json()
        assert third["outputs"] == ["turn 3: I remember blue"]
        replay = cli.fast("replay", uid, "--rerun", "--json").ok().json()
        assert replay["identical"] is True and replay["model_calls"] == 0
    finally:
        again.stop(signal.SIGKILL)
    cli.fast("verify", uid).ok()


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + BOUND
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_harness_killed_mid_turn_leaves_the_turn_for_resume(cli: Cli, tmp_path: Path) -> None:
    address = _address("gate")
    gate = [sys.executable, str(HERE / "gate_node.py"), address]
    node = Node(gate, cli.cwd)
    cli.fast("harness", "register", "gate", "--address", address).ok()
    uid = cli.fast("create", "--harness", "gate", "--json").ok().json()["uid"]
    gates = tmp_path / "gates"
    gates.mkdir()
    config = json.dumps({"gates": str(gates)})
    turn = subprocess.Popen([sys.executable, "-m", "agentsessions", "--home", str(cli.home),
                             "exec", uid, "--input", "hi", "--config", config],
                            cwd=cli.cwd, env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    _wait_for(gates / "reached")  # the model call is recorded; the harness waits
    node.stop(signal.SIGKILL)
    _, err = turn.communicate(timeout=120)
    assert turn.returncode == 12, err
    error = [line for line in err.splitlines() if line.startswith("agentsessions: error: ")]
    assert error and error[0].startswith("agentsessions: error: the harness at ")
    assert "unreachable" in error[0] and "Traceback" not in err
    assert _kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT"]

    (gates / "go").touch()
    (gates / "reached").unlink()
    back = Node(gate, cli.cwd)  # the harness is back, on the same address
    try:
        done = cli.fast("resume", uid, "--json").ok().json()["turn"]
        assert done["model_calls"] == 0 and done["outputs"][-1] == "after the gate"
    finally:
        back.stop(signal.SIGKILL)
    assert _kinds(cli, uid) == ["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "OUTPUT",
                                "END"]  # fmt: skip
    cli.fast("verify", uid).ok()


def test_bad_input(cli: Cli) -> None:
    cli.fast("harness", "serve", "no-such", "--listen", _address("x")).fails(2)
    cli.fast("harness", "serve", "chat", "--listen", "nowhere").fails(2)
    cli.fast("harness", "register", "Bad_Name", "--address", "unix:///tmp/x.sock").fails(2)
    cli.fast("harness", "register", "ok", "--address", "not an address").fails(2)
    cli.fast("harness", "register", "chat", "--address", "unix:///tmp/x.sock").fails(24)
    cli.fast("harness", "retire", "echo").fails(24)
    cli.fast("harness", "retire", "never-registered").fails(3)
    # registered, but nothing serves it: one clear error, nothing written
    cli.fast("harness", "register", "gone", "--address", _address("gone")).ok()
    run = cli.fast("exec", "--harness", "gone", "--input", "hi").fails(12)
    assert "unreachable" in run.err
    assert cli.fast("list", "--json").ok().json()["sessions"] == []
