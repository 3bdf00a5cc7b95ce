"""The floors under bench/grpc.py: what gRPC itself costs on this machine, with no daemon.

    python bench/grpc_floor.py serve        # a bare echo server: prints its port, serves
                                            # until SIGTERM (bench/grpc.py starts it)
    python bench/grpc_floor.py turns HOME   # a bare turn server over an engine on HOME

A bare echo server in its own process, on grpc's sync API as the daemon is (a thread pool,
no interceptors, no engine), answers one unary method with the bytes it was sent. A turn
over the wire cannot cost less than the turn itself plus one such call carrying its
reply, so against the in-process engine:

- round trip: (in-process turn + bare echo call) / in-process turn is the lowest
  ``exec`` ratio any Python gRPC daemon could print in that run;
- load: when the clients and the daemon share the machine's cores, a turn over the wire
  costs the engine's work plus the call's, so the turns/s over the wire are at most
  1 / (1 / in-process + 1 / bare calls) at the same concurrency.

A bare turn server (``turns``) is the second floor: the same sync server with an engine of
this project behind one unary method, no daemon code at all (no interceptors, no access
checks, no conversion of frames: the turn's frames are iterated on the handler's thread as
an in-process caller iterates them, and the reply is its session's uid in
:data:`REPLY_BYTES`). What separates it from the echo is grpc's threads meeting the
engine's (the handler waits for the turn on the engine's thread under one GIL); what
separates the daemon from it is the daemon's own code. A daemon on grpc's sync server that
runs its turns as this engine's ``exec`` does (on the engine's thread, frames handed to the
handler's) cannot print better ratios than this floor in the same run.

Nothing is asserted; the figures are printed by bench/grpc.py beside the daemon's.
"""

from __future__ import annotations

import os
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
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
# bench/grpc.py is beside this file: its directory must not shadow the grpc package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import grpc  # noqa: E402

METHOD = "/bench.Echo/Echo"
TURN_METHOD = "/bench.Turns/Turn"
REPLY_BYTES = 2048
"""About the size of an echo turn's ExecQuick reply (two session frames, five records)."""


def _same(data: bytes) -> bytes:
    return data


# The signals that stop a floor server. sigwait takes a signal only while it is blocked:
# unblocked, SIGTERM's default action ends the process at once (the engine never closed).
STOPS = {signal.SIGTERM, signal.SIGINT}


def _block_stops() -> None:
    """Block :data:`STOPS` before any thread starts (grpc's, the engine's), so every thread
    inherits the mask and the signals wait for the main thread's sigwait."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)


def serve() -> None:
    """Serve the echo method on a free loopback port; print the port; stop on SIGTERM."""
    _block_stops()
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo",
        {"Echo": grpc.unary_unary_rpc_method_handler(lambda req, _ctx: req, _same, _same)},
    )
    _serve_until_stopped(handler)


def _serve_until_stopped(handler: grpc.GenericRpcHandler) -> None:
    """Serve ``handler`` on a free loopback port (32 workers, both floors alike);
    print the port; return once SIGTERM or SIGINT stopped the server and its calls ended."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    signal.sigwait(STOPS)
    server.stop(None).wait()


def serve_turns(home: str) -> None:
    """Serve one turn a unary call on an engine under ``home`` (request: ``UID\\nTEXT``, an
    empty uid makes a session; reply: the session's uid in :data:`REPLY_BYTES`); print the
    port; stop on SIGTERM, then close the engine."""
    _block_stops()
    sys.path.insert(0, str(HERE.parent))
    import agentsessions

    engine = agentsessions.open(Path(home))

    def turn(request: bytes, _context: grpc.ServicerContext) -> bytes:
        uid, _, text = request.decode().partition("\n")
        last = None
        for frame in engine.exec(uid or None, [text]):  # every frame, as a caller reads them
            last = frame
        assert last is not None
        return last.uid.encode().ljust(REPLY_BYTES)

    handler = grpc.method_handlers_generic_handler(
        "bench.Turns", {"Turn": grpc.unary_unary_rpc_method_handler(turn, _same, _same)}
    )
    _serve_until_stopped(handler)
    engine.close()


class Served(NamedTuple):
    """A floor server in a process of its own: where it listens, and its pid (its CPU).
    (A NamedTuple: bench/grpc.py loads this file by path, outside sys.modules, where a
    dataclass cannot resolve its annotations.)"""

    address: str
    pid: int


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` (all its threads) has used so far; NaN
    where /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def context_switches(pid: int) -> int:
    """Context switches process ``pid`` has made so far, voluntary and not, summed over its
    live threads (a thread that has ended takes its count with it; the servers here keep
    their pools' threads); 0 where /proc cannot tell."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            lines = Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines()
        except OSError:
            continue  # the thread ended meanwhile
        for line in lines:
            if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                total += int(line.split()[1])
    return total


@contextmanager
def _served(*args: str) -> Iterator[Served]:
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), *args], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield Served(f"127.0.0.1:{proc.stdout.readline().strip()}", proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


@contextmanager
def echo_server() -> Iterator[str]:
    """The address of a bare echo server in a process of its own, for the ``with`` block."""
    with _served("serve") as served:
        yield served.address


@contextmanager
def turn_server(home: Path) -> Iterator[Served]:
    """A bare turn server over an engine on ``home``, in a process of its own."""
    with _served("turns", str(home)) as served:
        yield served


Caller = Callable[[str], tuple[grpc.Channel, Callable[[], bytes]]]


def caller(address: str) -> tuple[grpc.Channel, Callable[[], bytes]]:
    """A channel of its own and one echo call of :data:`REPLY_BYTES` on it."""
    channel = grpc.insecure_channel(address)
    echo = channel.unary_unary(METHOD, request_serializer=_same, response_deserializer=_same)
    payload = b"x" * REPLY_BYTES
    return channel, lambda: echo(payload)


def turn_caller(address: str) -> tuple[grpc.Channel, Callable[[], bytes]]:
    """A channel of its own and one turn on a session of its own (made by its first call)."""
    channel = grpc.insecure_channel(address)
    call = channel.unary_unary(TURN_METHOD, request_serializer=_same, response_deserializer=_same)
    uid = [b""]

    def turn() -> bytes:
        reply: bytes = call(uid[0] + b"\nturn")
        uid[0] = reply.rstrip()
        return reply

    return channel, turn


WARM_UP = 20
"""Calls :func:`round_trip` makes before it measures."""


def round_trip(address: str, calls: int, make: Caller = caller) -> float:
    """Median seconds of one call (``make``: an echo's, else a turn's), after a warm-up."""
    channel, call = make(address)
    with channel:
        for _ in range(WARM_UP):
            call()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def load(address: str, clients: int, calls: int, make: Caller = caller) -> float:
    """Calls/s of ``clients`` threads, each on its own channel (``make``: as round_trip's)."""
    ready = [make(address) for _ in range(clients)]
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
    if sys.argv[1:] == ["serve"]:
        serve()
    elif sys.argv[1:2] == ["turns"] and len(sys.argv) == 3:
        serve_turns(sys.argv[2])
    else:
        raise SystemExit(__doc__)
