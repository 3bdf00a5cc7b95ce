"""A plain client against a TLS ``serve`` is told to pass ``--tls-ca`` (issue 17), not asked
whether a server runs there; with the CA it is served."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from clirun import ERROR_PREFIX, Run, clean_env
from needs import need

need("grpc", "grpc")
need("cryptography", "crypto")

from tests.tlscerts import Authority  # after the skips: cryptography is there

WAIT = 120  # a hang guard, not an assertion


def _remote(cwd: Path, *args: str) -> Run:
    proc = subprocess.run(
        [sys.executable, "-m", "agentsessions", *args],
        cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    return Run(args, proc.returncode, proc.stdout, proc.stderr)


def test_a_plain_client_of_a_tls_server_is_told_tls_ca(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "pki")
    pem = ca.issue("localhost", server=True)
    argv = [sys.executable, "-m", "agentsessions", "--home", str(tmp_path / "home"), "serve",
            "--listen", "127.0.0.1:0", "--no-auth",
            "--tls-cert", str(pem.cert_path), "--tls-key", str(pem.key_path)]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), proc.stderr
        port = line.split(":")[-1].strip()
        plain = _remote(tmp_path, "--server", f"127.0.0.1:{port}", "list").fails(12)
        assert plain.err.startswith(f"{ERROR_PREFIX}cannot reach the server")
        assert "--tls-ca" in plain.err.splitlines()[1]
        with_ca = _remote(
            tmp_path, "--server", f"localhost:{port}", "--tls-ca", str(ca.pem.cert_path), "list"
        )
        assert with_ca.ok().out.startswith("no sessions")
    finally:
        proc.kill()
        proc.communicate()


def test_nobody_listening_keeps_the_is_serve_running_hint(tmp_path: Path) -> None:
    run = _remote(tmp_path, "--server", f"unix://{tmp_path}/none.sock", "list").fails(12)
    assert "is `agentsessions serve` running there?" in run.err
    assert "--tls-ca" not in run.err
