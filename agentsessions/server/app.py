"""Building and running the gRPC server over one long-lived engine.

:func:`build_server` is the seam the other parts of issue 10 plug into (docs/WIRE.md):
``credentials`` and ``interceptors`` (access control), ``scope`` (the Sessions an RPC acts
on for its caller), ``extra_services`` (the Harness and HarnessRegistry services).

Invariants:
- the server is listening when :func:`build_server` returns; :attr:`RunningServer.address`
  is the real address (with port 0 the port the OS chose), so a caller can print it;
- :meth:`RunningServer.stop` stops accepting at once, lets in-flight RPCs finish for
  ``grace`` seconds, then cancels the rest; a turn a cancelled Exec was streaming goes on
  on the engine's thread, and closing the engine (the caller's job) waits for its END, so
  nothing is half written;
- :meth:`RunningServer.serve_forever` turns SIGINT and SIGTERM into that graceful stop;
- the standard health service (``grpc.health.v1.Health``) answers SERVING for the server
  ("") and each of its services while it runs, NOT_SERVING from the start of a graceful
  stop; server reflection lists the services; neither needs a token (docs/OPERATIONS.md);
- every call goes through :class:`~.observe.RequestObserver` first: a request id, one log
  line, the RPC's span; and through :class:`~agentsessions.wire.wirecheck.WireChecks` last: a
  request that does not decode, or has an integer field out of range, is INVALID_ARGUMENT before its
  handler runs;
- with :class:`~.admission.Admission` among the interceptors (``serve`` always has it),
  streams and turns run on its pool and the server's own :data:`UNARY_WORKERS` serve only
  unary calls (no number of streams can take them); without it, streams share this pool,
  which then gets :data:`~agentsessions.wire.bounds.DEFAULT_MAX_STREAMS` more workers. Either way
  grpc holds at most :data:`MAX_CONCURRENT_RPCS` calls at once (running or queued for a worker) and
  refuses the rest on its serving thread, so nothing queues without bound.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from types import FrameType
from typing import Any

import grpc

from agentsessions.errors import InvalidArgumentError, UnavailableError
from agentsessions.server import service
from agentsessions.server.admission import Admission
from agentsessions.server.observe import RequestObserver
from agentsessions.sessions.api import Sessions
from agentsessions.sessions.defaults import DEFAULT_RUNTIME
from agentsessions.wire.bounds import DEFAULT_MAX_STREAMS
from agentsessions.wire.wirecheck import WireChecks

LOG = logging.getLogger("agentsessions.server")
DEFAULT_GRACE = 10.0
SIGNAL_POLL = 0.2  # seconds: how soon a signal delivered to another thread is handled
UNARY_WORKERS = 32
"""The server's own pool: unary calls (a stream or a turn runs on the admission's pool)."""
MAX_CONCURRENT_RPCS = 1024
"""grpc's backstop (``maximum_concurrent_rpcs``): calls running or waiting for a worker at
once; beyond it grpc answers RESOURCE_EXHAUSTED on its serving thread, so a flood from many
tokens or connections cannot queue without bound (each queued call holds a few KiB)."""


class RunningServer:
    """A started server: where it listens, and how to stop it."""

    def __init__(
        self, server: grpc.Server, address: str, port: int, health: Any | None = None
    ) -> None:
        self.server = server
        self.address = address
        self.port = port
        self.health = health  # grpc_health's servicer (None without grpcio-health-checking)
        self._stopped = threading.Event()

    def draining(self) -> None:
        """Tell health checkers that this server is going away (NOT_SERVING, for good), and
        end their Watch streams after that answer: a watcher must not hold the graceful
        stop for its whole grace period."""
        if self.health is not None:
            self.health.enter_graceful_shutdown()
            self.health.end_watches()

    def stop(self, grace: float | None = DEFAULT_GRACE) -> None:
        """Stop accepting; let in-flight RPCs run for ``grace`` seconds, then cancel them
        (health checkers are told NOT_SERVING first)."""
        self.draining()
        self.server.stop(grace).wait()
        self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the server has stopped; True if it has."""
        return self._stopped.wait(timeout)

    def serve_forever(
        self, grace: float = DEFAULT_GRACE, *, ready: Callable[[], None] | None = None
    ) -> int:
        """Serve until SIGINT or SIGTERM (or :meth:`stop` from another thread), then stop
        gracefully; the signal's number (0 without one). The handlers are installed only on
        the main thread, and the previous ones are back before the graceful stop, so a
        second signal during it acts as it would have (Ctrl-C twice ends the process).
        ``ready`` runs once the handlers are in place (``serve`` says "listening on" there:
        a supervisor that signals as soon as it reads that line gets a graceful stop)."""
        got: list[int] = []

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            got.append(signum)
            self._stopped.set()

        previous = {}
        if threading.current_thread() is threading.main_thread():  # only it may take signals
            previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            if ready is not None:
                ready()
            # a bounded wait, again and again: a signal the kernel hands to another thread
            # (grpc's, the pools') only flags it for the main thread, and a main thread
            # blocked in an endless wait would never wake to run the handler (seen: a
            # SIGTERM that never stopped the daemon)
            while not self._stopped.wait(SIGNAL_POLL):
                pass
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        self.draining()
        self.server.stop(grace).wait()
        return got[0] if got else 0


def open_engine(
    home: str | os.PathLike[str] | None,
    *,
    store: str = "file",
    runtime: str = DEFAULT_RUNTIME,
    model: str | None = None,
    store_url: str | None = None,
    allow_unsynced: bool = False,
    key_file: str | None = None,
    models: Mapping[str, str] | None = None,
) -> Sessions:
    """The server's one engine: on the file store under ``home`` (or the store
    ``store_url``, ``AGENTSESSIONS_STORE`` names), on an in-memory store that lives as long
    as the engine (``store="memory"``), or on the JetStream store ``store`` names
    (``nats://...``; ``allow_unsynced`` as the CLI's ``--allow-unsynced``). ``key_file``:
    the master key of encryption at rest (else ``AGENTSESSIONS_KEY_FILE``, else
    ``AGENTSESSIONS_MASTER_KEY``), for whichever store. ``models``: the operator's model
    catalog, NAME -> SPEC, over the configuration file's (:mod:`agentsessions.models.catalog`)."""
    from agentsessions.sessions.local import open_local

    if store.startswith(("nats://", "tls://")):
        return open_local(
            home, runtime=runtime, model=model, store_url=store, allow_unsynced=allow_unsynced,
            key_file=key_file, models=models,
        )  # fmt: skip
    if store == "file":
        return open_local(
            home, runtime=runtime, model=model, store_url=store_url, allow_unsynced=allow_unsynced,
            key_file=key_file, models=models,
        )  # fmt: skip
    if store == "memory":
        from agentsessions.sessions.inmemory import open_in_memory

        return open_in_memory(home, runtime=runtime, model=model, key_file=key_file, models=models)
    raise InvalidArgumentError(
        f"invalid store {store!r}: expected file, memory or nats://HOST:PORT"
    )


def parse_listen(listen: str) -> tuple[str, bool]:
    """The grpc address of ``HOST:PORT`` or ``unix:///path``, and whether it is a Unix socket."""
    if listen.startswith("unix:"):
        path = listen.removeprefix("unix://") if listen.startswith("unix://") else listen[5:]
        if not path or not path.startswith("/"):
            raise InvalidArgumentError(
                f"invalid listen address {listen!r}: a Unix socket needs an absolute path",
                hint="for example unix:///tmp/agentsessions.sock",
            )
        return f"unix://{path}", True
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise InvalidArgumentError(
            f"invalid listen address {listen!r}: expected HOST:PORT or unix:///path",
            hint="for example 127.0.0.1:7443 (port 0: any free port)",
        )
    return listen, False


def build_server(
    engine: Sessions,
    listen: str,
    *,
    credentials: grpc.ServerCredentials | None = None,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    scope: Callable[[grpc.ServicerContext], Sessions] | None = None,
    extra_services: Sequence[Callable[[grpc.Server], None]] = (),
    options: Sequence[tuple[str, Any]] = (),
) -> RunningServer:
    """Serve ``engine`` as ``agentsessions.v1.Sessions`` on ``listen``, started.

    ``credentials`` None is an insecure port. The caller owns ``engine``: stop the server,
    then close the engine (which waits for running turns)."""
    address, is_unix = parse_listen(listen)
    admitted = any(isinstance(i, Admission) for i in interceptors)
    workers = UNARY_WORKERS if admitted else UNARY_WORKERS + DEFAULT_MAX_STREAMS
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc"),
        # the wire checks innermost: their deserializer is the one every handler carries
        interceptors=[RequestObserver(), *interceptors, WireChecks()],
        options=list(options),
        maximum_concurrent_rpcs=MAX_CONCURRENT_RPCS,
    )
    recording = _Recording(server)
    service.add_to_server(recording, engine, scope)  # type: ignore[arg-type]
    for add in extra_services:
        add(recording)  # type: ignore[arg-type]
    health = _add_health_and_reflection(server, recording.services)
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError:  # grpc raises this when it cannot bind (its text says little more)
        port = 0
    if port == 0:  # grpc's answer for an address it could not bind (a Unix socket gives 1)
        raise UnavailableError(
            f"cannot listen on {listen}: the address is in use or not available here",
            hint="choose another address (port 0: any free port)",
            param="listen_taken",
        )
    server.start()
    if is_unix:
        return RunningServer(server, address, 0, health)
    host = address.rpartition(":")[0]
    return RunningServer(server, f"{host}:{port}", port, health)


class _Recording:
    """A server as the generated ``add_*_to_server`` functions see it, noting the name of
    each service they register (for health and reflection)."""

    def __init__(self, server: grpc.Server) -> None:
        self._server = server
        self.services: list[str] = []

    def add_registered_method_handlers(self, name: str, handlers: Any) -> None:
        self.services.append(name)
        self._server.add_registered_method_handlers(name, handlers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)


def _add_health_and_reflection(server: grpc.Server, services: Sequence[str]) -> Any | None:
    """The standard health service (each of ``services`` and the server as a whole, "",
    SERVING) and server reflection over them; the health servicer. Without the packages
    (grpcio-health-checking, grpcio-reflection: the ``grpc`` extra) the server runs without
    them and says so in its log."""
    try:
        from grpc_health.v1 import health, health_pb2, health_pb2_grpc
        from grpc_reflection.v1alpha import reflection
    except ImportError:
        LOG.warning("no health or reflection service: install agentsessions[grpc]")
        return None

    class Health(health.HealthServicer):  # type: ignore[misc]
        """grpc's health servicer, whose Watch streams the server can end, and which sends
        outside its lock: grpc_health's own ``set`` sends to each watcher while holding the
        lock that a closing watcher's callback (run by grpc's thread) needs, and a send
        waits for that thread, so a stop while watchers close could deadlock."""

        _gracefully_shutting_down: bool  # grpc_health's own flag, set in its __init__

        def set(self, name: str, status: Any) -> None:
            with self._lock:
                if self._gracefully_shutting_down:
                    return
                self._server_status[name] = status
                callbacks = list(self._send_response_callbacks.get(name, ()))
            for callback in callbacks:
                callback(health_pb2.HealthCheckResponse(status=status))

        def enter_graceful_shutdown(self) -> None:
            with self._lock:
                if self._gracefully_shutting_down:
                    return
                names = list(self._server_status)
            for name in names:
                self.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
            with self._lock:
                self._gracefully_shutting_down = True

        def end_watches(self) -> None:
            # grpc_health keeps each watcher's callback here; None ends its stream
            with self._lock:
                callbacks = [cb for group in self._send_response_callbacks.values() for cb in group]
            for callback in callbacks:
                callback(None)

    # a Watch holds no worker thread (the interceptors leave it unwrapped: NOT_WRAPPED)
    servicer = Health(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    for name in ("", *services):
        servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    names = (*services, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    return servicer
