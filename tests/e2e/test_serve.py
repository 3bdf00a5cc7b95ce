"""``agentsessions serve`` as a user runs it: a real daemon process on a loopback port,
driven by the CLI's ``--server`` in other processes.

Nothing here waits on a clock: a test knows a turn is in flight because the exec process
has printed its first streamed text (the scripted model with ``delay`` streams it slowly);
the generous ``timeout`` of a wait only keeps a broken build from hanging the suite.
"""

from __future__ import annotations

import difflib
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clirun import ERROR_PREFIX, Cli, Run, clean_env
from needs import need

need("grpc", "grpc")

WAIT = 120  # a hang guard, not an assertion


@dataclass
class Daemon:
    proc: subprocess.Popen[str]
    address: str

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Signal the daemon; its exit status and stderr."""
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=WAIT)
        return self.proc.returncode, err


@contextmanager
def served(home: Path, *args: str, auth: bool = False) -> Iterator[Daemon]:
    """A daemon on a free loopback port over ``home``; killed if a test leaves it running.
    Without ``auth`` it serves with ``--no-auth`` (loopback only), as a developer runs it."""
    argv = [sys.executable, "-m", "agentsessions", "--home", str(home), "serve",
            "--listen", "127.0.0.1:0", *([] if auth else ["--no-auth"]), *args]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the one line a caller parses: where it listens
    if not line.startswith("listening on 127.0.0.1:"):
        proc.kill()
        raise AssertionError(f"serve printed {line!r}: {proc.communicate()[1]}")
    try:
        yield Daemon(proc, line.split()[-1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def remote(address: str, cwd: Path, *args: str) -> Run:
    """The CLI in a subprocess against ``address`` (no --home: nothing local is used)."""
    proc = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--server", address, *args],
        cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    return Run(args, proc.returncode, proc.stdout, proc.stderr)


def remote_fast(address: str, cwd: Path, *args: str) -> Run:
    """``remote`` in-process (typer's CliRunner), where the client's process is not the point."""
    return Cli(cwd, cwd).fast("--server", address, *args, home=False)


def start_remote(address: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentsessions", "--server", address, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
    )  # fmt: skip


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    (tmp_path / "served").mkdir()
    with served(tmp_path / "served") as d:
        yield d


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_prints_its_real_port_and_stops_cleanly(tmp_path: Path, sig: int) -> None:
    with served(tmp_path) as d:
        assert not d.address.endswith(":0")
        remote(d.address, tmp_path, "exec", "--input", "hi").ok()
        code, err = d.stop(sig)
    assert code == 0, err
    assert err.splitlines()[-1] == "agentsessions: stopped" and "Traceback" not in err


def test_serve_refuses_a_bad_listen_address_in_one_line(cli: Cli) -> None:
    cli.run("serve", "--listen", "nowhere").fails(2)
    cli.fast("serve", "--store", "sqlite").fails(2)


def test_serve_bounds_flags_are_checked_and_the_old_name_still_works(cli: Cli) -> None:
    err = cli.fast("serve", "--max-streams-per-client", "0").fails(2).err
    assert "'--max-streams-per-token' / '--max-streams-per-client': 0 is not in the range" in err
    for flag in ("--max-streams", "--max-turns-per-token", "--max-rps-per-token"):
        assert f"'{flag}': 0 is not in the range" in cli.fast("serve", flag, "0").fails(2).err


def test_serve_on_a_port_in_use_is_one_line_and_exit_12(cli: Cli) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = cli.run("serve", "--listen", f"127.0.0.1:{port}").fails(12)
    assert "address is in use or not available" in run.err
    assert "choose another --listen address" in run.err  # the library's param, the CLI's flag


def _normal(text: str, *paths: Path) -> str:
    """Output with what differs between two homes (ids, hashes, times, paths) masked."""
    for p in paths:
        text = text.replace(str(p), "TMP")
    text = re.sub(r"sess-[0-9a-f]{24}", "SESS", text)
    text = re.sub(r"\b[0-9a-f]{12,64}\b", "HEX", text)
    text = re.sub(r"\d{4}-\d\d-\d\d[ T][\d:.]+Z?", "TIME", text)
    text = re.sub(r'("\w+_ns": )\d+', r"\1NS", text)
    # the writer fence: each local CLI process is a new writer, the daemon one long-lived one
    text = re.sub(r'("fence": |\bfence +)\d+', r"\1F", text)
    return re.sub(r"\bscripted-\d+-HEX\b", "SCRIPTED", text)


def test_every_command_over_server_prints_what_it_prints_locally(
    cli: Cli, daemon: Daemon, tmp_path: Path
) -> None:
    here = tmp_path / "cwd"
    steps: list[tuple[str, ...]] = [
        ("exec", "--input", "hello"),
        ("exec", "--input", "again", "--json"),
        ("create", "--project", "acme", "--name", "triage", "--label", "team=ml"),
        ("list",), ("list", "--json"), ("list", "--project", "acme", "--json"),
        ("get", "{0}"), ("get", "{0}", "--json"),
        ("log", "{0}"), ("log", "{0}", "--json"), ("replay", "{0}"),
        ("follow", "{0}", "--from", "3", "--idle-exit", "0.3"),
        ("replay", "{0}", "--rerun"), ("replay", "{0}", "--rerun", "--json"),
        ("fork", "{0}", "--at", "5", "--count", "2", "--json"),
        ("suspend", "{0}"), ("resume", "{0}"), ("exec", "{0}", "--input", "third"),
        ("verify", "{0}"), ("verify", "{0}", "--json"),
        ("cancel", "{0}"),  # nothing open: exit 17
        ("get", "sess-" + "0" * 24), ("get", "nope"), ("exec", "sess-" + "0" * 24, "-i", "x"),
        ("export", "{0}", "-o", "{out}"), ("delete", "{0}", "--json"),
        ("exec", "{0}", "--input", "after delete"),  # a deleted session: refused
    ]  # fmt: skip
    results: dict[str, list[tuple[int, str, str]]] = {"local": [], "server": []}
    for side in results:
        uid, out = "", tmp_path / f"{side}.agx"
        for step in steps:
            args = [a.format(uid, out=out) for a in step]
            run = cli.fast(*args) if side == "local" else remote(daemon.address, here, *args)
            if not uid and run.code == 0 and step[0] == "exec":
                uid = re.findall(r"sess-[0-9a-f]{24}", run.err + run.out)[0]
            homes = (out, cli.home, tmp_path / "served")  # where each side's files are
            results[side].append((run.code, _normal(run.out, *homes), _normal(run.err, *homes)))
    for step, local, server in zip(steps, results["local"], results["server"], strict=True):
        assert server == local, (
            step,
            "\n".join(
                difflib.unified_diff(local[1].splitlines(), server[1].splitlines(), lineterm="")
            ),
        )


@pytest.mark.parametrize(
    "args",
    [("compute", "list"), ("verify", "--all"), ("verify", "./x.agx"), ("reindex",), ("demo",)],
    ids=lambda a: " ".join(a),
)
def test_local_only_commands_say_so_over_server(
    daemon: Daemon, tmp_path: Path, args: tuple[str, ...]
) -> None:
    (tmp_path / "x.agx").write_text("{}")
    run = remote(daemon.address, tmp_path, *args).fails(2)
    assert "needs a local home; it does not run over --server" in run.err


def test_no_server_there_is_one_line_and_exit_12(tmp_path: Path) -> None:
    run = remote(f"unix://{tmp_path}/none.sock", tmp_path, "list").fails(12)
    assert run.err.startswith(f"{ERROR_PREFIX}cannot reach the server at unix://")


def _tools(tmp_path: Path, mediation: str) -> tuple[Path, Path]:
    effects, toml = tmp_path / "notes.txt", tmp_path / "tools.toml"
    toml.write_text(
        f'[tools.append_line]\nmediation = "{mediation}"\nexecutor = "append_line"\n'
        'parameters = { type = "object", properties = { line = { type = "string" } } }\n'
        f"config = {{ path = {json.dumps(str(effects))} }}\n"
    )
    return toml, effects


def _script(tmp_path: Path, *entries: Any) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(entries)))
    return f"scripted:file={path}"


def test_the_approval_flow_over_server(daemon: Daemon, tmp_path: Path) -> None:
    tools, effects = _tools(tmp_path, "approval")
    call = {"text": "Writing.", "tool_calls": [{"name": "append_line",
                                                "arguments": {"line": "buy milk"}}]}  # fmt: skip
    model = _script(tmp_path, call, "Done.")
    at = daemon.address
    run = remote(at, tmp_path, "exec", "--harness", "chat", "--model", model,
                 "--tools", str(tools), "--input", "note: buy milk")  # fmt: skip
    assert run.code == 20, run.err  # parked, as locally
    assert "tool append_line, call " in run.err and "request seq" in run.err
    assert not effects.exists()
    uid = remote_fast(at, tmp_path, "list", "--json").ok().json()["sessions"][0]["uid"]
    got = remote_fast(at, tmp_path, "get", uid, "--json").ok().json()
    assert got["exec_state"] == "EXEC_AWAITING" and got["pending_approval"]["request_seq"] > 0
    remote_fast(at, tmp_path, "approve", uid, "--reason", "fine", "--actor", "alice").ok()
    assert effects.read_text() == "buy milk\n"
    again = remote_fast(at, tmp_path, "approve", uid, "--actor", "bob")  # nothing pending now
    assert again.code == 21, again.err
    log = remote_fast(at, tmp_path, "log", uid, "--json").ok().json_lines()
    kinds = [r["event"]["kind"].removeprefix("EVENT_") for r in log]
    assert kinds[-6:] == ["APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "MODEL_CALL",
                          "OUTPUT", "END"]  # fmt: skip
    assert log[-5]["event"]["actor"] == {"principal": "alice"}
    rerun = remote_fast(at, tmp_path, "replay", uid, "--rerun", "--json").ok().json()
    assert rerun["identical"] and rerun["model_calls"] == 0
    assert effects.read_text() == "buy milk\n"


def _slow_exec(address: str, tmp_path: Path, seconds: int) -> tuple[subprocess.Popen[str], str]:
    """An exec of a slow scripted turn (40 words streamed over ``seconds``), in flight: its
    uid once its first word has streamed."""
    words = " ".join(f"w{i}" for i in range(40))
    model = f"{_script(tmp_path, words)},delay={seconds}"
    proc = start_remote(address, "exec", "--harness", "chat", "--model", model,
                        "--input", "take your time")  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stderr.readline()  # "session sess-...": the session exists
    uid = re.findall(r"sess-[0-9a-f]{24}", first)
    assert uid, first
    assert proc.stdout.read(1)  # streamed text: the model call is in flight now
    return proc, uid[0]


def _rest_of_stderr(proc: subprocess.Popen[str]) -> str:
    """What ``proc`` writes to stderr after :func:`_slow_exec`'s first line, read through
    the same buffer: ``communicate`` reads the raw pipe and would miss lines that readline
    had already buffered (a batched turn's first records arrive with the session line)."""
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stdout, proc.stderr:
        rest = proc.stderr.read()
        proc.stdout.read()
    proc.wait(timeout=WAIT)
    return rest


def test_cancel_over_server_stops_a_running_turn(daemon: Daemon, tmp_path: Path) -> None:
    proc, uid = _slow_exec(daemon.address, tmp_path, 60)
    remote_fast(daemon.address, tmp_path, "cancel", uid, "--wait", "60").ok()
    proc.communicate(timeout=WAIT)
    assert proc.returncode == 18  # canceled, as locally
    log = remote_fast(daemon.address, tmp_path, "log", uid, "--json").ok().json_lines()
    assert log[-1]["event"]["end"]["state"] == "CANCELED"
    remote_fast(daemon.address, tmp_path, "verify", uid).ok()


@pytest.mark.parametrize("grace", ["30", "0"], ids=["in-grace", "no-grace"])
def test_sigterm_mid_turn_exits_clean_and_loses_nothing_acknowledged(
    cli: Cli, tmp_path: Path, grace: str
) -> None:
    with served(cli.home, "--grace", grace) as d:
        proc, uid = _slow_exec(d.address, tmp_path, 4)
        code, err = d.stop(signal.SIGTERM)
        exec_err = _rest_of_stderr(proc)
    assert code == 0, err
    assert "Traceback" not in err + exec_err
    # the turn ran to its END before the daemon exited, whatever became of its stream
    cli.fast("verify", uid).ok()
    log = cli.fast("log", uid, "--json").ok().json_lines()
    assert log[-1]["event"]["end"]["state"] == "COMPLETED"
    acked = [int(m) for m in re.findall(r"^\s+(\d+)\s+[A-Z_]+", exec_err, re.MULTILINE)]
    stored = {int(r["seq"]): r["event"]["kind"] for r in log}
    assert set(acked) <= set(stored)  # every record the client was shown is kept
    if grace == "30":  # in-flight RPCs finish inside the grace: the client saw it all
        assert proc.returncode == 0 and sorted(acked) == sorted(stored)
    else:  # cut off: one clear line, and the turn is durable all the same
        assert proc.returncode == 12, exec_err
        assert exec_err.splitlines()[-2].startswith(f"{ERROR_PREFIX}the server at ")


def test_agentsessions_server_in_the_environment_points_every_command_there(
    daemon: Daemon, tmp_path: Path
) -> None:
    remote(daemon.address, tmp_path, "exec", "--input", "via the flag").ok()
    env = clean_env({"AGENTSESSIONS_SERVER": daemon.address, "AGENTSESSIONS_TOKEN": "t0k"})
    proc = subprocess.run(
        [sys.executable, "-m", "agentsessions", "list", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["sessions"]) == 1
    run = remote(daemon.address, tmp_path, "--tls-cert", "c.pem", "list")  # no --tls-key
    assert run.code == 2 and "needs both --tls-cert and --tls-key" in run.err


def test_a_daemon_with_auth_serves_a_token_and_refuses_none(tmp_path: Path) -> None:
    """The default daemon serves nothing without a token; a project's token reaches its
    project, over the same CLI (exit 30 without one: the error crossed the wire whole)."""
    home = tmp_path / "home"
    made = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--home", str(home), "token", "create",
         "--project", "default", "--name", "e2e"],
        env=clean_env(), capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    with served(home, auth=True) as daemon:
        refused = remote(daemon.address, tmp_path, "list")
        assert refused.code == 30 and "bearer token" in refused.err, refused
        ok = remote(daemon.address, tmp_path, "--token", token, "exec", "--input", "hi")
        assert ok.code == 0 and "echo:hi" in ok.out, ok
        listed = remote(daemon.address, tmp_path, "--token", token, "list")
        assert listed.code == 0 and "sess-" in listed.out, listed
