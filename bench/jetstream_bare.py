"""The server's own ceiling for ``bench/jetstream_rates.py``: bare publishes, no store.

**bare** (nats-py): what a synced JetStream server acknowledges when nothing of this
package runs: the same stream settings the store creates (``conn.stream_config``), each
commit one message of the same events' bytes with the same headers the store sends
(``Nats-Msg-Id`` and the CAS ``Nats-Expected-Last-Subject-Sequence``), each publisher
awaiting its ack before its next publish, all publishers as tasks on ONE connection and
one event loop (no threads, no journal). With several sessions, ``streams`` spreads them
over that many streams (one stream fsyncs its messages one at a time; streams fsync side
by side). The store's rows against these are what the store itself costs; these against
the file loop are the server's as nats-py reaches it.

**raw** (the floor): the same messages from a synchronous client on a raw socket
(:class:`RawPublisher`: INFO, CONNECT, SUB a reply inbox, then per commit one ``HPUB``
and a blocking read of its ack, PINGs answered), each session a thread with a socket of
its own, as a store's blocking ``append`` has it. No event loop, no future, no thread hop:
what the server's acknowledgement costs a Python caller when nothing else stands in the
way. The store cannot beat this row whatever its client; only the server (or the disk)
could.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import threading
import time
from typing import Any

from agentsessions.journal.stores.jetstream.conn import JetStreamOptions, stream_config


async def _stream(js: Any, options: JetStreamOptions) -> None:
    from nats.js import api

    config = stream_config(options)
    config["storage"] = api.StorageType(config["storage"])
    await js.add_stream(api.StreamConfig(**config))


async def _make_streams(js: Any, base: JetStreamOptions, streams: int) -> list[str]:
    """``streams`` fresh streams, as the store creates them; their subject prefixes."""
    token = secrets.token_hex(4)
    prefixes = [f"bare{token}s{k}" for k in range(streams)]
    for k, prefix in enumerate(prefixes):
        await _stream(js, JetStreamOptions(url=base.url, stream=f"BARE{token}S{k}", prefix=prefix))
    return prefixes


async def _connect(url: str) -> tuple[Any, JetStreamOptions]:
    import nats

    async def quiet(exc: Exception) -> None:
        del exc

    base = JetStreamOptions.parse(url, allow_unsynced=True)
    return await nats.connect(servers=base.servers, error_cb=quiet), base


async def _streams(url: str, streams: int) -> list[str]:
    nc, base = await _connect(url)
    try:
        return await _make_streams(nc.jetstream(timeout=base.timeout), base, streams)
    finally:
        await nc.close()


async def _rate(url: str, blob: bytes, sessions: int, commits: int, streams: int) -> float:
    nc, base = await _connect(url)
    try:
        js = nc.jetstream(timeout=base.timeout)
        prefixes = await _make_streams(js, base, streams)

        async def publisher(n: int, count: int, expect: list[int]) -> None:
            subject = f"{prefixes[n % streams]}.j.s{n}"
            for _ in range(count):
                headers = {
                    "Nats-Msg-Id": secrets.token_hex(20),
                    "Nats-Expected-Last-Subject-Sequence": str(expect[n]),
                }
                ack = await js.publish(subject, blob, headers=headers)
                expect[n] = int(ack.seq)

        expect = [0] * sessions
        await asyncio.gather(*(publisher(n, 1, expect) for n in range(sessions)))  # warm
        t0 = time.perf_counter()
        await asyncio.gather(*(publisher(n, commits, expect) for n in range(sessions)))
        return sessions * commits / (time.perf_counter() - t0)
    finally:
        await nc.close()


def bare_rate(url: str, blob: bytes, sessions: int, commits: int, streams: int = 1) -> float:
    """Commits/s of ``sessions`` bare publishers of ``blob`` (``commits`` each) on one
    connection, over ``streams`` fresh streams (see the module docstring)."""
    return asyncio.run(_rate(url, blob, sessions, commits, streams))


# -- the floor: a synchronous NATS client on a raw socket -------------------------------------
class RawPublisher:
    """The least a synchronous Python client can do per commit: one ``HPUB`` with the
    store's headers on a blocking socket, then read until its ack's ``MSG`` (answering
    ``PING``). No asyncio, no threads hopped, no futures: what the server's acknowledgement
    costs a Python caller when nothing else stands in the way."""

    def __init__(self, url: str) -> None:
        host, _, port = url.partition("://")[2].split(",")[0].rpartition(":")
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        if not self._line().startswith(b"INFO "):
            raise RuntimeError("not a NATS server")
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "protocol": 1, "lang": "python-raw", "version": "0"}  # fmt: skip
        self.inbox = f"_INBOX.{secrets.token_hex(11)}"
        self.sock.sendall(
            b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n"
            + f"SUB {self.inbox}.* 1\r\n".encode()
        )  # fmt: skip
        self._answer()  # the PONG to our PING: the server took CONNECT and SUB
        self.count = 0

    def _line(self) -> bytes:
        while (end := self.buf.find(b"\r\n")) < 0:
            got = self.sock.recv(65536)
            if not got:
                raise ConnectionError("the NATS server closed the connection")
            self.buf += got
        line = bytes(self.buf[:end])
        del self.buf[: end + 2]
        return line

    def _body(self, size: int) -> bytes:
        while len(self.buf) < size + 2:
            got = self.sock.recv(65536)
            if not got:
                raise ConnectionError("the NATS server closed the connection")
            self.buf += got
        body = bytes(self.buf[:size])
        del self.buf[: size + 2]
        return body

    def _answer(self) -> bytes:
        """The next message's body (a PONG: empty), answering the server's PINGs."""
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line == b"PONG":
                return b""
            elif line.startswith(b"-ERR"):
                raise RuntimeError(line.decode())
            elif line.startswith((b"MSG ", b"HMSG ")):
                return self._body(int(line.rsplit(b" ", 1)[1]))

    def publish(self, subject: str, blob: bytes, expect: int) -> int:
        """Publish ``blob`` with the store's headers, CAS at ``expect``; its stream seq."""
        self.count += 1
        headers = (
            f"NATS/1.0\r\nNats-Msg-Id: {secrets.token_hex(20)}\r\n"
            f"Nats-Expected-Last-Subject-Sequence: {expect}\r\n\r\n"
        ).encode()
        size = len(headers) + len(blob)
        head = f"HPUB {subject} {self.inbox}.{self.count} {len(headers)} {size}\r\n"
        self.sock.sendall(b"".join((head.encode(), headers, blob, b"\r\n")))
        answer = self._answer()
        seq = json.loads(answer[answer.find(b"{") :]).get("seq")  # an HMSG: headers first
        if not seq:
            raise RuntimeError(f"JetStream refused a publish: {answer[:200]!r}")
        return int(seq)

    def close(self) -> None:
        self.sock.close()


def raw_rate(url: str, blob: bytes, sessions: int, commits: int, streams: int = 1) -> float:
    """Commits/s of ``sessions`` threads, each its own :class:`RawPublisher` (socket),
    publishing ``blob`` ``commits`` times over ``streams`` fresh streams, each awaiting
    its ack: the floor of a synchronous Python client."""
    prefixes = asyncio.run(_streams(url, streams))
    pubs = [RawPublisher(url) for _ in range(sessions)]
    expect = [0] * sessions
    start = threading.Barrier(sessions + 1)
    errors: list[BaseException] = []

    def run(n: int, count: int) -> None:
        subject = f"{prefixes[n % streams]}.j.s{n}"
        try:
            for _ in range(count):
                expect[n] = pubs[n].publish(subject, blob, expect[n])
        except BaseException as exc:
            errors.append(exc)

    def timed(n: int) -> None:
        start.wait()
        run(n, commits)

    try:
        for n in range(sessions):
            run(n, 1)  # warm
        threads = [threading.Thread(target=timed, args=(n,)) for n in range(sessions)]
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    finally:
        for pub in pubs:
            pub.close()
    if errors:
        raise errors[0]
    return sessions * commits / elapsed


class BareSide:
    """A row of bare publishes for ``bench/jetstream_rates.py``: ``raw`` the synchronous
    floor (a thread and a socket per session), else nats-py (tasks on one connection);
    ``spread``: the sessions over a stream each. Measured whole by :meth:`rate`."""

    def __init__(self, name: str, url: str, blob: bytes, *, spread: bool, raw: bool) -> None:
        self.name, self.url, self.blob, self.spread, self.raw = name, url, blob, spread, raw

    def rate(self, sessions: int, commits: int) -> float:
        """Commits/s of ``sessions`` publishers of ``commits`` each, at once."""
        streams = sessions if self.spread else 1
        measure = raw_rate if self.raw else bare_rate
        return measure(self.url, self.blob, sessions, commits, streams)
