"""The webhook receiver: a small HTTP/1.1 server on a host and port or a Unix socket.

It knows HTTP only: a POST's body (bounded, ``Content-Length`` required) and headers go to an
:class:`Endpoint` (GitHub's is :class:`~agentsessions.producers.github.GitHubEndpoint`),
whose :class:`Response` is written back as JSON. Each connection is served on a thread of its
own (stdlib ``socketserver``), so a delivery waiting for its turn's INPUT to be durable holds
only its own connection.

Invariants: an endpoint never sees a body over :data:`MAX_BODY` (413) or a body shorter
than its ``Content-Length`` (the connection is dropped); an endpoint that raises is a 500
with one line in the log, never a dead receiver; :meth:`Receiver.close` stops accepting and
waits for the requests in flight.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast

from agentsessions.errors import InvalidArgumentError, StorageError

MAX_BODY = 25 * 1024 * 1024
"""The largest body accepted: GitHub caps a webhook payload at 25 MB."""
IDLE_TIMEOUT = 60.0
"""Seconds a connection may stall mid-request or sit idle between requests."""


@dataclass(frozen=True)
class Request:
    """One POSTed delivery: headers with lower-case names, the exact body bytes."""

    path: str
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class Response:
    """The status and JSON object to answer with."""

    status: int
    body: Mapping[str, Any] = field(default_factory=dict)


class Endpoint(Protocol):
    """What a receiver hands each POST to; answers, never raises on purpose."""

    def handle(self, request: Request) -> Response: ...


def parse_listen(listen: str) -> tuple[str, int] | str:
    """``HOST:PORT`` as (host, port), or ``unix:///PATH`` as its absolute path."""
    if listen.startswith("unix:"):
        path = listen.removeprefix("unix://") if listen.startswith("unix://") else listen[5:]
        if not path.startswith("/"):
            raise InvalidArgumentError(
                f"invalid listen address {listen!r}: a Unix socket needs an absolute path",
                hint="for example unix:///tmp/webhook.sock",
            )
        return path
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise InvalidArgumentError(
            f"invalid listen address {listen!r}: expected HOST:PORT or unix:///PATH",
            hint="for example 127.0.0.1:8090 (port 0: any free port)",
        )
    return host.strip("[]"), int(port)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentsessions-producer"
    timeout = IDLE_TIMEOUT  # a client that stalls mid-request or idles is let go

    @property
    def context(self) -> _Context:
        return cast(_Context, self.server)

    def do_POST(self) -> None:
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self._answer(Response(411, {"error": "Content-Length is required"}))
            return
        if int(length) > MAX_BODY:
            self.close_connection = True  # the body is never read
            self._answer(Response(413, {"error": f"the body is over {MAX_BODY} bytes"}))
            return
        try:
            body = self.rfile.read(int(length))
        except OSError:  # the client stalled past the timeout, or reset
            body = b""
        if len(body) < int(length):
            self.close_connection = True  # the client went away mid-body: nothing to answer
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        with self.context.busy:
            try:
                response = self.context.endpoint.handle(Request(self.path, headers, body))
            except Exception as exc:  # an endpoint bug must not take the receiver down
                self.context.log(f"internal error on {self.path}: {type(exc).__name__}: {exc}")
                response = Response(500, {"error": "internal error"})
            self._answer(response)

    def do_GET(self) -> None:
        self._answer(Response(405, {"error": "webhooks are POSTed"}))

    do_PUT = do_DELETE = do_PATCH = do_GET

    def _answer(self, response: Response) -> None:
        data = json.dumps(dict(response.body), ensure_ascii=False).encode("utf-8") + b"\n"
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if response.status == 405:
            self.send_header("Allow", "POST")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the producer logs each delivery's outcome itself."""

    def address_string(self) -> str:
        return self.context.name  # a Unix socket's peer has no address


class _Context:
    """What a handler reads off its server: set once, before it serves; and the count of
    requests in flight (a connection idle between keep-alive requests is not one)."""

    endpoint: Endpoint
    log: Callable[[str], None]
    name: str
    busy: InFlight


class InFlight:
    """Counts the requests being answered; :meth:`wait_idle` until there are none."""

    def __init__(self) -> None:
        self._count, self._idle = 0, threading.Condition()

    def __enter__(self) -> None:
        with self._idle:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    def wait_idle(self) -> None:
        with self._idle:
            self._idle.wait_for(lambda: self._count == 0)


class _TcpServer(_Context, ThreadingHTTPServer):
    # a connection's thread may sit idle between keep-alive requests for as long as its
    # client likes: close() waits for the requests in flight (InFlight), not for those
    daemon_threads = True
    block_on_close = False


class _Tcp6Server(_TcpServer):
    address_family = socket.AF_INET6


class _UnixServer(_Context, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False


class Receiver:
    """An HTTP server handing each POST to ``endpoint``, listening once made."""

    def __init__(
        self, listen: str, endpoint: Endpoint, *, log: Callable[[str], None] = lambda _: None
    ) -> None:
        where = parse_listen(listen)
        server: _TcpServer | _UnixServer
        try:
            if isinstance(where, str):
                _clear_stale_socket(where)
                server = _UnixServer(where, _Handler)
                self.address = f"unix://{where}"
            else:
                server = (_Tcp6Server if ":" in where[0] else _TcpServer)(where, _Handler)
                host, port = str(server.server_address[0]), int(server.server_address[1])
                self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        except OSError as exc:
            raise StorageError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
        server.endpoint, server.log, server.name = endpoint, log, self.address
        server.busy = InFlight()
        self._server = server
        self._unix = where if isinstance(where, str) else ""
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        """Serve until :meth:`close` (from another thread or a signal handler's thread)."""
        self._server.serve_forever(poll_interval=0.2)

    def start(self) -> Receiver:
        """Serve on a thread of its own (tests, embedding); returns self."""
        self._thread = threading.Thread(target=self.serve_forever, name="webhook-receiver")
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop accepting, wait for the requests in flight, release the address."""
        self._server.shutdown()
        self._server.busy.wait_idle()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        if self._unix:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._unix)

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _clear_stale_socket(path: str) -> None:
    """Remove a Unix socket a dead receiver left at ``path``; refuse a live one or a file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise InvalidArgumentError(f"{path} exists and is not a socket: refusing to replace it")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            os.unlink(path)  # nobody listens: a receiver that died left it
            return
    raise InvalidArgumentError(f"{path}: another receiver is listening there")


SIGNAL_POLL = 0.5
"""Seconds between the main thread's checks for a stop: a signal the kernel hands another
thread only flags it for the main thread, which must wake to run the handler."""


def serve_until_signal(receiver: Receiver, ready: Callable[[], None] | None = None) -> int:
    """Serve ``receiver`` until SIGINT or SIGTERM, then close it (requests in flight end);
    the signal's number. The previous handlers are back before the close, so a second
    signal acts as it would have (Ctrl-C twice ends the process). ``ready`` runs once the
    handlers are in place."""
    import signal

    got: list[int] = []
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        got.append(signum)
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():  # only it may take signals
        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    receiver.start()
    try:
        if ready is not None:
            ready()
        while not stop.wait(SIGNAL_POLL):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        receiver.close()
    return got[0] if got else 0
