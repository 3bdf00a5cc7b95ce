"""The tool loop over the wire for a token holder (issue 18, item 7): the operator offers
tools with ``serve --tools FILE``; a caller's workload selects them by name and never
defines an executor.

The daemon is built in this process as ``serve`` builds it (``offered_tools``, ``security``,
``build_server`` over a file-store engine, bearer tokens on a loopback port), so the test
can register a model that asks for a tool call (a provider name without options: what a
token holder may name). The CLI runs in-process too, with ``--server`` and ``--token``, as
a remote user runs it: exec parks on the offered approval tool, approve over the wire
finishes the turn, the effect happened exactly once, in the file only the operator named.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from clirun import ERROR_PREFIX, Cli, Run, clean_env
from needs import need

need("grpc", "grpc")

import grpc

import agentsessions
from agentsessions.cli.serveauth import offered_tools, security
from agentsessions.models import MODELS
from agentsessions.models.scripted import Answer, ScriptedCall, ScriptedModel
from agentsessions.server.app import build_server
from agentsessions.sessions.tokens import TokenStore
from agentsessions.tools.workload import parse_workload
from agentsessions.wire.gen import session_pb2, session_pb2_grpc

MODEL = "tools-e2e-caller"  # a registered provider name: what a token holder may name


def _model() -> ScriptedModel:
    call = ScriptedCall("log", {"line": "buy milk"})
    return ScriptedModel(answers=[Answer("Writing.", (call,)), Answer("Done.")])


def _operator_file(tmp: Path, effects: Path) -> Path:
    path = tmp / "offered.toml"
    path.write_text(
        "[tools.log]\n"
        'mediation = "approval"\n'
        'executor = "append_line"\n'
        'description = "Append a line to the log"\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
        "[tools.memo]\n"
        'mediation = "mediated"\n'
        'executor = "append_line"\n'
        f"config = {{ path = {json.dumps(str(tmp / 'memo.txt'))} }}\n"
    )
    return path


@dataclass
class Daemon:
    address: str
    token: str
    home: Path

    def cli(self, *args: str) -> Run:
        """The CLI in this process against the daemon, as the token's holder."""
        from typer.testing import CliRunner

        from agentsessions.cli.app import app

        argv = ["--server", self.address, "--token", self.token, *args]
        result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
        return Run(args, result.exit_code, result.stdout, result.stderr)


@contextmanager
def _served(home: Path, tools: Path | None) -> Iterator[Daemon]:
    """A token-checking daemon on loopback over ``home`` offering ``tools`` (serve's way)."""
    offered = offered_tools(tools)
    token = TokenStore(home).create(projects=("acme",), name="remote")[0]
    MODELS.register(MODEL, _model)
    try:
        with agentsessions.open(home) as engine:
            sec = security(home, "127.0.0.1:0", engine, tools=offered)
            server = build_server(
                engine,
                "127.0.0.1:0",
                interceptors=sec.interceptors,
                scope=sec.scope,
                options=sec.options,
            )
            try:
                yield Daemon(server.address, token, home)
            finally:
                server.stop(grace=None)
    finally:
        MODELS.unregister(MODEL)


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    return tmp_path / "effects.txt"


@pytest.fixture
def daemon(tmp_path: Path, effects: Path) -> Iterator[Daemon]:
    with _served(tmp_path / "home", _operator_file(tmp_path, effects)) as d:
        yield d


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the refusal tests (each counts what it finds before and after)."""
    tmp = tmp_path_factory.mktemp("shared")
    with _served(tmp / "home", _operator_file(tmp, tmp / "effects.txt")) as d:
        yield d


def _caller(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "caller.toml"
    path.write_text(text)
    return path


def test_a_token_holder_runs_an_offered_approval_tool_over_the_wire(
    daemon: Daemon, tmp_path: Path, effects: Path
) -> None:
    # the caller selects the operator's tool by name: no executor, no path of its own
    tools = _caller(tmp_path, '[tools.log]\ndescription = "Note a line for later"\n')
    run = daemon.cli("exec", "--harness", "chat", "--model", MODEL, "--tools", str(tools),
                     "--input", "note: buy milk")  # fmt: skip
    assert run.code == 20, run.err  # parked on the approval, as locally
    assert "tool log, call " in run.err and "request seq" in run.err
    assert not effects.exists()
    uid = daemon.cli("list", "--json").ok().json()["sessions"][0]["uid"]
    got = daemon.cli("get", uid, "--json").ok().json()
    assert got["project"] == "acme" and got["exec_state"] == "EXEC_AWAITING"

    daemon.cli("approve", uid, "--reason", "fine").ok()
    assert effects.read_text() == "buy milk\n"  # the operator's file, written once
    assert daemon.cli("approve", uid).code == 21  # nothing pending now
    log = daemon.cli("log", uid, "--json").ok().json_lines()
    kinds = [r["event"]["kind"].removeprefix("EVENT_") for r in log]
    assert kinds[-6:] == ["APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "MODEL_CALL",
                          "OUTPUT", "END"]  # fmt: skip
    assert log[-5]["event"]["actor"] == {"principal": "remote"}  # the token's identity
    text = daemon.cli("log", uid).ok().out
    assert "APPROVAL_RESULT" in text and "TOOL_RESULT" in text
    rerun = daemon.cli("replay", uid, "--rerun", "--json").ok().json()
    assert rerun["identical"] and rerun["model_calls"] == 0  # the recorded, merged workload
    assert effects.read_text() == "buy milk\n"


REFUSED = {
    "python": '[tools.log]\nexecutor = "python:os:system"\n',
    "unix": '[tools.log]\nmediation = "approval"\nexecutor = "unix:///tmp/x"\n',
    "mcp": '[tools.sh]\nmediation = "mediated"\nexecutor = "mcp:sh"\n',
    "builtin": '[tools.mine]\nmediation = "mediated"\nexecutor = "append_line"\n'
    'config = { path = "/tmp/mine.txt" }\n',
    "unknown-name": '[tools.rm]\nmediation = "mediated"\n',
    "config-key": '[tools.log]\nconfig = { path = "/tmp/elsewhere.txt" }\n',
    "lowered": '[tools.log]\nmediation = "mediated"\n',
    "lowered-to-reported": '[tools.memo]\nmediation = "reported"\n',
    "caller-config": '[tools.memo]\ncaller_config = ["path"]\n',
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_a_callers_workload_may_not_define_or_widen_a_tool(
    shared: Daemon, tmp_path: Path, text: str
) -> None:
    daemon = shared
    uid = daemon.cli("exec", "-p", "acme", "--input", "hi", "--json").ok().json()["uid"]
    before = daemon.cli("get", uid, "--json").ok().json()["last_seq"]
    count = len(daemon.cli("list", "--json").ok().json()["sessions"])
    tools = _caller(tmp_path, text)
    for target in ([uid], []):  # an existing session, and exec's new one
        run = daemon.cli("exec", *target, "--harness", "chat", "--model", MODEL,
                         "--tools", str(tools), "--input", "hi").fails(31)  # fmt: skip
        assert run.err.startswith(f"{ERROR_PREFIX}workload from the caller: [tools."), run.err
        assert "hint: " in run.err
    refused = daemon.cli("create", "-p", "acme", "--tools", str(tools))
    assert refused.code == 31, refused.err
    assert daemon.cli("get", uid, "--json").ok().json()["last_seq"] == before
    assert len(daemon.cli("list", "--json").ok().json()["sessions"]) == count  # none made
    home = daemon.home.parent
    assert not (home / "memo.txt").exists() and not (home / "effects.txt").exists()


def _raw(daemon: Daemon, tools: str) -> grpc.RpcError:
    with grpc.insecure_channel(daemon.address) as channel:
        stub = session_pb2_grpc.SessionsStub(channel)  # type: ignore[no-untyped-call]
        meta = (("authorization", f"Bearer {daemon.token}"),)
        with pytest.raises(grpc.RpcError) as info:
            request = session_pb2.ExecRequest(project="acme", harness="chat", tools=tools)
            list(stub.Exec(request, metadata=meta, timeout=30))
    return info.value


@pytest.mark.parametrize(
    "text", ["[tools.log", '[listed.log]\ndescription = "x"\n', "tools = 3\n", "[bogus]\n"]
)
def test_a_workload_that_is_not_one_is_invalid_argument_and_writes_nothing(
    shared: Daemon, text: str
) -> None:
    count = len(shared.cli("list", "--json").ok().json()["sessions"])
    err = _raw(shared, text)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    assert "workload from the caller" in (err.details() or "")
    assert len(shared.cli("list", "--json").ok().json()["sessions"]) == count


def test_without_serve_tools_a_token_holders_workload_is_refused(tmp_path: Path) -> None:
    with _served(tmp_path / "home", None) as daemon:
        tools = _caller(tmp_path, "[tools.log]\n")
        run = daemon.cli("exec", "--tools", str(tools), "--input", "hi").fails(31)
        assert "this server offers no tools" in run.err and "serve --tools FILE" in run.err
        assert daemon.cli("list", "--json").ok().json()["sessions"] == []
        daemon.cli("exec", "--input", "hi").ok()  # no workload: the turn runs as ever


def test_a_callers_own_reported_tool_and_raised_mediation_are_kept(
    daemon: Daemon, tmp_path: Path
) -> None:
    tools = _caller(
        tmp_path,
        '[tools.memo]\nmediation = "approval"\n'
        '[tools.lookup]\nmediation = "reported"\ndescription = "My harness looks it up"\n',
    )
    uid = daemon.cli("create", "-p", "acme", "--tools", str(tools)).ok().out.strip()
    run = daemon.cli("exec", uid, "--harness", "chat", "--input", "hi").ok()
    assert run.code == 0
    (kept,) = [p for p in daemon.home.rglob("WORKLOAD") if uid in str(p)]
    recorded = parse_workload(kept.read_text()).tools  # what the engine records, merged
    assert recorded["memo"].executor == "append_line"  # the operator's executor and config
    assert recorded["memo"].config == {"path": str(tmp_path / "memo.txt")}
    assert recorded["memo"].mediation == "MEDIATION_REQUIRES_APPROVAL"  # raised by the caller
    assert recorded["lookup"].mediation == "MEDIATION_IN_HARNESS_REPORTED"
    assert not recorded["lookup"].executor and set(recorded) == {"memo", "lookup"}


def test_serve_refuses_a_bad_tools_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "offered.toml"
    bad.write_text('[tools.log]\nmediation = "mediated"\nexecutor = "no-such"\n')
    cli = Cli(tmp_path / "home", tmp_path)
    run = cli.fast("serve", "--listen", "127.0.0.1:0", "--tools", str(bad)).fails(2)
    assert str(bad) in run.err and "[tools.log] executor:" in run.err
    bad.write_text('[tools.log]\nmediation = "mediated"\nexecutor = "append_line"\n'
                   'config = { path = "/tmp/x" }\ncaller_config = ["nope"]\n')  # fmt: skip
    run = cli.fast("serve", "--listen", "127.0.0.1:0", "--tools", str(bad)).fails(2)
    assert "[tools.log] caller_config:" in run.err and "'nope'" in run.err


def test_a_real_serve_process_offers_its_tools_file(tmp_path: Path, effects: Path) -> None:
    """``serve --tools FILE`` as an operator starts it: the flag reaches the scope."""
    home = tmp_path / "home"
    token = TokenStore(home).create(projects=("acme",), name="remote")[0]
    argv = [sys.executable, "-m", "agentsessions", "--home", str(home), "serve", "--listen",
            "127.0.0.1:0", "--tools", str(_operator_file(tmp_path, effects))]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), proc.communicate()[1]
        daemon = Daemon(line.split()[-1], token, home)
        selected = _caller(tmp_path, '[tools.log]\nmediation = "approval"\n')
        uid = daemon.cli("create", "-p", "acme", "--tools", str(selected)).ok().out.strip()
        defining = _caller(tmp_path, '[tools.log]\nexecutor = "mcp:sh -c id"\n')
        daemon.cli("create", "-p", "acme", "--tools", str(defining)).fails(31)
        assert [s["uid"] for s in daemon.cli("list", "--json").ok().json()["sessions"]] == [uid]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    (kept,) = [p for p in home.rglob("WORKLOAD") if uid in str(p)]
    assert parse_workload(kept.read_text()).tools["log"].executor == "append_line"
