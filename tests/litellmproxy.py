"""LiteLLM's proxy (a real, third-party OpenAI-compatible server) for the e2e tests.

Why LiteLLM: it is a widely used OpenAI-compatible gateway, installs from PyPI, and answers
offline (``mock_response`` in its config: no upstream is ever called), with the wire
behaviour of a real server: it refuses unknown model names, checks its bearer key, streams
SSE with a final usage chunk, and returns real error statuses (429 for a mocked rate limit).

Where it comes from: ``litellm[proxy]`` cannot be installed beside the project's pins (it
needs rich 13, cryptography 50 and mcp 2), so it lives in a venv of its own, made once per
machine from ``tests/e2e/litellm/requirements.txt`` under ``~/.cache/agentsessions-tests``
(a file lock makes that safe for parallel workers), or named by ``AGENTSESSIONS_TEST_LITELLM``
(a ``litellm`` executable); a ``litellm`` on PATH is used as is. When none can be had the
tests skip with "litellm not installed".

Counting requests: the proxy's access log (uvicorn, unbuffered) has one
``"POST /v1/chat/completions`` line per request it answered; :meth:`Proxy.requests` counts
them, so a test proves that replay sent none.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent / "e2e" / "litellm"
REQUIREMENTS = HERE / "requirements.txt"
MASTER_KEY = "sk-litellm-test"
READY_SECONDS = 180.0  # a cold start imports a lot on a busy 2-core machine
_REQUEST_LINE = '"POST /v1/chat/completions'


@dataclass
class Proxy:
    """One running proxy: its base URL (``/v1``), process and access log."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def requests(self) -> int:
        """Chat-completion requests the proxy has answered so far."""
        return self.log.read_text(encoding="utf-8", errors="replace").count(_REQUEST_LINE)

    def kill(self) -> None:
        """SIGKILL the proxy (the server dies mid-call) and reap it."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        """Stop the proxy (SIGTERM, then SIGKILL if it lingers)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def find_litellm() -> str | None:
    """The ``litellm`` executable to run (see the module docstring), making its venv once;
    None when none can be had."""
    named = os.environ.get("AGENTSESSIONS_TEST_LITELLM", "")
    if named:
        return named if Path(named).exists() else None
    found = shutil.which("litellm")
    if found:
        return found
    pins = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    venv = Path.home() / ".cache" / "agentsessions-tests" / f"litellm-{pins}"
    binary = venv / "bin" / "litellm"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(str(venv) + ".lock", "w") as lock:  # parallel workers make it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            shutil.rmtree(venv, ignore_errors=True)
            made = subprocess.run(
                f"{sys.executable} -m venv {venv} && {venv}/bin/pip install -q -r {REQUIREMENTS}",
                shell=True,
                capture_output=True,
                timeout=900,
            )
            if made.returncode != 0 or not binary.exists():
                shutil.rmtree(venv, ignore_errors=True)
                return None
    return str(binary)


def start(binary: str, workdir: Path, port: int) -> Proxy:
    """Start a proxy on 127.0.0.1:``port`` with the tests' config (copied into ``workdir``,
    beside its tool script) and wait until it answers its liveness probe."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("config.yaml", "toolscript.py"):
        shutil.copy(HERE / name, workdir / name)
    log = workdir / "proxy.log"
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # offline: no cost map download
        "PYTHONUNBUFFERED": "1",  # each access-log line lands as it is written
        "PYTHONPATH": str(workdir),
    }
    argv = [binary, "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*argv, "--num_workers", "1"], cwd=workdir, env=env, stdout=out, stderr=out
        )
    proxy = Proxy(f"http://127.0.0.1:{port}/v1", process, log)
    deadline = time.monotonic() + READY_SECONDS  # waiting for a server, not a timed assertion
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=2):
                return proxy
        except OSError:
            time.sleep(0.5)
    proxy.stop()
    tail = log.read_text(encoding="utf-8", errors="replace")[-800:]
    raise RuntimeError(f"the LiteLLM proxy did not come up on port {port}: {tail}")
