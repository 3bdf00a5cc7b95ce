"""The commit path's publisher: a few lines of the NATS protocol on plain blocking sockets.

A commit is one JetStream publish, awaited. Through nats-py (asyncio) that costs about
seven event-loop iterations per publish (its flusher task, the read loop, the reply
subscription's task, the caller's task), on top of the server's answer: the raw publish
on a socket took 296 us where the same publish in nats-py's loop took 414 us, and a store
commit's CPU fell from ~180 to ~110 us with this publisher (``bench/jetstream_commit.py``,
``bench/jetstream_rates.py``: "raw R1"). So the one write of the commit path goes here,
in the calling thread, and everything else (streams, keys, reads, follow, fences, the
reads that resolve an unknown outcome) stays on nats-py.

What a publish does: ``HPUB subject reply hdr_len total_len`` with the caller's headers
(the ``Nats-Msg-Id`` and the CAS ``Nats-Expected-Last-Subject-Sequence``, unchanged),
then read until the answer on its own reply subject (``<inbox>.<n>``, one subscription
per connection), answering the server's PINGs. The answer is parsed as nats-py's is
(``acks.parse``: a sequence, an API error code, or 503 no responders), so the caller's
rules for 10071, 10164 and elections are the same whichever client published.

What can go wrong, and what the caller is told:

- no server of the list accepts a connection: :class:`Unreached` (nothing was sent);
- the connection breaks, or the deadline passes, after the message went out:
  :class:`~agentsessions.journal.stores.jetstream.loop.OutcomeUnknown` (it may have
  landed: the caller retries with the same Msg-Id or reads), and that connection is
  dropped, so no late answer is ever taken for another publish's;
- the server refuses the message (``-ERR``, e.g. a permissions violation), or it is over the
  server's ``max_payload`` (refused before it is sent, as nats-py does): UnavailableError;
- the server asks for TLS or credentials: :class:`NotLean`, and the store publishes through
  nats-py from then on (which honours them); a URL with credentials or the ``tls://``
  scheme never comes here (:func:`usable`).

Connections are pooled: a publish takes an idle one (or opens one), so threads committing
different sessions have their publishes in flight together, each on its own socket. The
servers are the store URL's list, tried in turn from the last that answered (a cluster's
node that goes down is left for the next).
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import urllib.parse
from typing import Any

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream.acks import Ack, parse
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.loop import OutcomeUnknown

_READ = 65536
_MAX_IDLE = 64  # idle connections kept for later publishes (more are closed when returned)
_CONNECT = {
    "verbose": False, "pedantic": False, "headers": True, "no_responders": True,
    "protocol": 1, "lang": "python-agentsessions", "version": "1",
}  # fmt: skip


class Unreached(Exception):
    """No server of the list took a connection: nothing was sent."""


class NotLean(Exception):
    """The server asks for what this publisher does not do (TLS, credentials)."""


def usable(options: JetStreamOptions, server_info: dict[str, Any]) -> bool:
    """Whether the commit path may publish here: a plain ``nats://`` URL without
    credentials, to servers that ask for neither TLS nor authentication, with headers."""
    if options.url.partition("://")[0] != "nats" or "@" in options.url:
        return False
    if server_info.get("tls_required") or server_info.get("auth_required"):
        return False
    return bool(server_info.get("headers"))


class _Connection:
    """One blocking socket to one server, subscribed to its own reply inbox."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buf = bytearray()
            line = self._line()
            if not line.startswith(b"INFO "):
                raise Unreached(f"{host}:{port} is not a NATS server")
            info = json.loads(line[5:])
            if info.get("tls_required") or info.get("auth_required") or not info.get("headers"):
                raise NotLean(f"{host}:{port} asks for TLS or credentials")
            self.max_payload = int(info.get("max_payload") or 0)  # 0: the server names none
            self.inbox = f"_INBOX.{secrets.token_hex(11)}."
            self.count = 0
            self.sock.sendall(
                b"CONNECT " + json.dumps(_CONNECT, separators=(",", ":")).encode()
                + b"\r\nSUB " + self.inbox.encode() + b"* 1\r\nPING\r\n"
            )  # fmt: skip
            self._reply("")  # the PONG: the server took CONNECT and SUB
        except BaseException:
            self.sock.close()
            raise

    def _fill(self) -> None:
        got = self.sock.recv(_READ)
        if not got:
            raise ConnectionError("the NATS server closed the connection")
        self.buf += got

    def _line(self) -> bytes:
        while (end := self.buf.find(b"\r\n")) < 0:
            self._fill()
        line = bytes(self.buf[:end])
        del self.buf[: end + 2]
        return line

    def _take(self, size: int) -> bytes:
        while len(self.buf) < size + 2:
            self._fill()
        out = bytes(self.buf[:size])
        del self.buf[: size + 2]
        return out

    def _reply(self, reply: str) -> tuple[dict[str, str] | None, bytes]:
        """Read until the message on ``reply`` (``""``: until a PONG); its headers and body."""
        while True:
            line = self._line()
            if line.startswith((b"MSG ", b"HMSG ")):
                parts = line.split(b" ")
                if line.startswith(b"HMSG "):
                    hdr_len, total = int(parts[-2]), int(parts[-1])
                    raw = self._take(total)
                    headers, body = _headers(raw[:hdr_len]), raw[hdr_len:]
                else:
                    headers, body = None, self._take(int(parts[-1]))
                if reply and parts[1].decode() == reply:
                    return headers, body
            elif line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line == b"PONG":
                if not reply:
                    return None, b""
            elif line.startswith(b"-ERR"):
                raise _Refused(line[4:].strip().strip(b"'").decode(errors="replace"))
            # +OK and INFO (a cluster's new routes) ask nothing of a publisher

    def publish(
        self, subject: str, body: bytes, headers: dict[str, str]
    ) -> tuple[dict[str, str] | None, bytes]:
        """Send one message; its answer's headers and body (the socket's timeout bounds
        each read)."""
        self.count += 1
        reply = f"{self.inbox}{self.count}"
        head = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        hdr = head.encode()
        size = len(hdr) + len(body)
        if self.max_payload and size > self.max_payload:
            # refused here, as nats-py refuses it, and never sent: the server would answer
            # -ERR and close the connection, and a reset racing that answer could lose it,
            # making a certain refusal look like an unknown outcome
            raise _Refused(f"{size} bytes, over the server's max_payload of {self.max_payload}")
        line = f"HPUB {subject} {reply} {len(hdr)} {size}\r\n".encode()
        self.sock.sendall(b"".join((line, hdr, body, b"\r\n")))
        return self._reply(reply)

    def stale(self) -> bool:
        """Whether the server closed this idle connection (answering its PINGs meanwhile)."""
        try:
            self.sock.setblocking(False)
            try:
                while True:
                    got = self.sock.recv(_READ)
                    if not got:
                        return True
                    self.buf += got
            except BlockingIOError:
                pass
            finally:
                self.sock.setblocking(True)
            while (end := self.buf.find(b"\r\n")) >= 0:  # idle: only PINGs or INFO are due
                line = bytes(self.buf[:end])
                del self.buf[: end + 2]
                if line == b"PING":
                    self.sock.sendall(b"PONG\r\n")
                elif line.startswith(b"-ERR"):
                    return True
            return False
        except OSError:
            return True


class _Refused(Exception):
    """The server's ``-ERR`` line."""


def _headers(raw: bytes) -> dict[str, str]:
    """A header block as nats-py reads it: a status line's code as ``Status``."""
    lines = raw.decode(errors="replace").split("\r\n")
    out: dict[str, str] = {}
    status = lines[0][len("NATS/1.0") :].strip()
    if status:
        code, _, description = status.partition(" ")
        out["Status"] = code
        if description:
            out["Description"] = description
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


class LeanPublisher:
    """The commit path's publishes to the servers of one store URL (module docstring)."""

    def __init__(self, options: JetStreamOptions) -> None:
        self._url = options.url
        self._servers = [_address(server) for server in options.servers]
        self._connect_timeout = options.connect_timeout
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()  # guards _idle, _next, _closed
        self._next = 0  # the server to try first: the last that answered
        self._closed = False

    def publish(self, subject: str, body: bytes, headers: dict[str, str], timeout: float) -> Ack:
        """Publish and wait up to ``timeout`` seconds for the answer (module docstring for
        what each failure raises)."""
        conn = self._take()
        try:
            conn.sock.settimeout(timeout)
            got_headers, data = conn.publish(subject, body, headers)
        except _Refused as exc:
            conn.sock.close()
            raise UnavailableError(
                f"the NATS server at {self._url} refused a commit on {subject}: {exc}"
            ) from None
        except (OSError, ValueError) as exc:  # a timeout is an OSError too
            conn.sock.close()
            raise OutcomeUnknown(f"no answer to a commit on {subject}: {exc}") from None
        except BaseException:  # a Ctrl-C mid-read: its answer must not meet another publish
            conn.sock.close()
            raise
        self._give(conn)
        return parse(got_headers, data)  # ValueError: an answer that is not an ack

    def _take(self) -> _Connection:
        with self._lock:
            if self._closed:  # as nats-py's closed connection refuses a publish
                raise UnavailableError(f"lost the NATS connection to {self._url}: closed")
            while self._idle:
                conn = self._idle.pop()
                if not conn.stale():
                    return conn
                conn.sock.close()
            first = self._next
        failures = []
        for k in range(len(self._servers)):
            at = (first + k) % len(self._servers)
            host, port = self._servers[at]
            try:
                conn = _Connection(host, port, self._connect_timeout)
            except _Refused as exc:
                failures.append(f"{host}:{port}: {exc}")
                continue
            except (OSError, ValueError, Unreached) as exc:
                failures.append(f"{host}:{port}: {exc}")
                continue
            with self._lock:
                self._next = at
            return conn
        raise Unreached("; ".join(failures))

    def _give(self, conn: _Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.sock.close()

    def close(self) -> None:
        """Close the idle connections; one in use is closed when its publish ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.sock.close()


def _address(server: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(server)
    return parts.hostname or "127.0.0.1", parts.port or 4222
