"""The floor under bench/grpc.py: what gRPC itself costs on this machine, with no daemon.

    python bench/grpc_floor.py serve     # a bare echo server: prints its port, serves
                                         # until SIGTERM (bench/grpc.py starts it)

A bare echo server in its own process, on grpc's sync API as the daemon is (a thread pool,
no interceptors, no engine), answers one unary method with the bytes it was sent. A turn
over the wire cannot cost less than the turn itself plus one such call carrying its
reply, so against the in-process engine:

- round trip: (in-process turn + bare echo call) / in-process turn is the lowest
  ``exec`` ratio any Python gRPC daemon could print in that run;
- load: when the clients and the daemon share the machine's cores, a turn over the wire
  costs the engine's work plus the call's, so the turns/s over the wire are at most
  1 / (1 / in-process + 1 / bare calls) at the same concurrency.

Nothing is asserted; the figures are printed by bench/grpc.py beside the daemon's.
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
# bench/grpc.py is beside this file: its directory must not shadow the grpc package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import grpc  # noqa: E402

METHOD = "/bench.Echo/Echo"
REPLY_BYTES = 2048
"""About the size of an echo turn's ExecQuick reply (two session frames, five records)."""


def _same(data: bytes) -> bytes:
    return data


def serve() -> None:
    """Serve the echo method on a free loopback port; print the port; stop on SIGTERM."""
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo",
        {"Echo": grpc.unary_unary_rpc_method_handler(lambda req, _ctx: req, _same, _same)},
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
    server.stop(None)


@contextmanager
def echo_server() -> Iterator[str]:
    """The address of a bare echo server in a process of its own, for the ``with`` block."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "serve"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        yield f"127.0.0.1:{proc.stdout.readline().strip()}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def caller(address: str) -> tuple[grpc.Channel, Callable[[], bytes]]:
    """A channel of its own and one echo call of :data:`REPLY_BYTES` on it."""
    channel = grpc.insecure_channel(address)
    echo = channel.unary_unary(METHOD, request_serializer=_same, response_deserializer=_same)
    payload = b"x" * REPLY_BYTES
    return channel, lambda: echo(payload)


def round_trip(address: str, calls: int) -> float:
    """Median seconds of one echo call, after a warm-up."""
    channel, call = caller(address)
    with channel:
        for _ in range(20):
            call()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def load(address: str, clients: int, calls: int) -> float:
    """Echo calls/s of ``clients`` threads, each on its own channel."""
    ready = [caller(address) for _ in range(clients)]
    for _, call in ready:
        call()

    def work(call: Callable[[], bytes]) -> None:
        for _ in range(calls):
            call()

    threads = [threading.Thread(target=work, args=(call,)) for _, call in ready]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    for channel, _ in ready:
        channel.close()
    return clients * calls / elapsed


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        raise SystemExit(__doc__)
    serve()
