"""``serve`` as an operator sees it (issue 17, section 6): ``--log-format json`` writes one
line per call, with the fields an operator filters on, and never a secret; the standard
health service turns NOT_SERVING when a stop begins.

A real daemon with bearer tokens and encryption at rest (a key file) serves a whole flow
driven by the CLI in other processes: create, exec, follow, log, list, an unknown uid, a
call without a token, a token of another project. Its stderr is then searched for every
secret the run used: the token, the master key (as written and as bytes in hex and
base64), the inputs and outputs of the turns, the writer's fence value.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clirun import Cli, Run, clean_env
from needs import need

need("grpc", "grpc")

WAIT = 120  # a hang guard, not an assertion
REQUIRED = ("request_id", "method", "code", "duration_ms", "project", "session", "token_id")
INPUT = "the-launch-code-is-tangerine-8841"
SECOND = "second-secret-input-plum-2207"


def _remote(address: str, token: str, cwd: Path, *args: str) -> Run:
    env = clean_env({"AGENTSESSIONS_TOKEN": token} if token else {})
    proc = subprocess.run(
        [sys.executable, "-m", "agentsessions", "--server", address, *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    return Run(args, proc.returncode, proc.stdout, proc.stderr)


def _fence_values(home: Path) -> set[int]:
    """Every fence the home's FENCE files hold (the writer fences minted in this run)."""
    from agentsessions.journal.format import fencefile

    return {fencefile.read(path) for path in home.rglob("FENCE")} - {0}


def _request_lines(err: str) -> list[dict[str, Any]]:
    lines = []
    for line in err.splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))  # every JSON line parses
    return [obj for obj in lines if obj.get("msg") == "rpc"]


def test_a_full_run_logs_every_call_and_no_secret(cli: Cli, tmp_path: Path) -> None:
    raw_key = os.urandom(32)
    key_text = base64.b64encode(raw_key).decode()
    key = tmp_path / "master.key"
    key.write_text(key_text + "\n")
    key.chmod(0o600)
    made = cli.fast("token", "create", "-p", "acme", "--json").ok().json()
    token, token_id = made["token"], made["id"]
    other = cli.fast("token", "create", "-p", "elsewhere").ok().out.strip()

    argv = [sys.executable, "-m", "agentsessions", "--home", str(cli.home), "serve",
            "--listen", "127.0.0.1:0", "--log-format", "json", "--key-file", str(key)]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), proc.communicate()[1]
        address = line.split()[-1]
        cwd = tmp_path
        uid = _remote(address, token, cwd, "create", "-p", "acme").ok().out.strip()
        ran = _remote(address, token, cwd, "exec", uid, "--input", INPUT).ok()
        assert INPUT in ran.out  # the echo model said it back: the secret crossed the wire
        _remote(address, token, cwd, "exec", uid, "--input", SECOND).ok()
        _remote(address, token, cwd, "follow", uid, "--idle-exit", "0.2").ok()
        _remote(address, token, cwd, "log", uid).ok()
        _remote(address, token, cwd, "list", "-p", "acme").ok()
        _remote(address, token, cwd, "log", "sess-" + "0" * 24).fails(3)
        _remote(address, other, cwd, "log", uid).fails(3)  # another project's: NOT_FOUND
        _remote(address, "", cwd, "list").fails(30)  # no token: UNAUTHENTICATED
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err

    calls = _request_lines(err)
    methods = [c["method"].rsplit("/", 1)[-1] for c in calls]
    for expected in ("CreateSession", "ExecQuick", "Follow", "Replay", "ListSessions"):
        assert expected in methods, methods
    for call in calls:
        assert all(k in call for k in REQUIRED), call
        assert isinstance(call["duration_ms"], float | int) and call["duration_ms"] >= 0
    assert len({c["request_id"] for c in calls}) == len(calls)  # one id per call
    execs = [c for c in calls if c["method"].endswith(("/Exec", "/ExecQuick", "/ExecRest"))]
    assert {(c["code"], c["project"], c["session"], c["token_id"]) for c in execs} == {
        ("OK", "acme", uid, token_id)
    }
    codes = {c["code"] for c in calls}
    assert {"OK", "NOT_FOUND", "UNAUTHENTICATED"} <= codes

    fences = _fence_values(cli.home)
    assert fences  # the run minted writer fences: they are among the secrets
    secrets = [token, other, key_text, raw_key.hex(), base64.urlsafe_b64encode(raw_key).decode(),
               INPUT, SECOND, f"echo:{INPUT}", token.split("_", 1)[-1]]  # fmt: skip
    for secret in secrets:
        assert secret not in err, f"the log holds a secret: {secret[:6]}..."
    for obj in calls:
        for name, value in obj.items():
            assert "fence" not in name
            assert not (name != "duration_ms" and value in fences and isinstance(value, int))


def test_a_stopping_daemon_tells_health_watchers_not_serving(tmp_path: Path) -> None:
    """SIGTERM: a load balancer watching the standard health service sees NOT_SERVING as the
    graceful stop begins (while in-flight calls still finish), then the stream ends."""
    need("grpc_health", "grpc")
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "serve",
            "--listen", "127.0.0.1:0", "--grace", "30"]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), proc.communicate()[1]
        with grpc.insecure_channel(line.split()[-1]) as channel:
            health: Any = health_pb2_grpc.HealthStub(channel)
            check = health.Check(health_pb2.HealthCheckRequest(service="agentsessions.v1.Sessions"))
            assert check.status == health_pb2.HealthCheckResponse.SERVING  # no token needed
            watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=WAIT)
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            proc.send_signal(signal.SIGTERM)
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
            with pytest.raises(StopIteration):  # then the server ends the watch: a watcher
                next(watch)  # does not hold the stop for its --grace of 30 s
        _, err = proc.communicate(timeout=WAIT)  # the one signal stops it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert err.splitlines()[-1] == "agentsessions: stopped"


@pytest.mark.parametrize("operator", ["", "glibc.malloc.arena_max=2"])
def test_serve_runs_with_glibcs_per_thread_caches_off(tmp_path: Path, operator: str) -> None:
    """``serve`` restarts itself once (the same pid) with ``GLIBC_TUNABLES`` turning glibc's
    per-thread caches off (agentsessions/server/memory.py: a daemon's memory comes back after
    a flood); an operator's own ``GLIBC_TUNABLES`` is kept as it is."""
    if not Path("/proc/self/environ").exists() or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc and /proc only")
    env = clean_env()
    env.pop("GLIBC_TUNABLES", None)  # the test runner's own, if it has one
    if operator:
        env["GLIBC_TUNABLES"] = operator
    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path), "serve",
            "--listen", "127.0.0.1:0", "--no-auth"]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), proc.communicate()[1]
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        tunables = [e for e in environ if e.startswith(b"GLIBC_TUNABLES=")]
        assert tunables == [
            b"GLIBC_TUNABLES=" + (operator or "glibc.malloc.tcache_count=0").encode()
        ]
    finally:
        proc.kill()  # the environment is the point here, not the stop
        proc.communicate()


def test_a_bad_log_format_is_refused_in_one_line(cli: Cli) -> None:
    run = cli.run("serve", "--log-format", "xml").fails(2)
    assert "invalid --log-format 'xml'" in run.err
