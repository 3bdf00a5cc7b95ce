"""gRPC benchmarks (issues 10, 21): the daemon's cost over the engine it serves.

    python bench/grpc.py            # 200 turns for the round trip, 32 clients x 10 turns,
                                    # then 256 clients x 5 turns
    python bench/grpc.py --quick    # small sizes, for a smoke check
    python bench/grpc.py --json     # the figures as one JSON object

Two measurements, each against the same work in process, rounds interleaved, medians:

- round trip: one ``exec`` turn (echo, durable before it returns) through
  ``agentsessions.client`` to a real ``agentsessions serve`` process on a loopback port,
  against ``Sessions.exec`` on the in-process engine (both iterate every frame);
- load: 32 clients, each on its own channel and thread (in this process), running turns on
  32 sessions of that server, against 32 threads running the same turns on the in-process
  engine: turns/s; and, per turn of that load, the server's CPU and context switches (all
  its threads, from /proc), the daemon's beside the bare turn server's: at many clients a
  server's cost is its threads meeting under one GIL as much as its own code.

And the floors under both (grpc_floor.py): a bare gRPC echo server, no daemon, no engine,
the best ratios any Python gRPC daemon could print in the same run; and a bare turn server,
grpc's sync server over an engine of this project with no daemon code (no checks, no
conversions), the best ratios a daemon on grpc's sync server over this engine could print.

And one of the daemon alone: many clients (256), each on its own channel, thread and
session, all running turns at once: every turn must complete and every record each client
was sent must be the session's stored one (nothing lost, nothing doubled); the p99 of their
turn latencies is printed. The daemon runs with ``--max-streams`` above the client count
(the operator's bound on turns at once; its default, 64, would refuse the rest).

Each side has its own home on the file store (fsync'd appends). Nothing is asserted:
machines are shared and noisy; the ratios are the point.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# this file is named grpc.py: its own directory must not shadow the grpc package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

import importlib.util  # noqa: E402

import agentsessions  # noqa: E402
from agentsessions.client import dial  # noqa: E402
from agentsessions.sessions.api import Sessions  # noqa: E402
from agentsessions.sessions.values import RecordFrame  # noqa: E402

_spec = importlib.util.spec_from_file_location("grpc_floor", HERE / "grpc_floor.py")
assert _spec is not None and _spec.loader is not None
floor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floor)  # the bare gRPC echo that bounds both ratios from below

MANY = 256
MAX_STREAMS = 320  # the daemon's bound on turns at once: above MANY


@contextmanager
def engines() -> Iterator[tuple[Sessions, Sessions, int]]:
    """(in-process engine, client of a real ``agentsessions serve`` process, its pid), each
    on its own home: the daemon as deployed, so clients and server do not share one
    interpreter."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-grpc-") as tmp,
        agentsessions.open(Path(tmp) / "local") as local,
    ):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "agentsessions", "--home", str(Path(tmp) / "served"),
                "serve", "--listen", "127.0.0.1:0", "--no-auth",
                "--max-streams", str(MAX_STREAMS)]  # fmt: skip
        daemon = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        try:
            assert daemon.stdout is not None
            line = daemon.stdout.readline()
            if not line.startswith("listening on "):
                raise SystemExit(f"bench: agentsessions serve did not start: {line!r}")
            with dial(line.split()[-1]) as client:
                yield local, client, daemon.pid
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=120)


def _turn(sessions: Sessions, uid: str | None, text: str) -> str:
    last = None
    for frame in sessions.exec(uid, [text]):
        last = frame
    assert last is not None
    return last.uid


def round_trip(sessions: Sessions, turns: int) -> float:
    """Median seconds of one exec turn on one session."""
    uid = _turn(sessions, None, "warm up")
    times = []
    for n in range(turns):
        start = time.perf_counter()
        _turn(sessions, uid, f"turn {n}")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu_per_turn(pid: int, measure: Callable[[], float], turns: int) -> tuple[float, float, float]:
    """``measure()`` (a median), and the CPU seconds process ``pid`` (a server) and this
    process (its client) spent per turn of its ``turns``: CPU is less swayed than wall time
    by the machine's other load."""
    server, client = floor.cpu_seconds(pid), time.process_time()
    median = measure()
    server, client = floor.cpu_seconds(pid) - server, time.process_time() - client
    return median, server / turns, client / turns


def loaded(pid: int, measure: Callable[[], float], turns: int) -> tuple[float, float, float]:
    """``measure()`` (turns/s of a load), and the CPU seconds and context switches process
    ``pid`` (its server) spent per turn of its ``turns`` (warm-ups included): where a
    server's time goes at many clients, beside what its turns/s say."""
    cpu, switches = floor.cpu_seconds(pid), floor.context_switches(pid)
    rate = measure()
    cpu, switches = floor.cpu_seconds(pid) - cpu, floor.context_switches(pid) - switches
    return rate, cpu / turns, switches / turns


def load(make: Callable[[], Sessions], close: bool, clients: int, turns: int) -> float:
    """Turns/s of ``clients`` threads, each running ``turns`` turns on its own session
    through its own Sessions (``make()``: a client each, or the one shared engine)."""
    ready = [make() for _ in range(clients)]
    uids = [_turn(s, None, "warm up") for s in ready]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for n in range(turns):
                _turn(ready[i], uids[i], f"c{i} t{n}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if close:
        for s in ready:
            s.close()
    if errors:
        raise errors[0]
    return clients * turns / elapsed


def many(address: str, clients: int, turns: int) -> dict[str, Any]:
    """``clients`` clients at once, each its own channel, thread and session, ``turns``
    turns each: every turn must complete, and the records each client was sent must be
    exactly its session's stored records after the warm-up (nothing lost or doubled)."""
    ready = [dial(address) for _ in range(clients)]
    uids = [_turn(s, None, "warm up") for s in ready]
    heads = [s.get(uid).last_seq for s, uid in zip(ready, uids, strict=True)]
    seen: list[list[int]] = [[] for _ in range(clients)]
    latencies: list[float] = []
    errors: list[BaseException] = []
    start_line = threading.Barrier(clients)

    def work(i: int) -> None:
        try:
            start_line.wait()
            for n in range(turns):
                began = time.perf_counter()
                for frame in ready[i].exec(uids[i], [f"c{i} t{n}"]):
                    if isinstance(frame, RecordFrame):
                        seen[i].append(frame.record.seq)
                latencies.append(time.perf_counter() - began)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    lost = 0
    for i, s in enumerate(ready):
        stored = [r.seq for r in s.read(uids[i], from_seq=heads[i] + 1)]
        lost += len(set(stored) ^ set(seen[i])) + len(seen[i]) - len(set(seen[i]))
        s.close()
    if errors:
        raise errors[0]
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "turns": len(latencies),
        "expected_turns": clients * turns,
        "records_lost_or_doubled": lost,
        "turns_per_s": len(latencies) / elapsed,
        "p50_ms": ordered[len(ordered) // 2] * 1e3,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3,
    }


def run(quick: bool) -> dict[str, Any]:
    """Every figure, rounds interleaved, medians."""
    turns, clients, load_turns, rounds = (20, 8, 3, 1) if quick else (200, 32, 10, 3)
    local_rt, remote_rt, local_load, remote_load = [], [], [], []
    bare_rt, bare_load, turn_rt, turn_load = [], [], [], []
    daemon_cpu, turn_cpu, client_cpu, turn_client_cpu = [], [], [], []
    # per turn under load, each server: (CPU seconds, context switches) of each round
    daemon_loaded: list[tuple[float, float]] = []
    turn_loaded: list[tuple[float, float]] = []
    loaded_turns = clients * (load_turns + 1)  # each client's warm-up turn, then its turns
    with (
        engines() as (local, client, daemon),
        floor.echo_server() as echo,
        tempfile.TemporaryDirectory(prefix="bench-grpc-floor-") as floor_home,
        floor.turn_server(Path(floor_home)) as bare_turns,
    ):
        address = client.address  # type: ignore[attr-defined]
        for _ in range(rounds):
            local_rt.append(round_trip(local, turns))
            median, cpu, mine = cpu_per_turn(daemon, lambda: round_trip(client, turns), turns + 1)
            remote_rt.append(median)
            daemon_cpu.append(cpu)
            client_cpu.append(mine)
            bare_rt.append(floor.round_trip(echo, turns))
            median, cpu, mine = cpu_per_turn(
                bare_turns.pid,
                lambda: floor.round_trip(bare_turns.address, turns, floor.turn_caller),
                turns + floor.WARM_UP,
            )
            turn_rt.append(median)
            turn_cpu.append(cpu)
            turn_client_cpu.append(mine)
            local_load.append(load(lambda: local, False, clients, load_turns))
            rate, cpu, switches = loaded(
                daemon, lambda: load(lambda: dial(address), True, clients, load_turns), loaded_turns
            )
            remote_load.append(rate)
            daemon_loaded.append((cpu, switches))
            bare_load.append(floor.load(echo, clients, load_turns))
            rate, cpu, switches = loaded(
                bare_turns.pid,
                lambda: floor.load(bare_turns.address, clients, load_turns, floor.turn_caller),
                loaded_turns,
            )
            turn_load.append(rate)
            turn_loaded.append((cpu, switches))
        crowd = many(address, 16 if quick else MANY, 2 if quick else 5)
    in_process, over_grpc = statistics.median(local_rt), statistics.median(remote_rt)
    local_tps, remote_tps = statistics.median(local_load), statistics.median(remote_load)
    bare, bare_cps = statistics.median(bare_rt), statistics.median(bare_load)
    bare_turn, bare_tps = statistics.median(turn_rt), statistics.median(turn_load)
    return {
        "round_trip_ms": {"in_process": in_process * 1e3, "grpc": over_grpc * 1e3},
        "round_trip_ratio": over_grpc / in_process,  # > 1: what the wire costs a turn
        # CPU per round-trip turn, the daemon's and its client's beside the bare turn
        # server's and its plain client's: what the daemon's own code and ours cost a turn
        "server_cpu_ms": {
            "daemon": statistics.median(daemon_cpu) * 1e3,
            "bare_turn_server": statistics.median(turn_cpu) * 1e3,
        },
        "client_cpu_ms": {
            "client": statistics.median(client_cpu) * 1e3,
            "bare_turn_client": statistics.median(turn_client_cpu) * 1e3,
        },
        "load_turns_per_s": {"in_process": local_tps, "grpc": remote_tps},
        # per turn of the load, each server's CPU and context switches (all its threads):
        # at many clients the daemon's cost is contention as much as its own code
        "load_per_turn": {
            "daemon": _medians(daemon_loaded),
            "bare_turn_server": _medians(turn_loaded),
        },
        "load_ratio": remote_tps / local_tps,  # < 1: what the wire costs under load
        "clients": clients,
        "turns": {"round_trip": turns, "load_per_client": load_turns, "rounds": rounds},
        "many": crowd,
        # the bare gRPC echo (grpc_floor.py): no daemon could print better ratios in this run
        "floor": {
            "echo_ms": bare * 1e3,
            "round_trip_ratio": (in_process + bare) / in_process,
            "echo_calls_per_s": bare_cps,
            "load_ratio": 1.0 / (1.0 + local_tps / bare_cps),
        },
        # the bare turn server (grpc_floor.py): grpc's sync server over this engine, no
        # daemon code; what the daemon's own code costs is what separates it from this
        "floor_turns": {
            "round_trip_ms": bare_turn * 1e3,
            "round_trip_ratio": bare_turn / in_process,
            "turns_per_s": bare_tps,
            "load_ratio": bare_tps / local_tps,
        },
    }


def _medians(rounds: list[tuple[float, float]]) -> dict[str, float]:
    """The median CPU (ms) and context switches per turn of ``rounds``."""
    return {
        "cpu_ms": statistics.median(cpu for cpu, _ in rounds) * 1e3,
        "context_switches": statistics.median(switches for _, switches in rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke check)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    out = run(args.quick)
    if args.json:
        print(json.dumps(out))
        return
    rt, ld = out["round_trip_ms"], out["load_turns_per_s"]
    print(f"exec round trip: in-process {rt['in_process']:.2f} ms, over gRPC "
          f"{rt['grpc']:.2f} ms ({out['round_trip_ratio']:.2f}x)")  # fmt: skip
    print(f"{out['clients']} clients on {out['clients']} sessions: in-process "
          f"{ld['in_process']:.0f} turns/s, over gRPC {ld['grpc']:.0f} turns/s "
          f"({out['load_ratio']:.2f}x)")  # fmt: skip
    f = out["floor"]
    print(f"floor (a bare gRPC unary echo of {floor.REPLY_BYTES} bytes, no daemon): "
          f"{f['echo_ms']:.2f} ms a call, {f['echo_calls_per_s']:.0f} calls/s from "
          f"{out['clients']} clients; best possible: round trip {f['round_trip_ratio']:.2f}x, "
          f"load {f['load_ratio']:.2f}x")  # fmt: skip
    cpu, mine = out["server_cpu_ms"], out["client_cpu_ms"]
    print(f"CPU per round-trip turn: daemon {cpu['daemon']:.2f} ms, bare turn server "
          f"{cpu['bare_turn_server']:.2f} ms (the daemon's own code: "
          f"{cpu['daemon'] - cpu['bare_turn_server']:.2f} ms); client {mine['client']:.2f} "
          f"ms, a plain call's {mine['bare_turn_client']:.2f} ms")  # fmt: skip
    d, b = out["load_per_turn"]["daemon"], out["load_per_turn"]["bare_turn_server"]
    print(f"per turn at {out['clients']} clients: daemon {d['cpu_ms']:.2f} ms CPU, "
          f"{d['context_switches']:.1f} context switches; bare turn server "
          f"{b['cpu_ms']:.2f} ms, {b['context_switches']:.1f}")  # fmt: skip
    t = out["floor_turns"]
    print(f"floor (a bare gRPC turn server over this engine, no daemon code): round trip "
          f"{t['round_trip_ms']:.2f} ms ({t['round_trip_ratio']:.2f}x), "
          f"{t['turns_per_s']:.0f} turns/s from {out['clients']} clients "
          f"({t['load_ratio']:.2f}x)")  # fmt: skip
    m = out["many"]
    print(f"{m['clients']} clients at once on {m['clients']} sessions: {m['turns']} of "
          f"{m['expected_turns']} turns completed, {m['records_lost_or_doubled']} records "
          f"lost or doubled, {m['turns_per_s']:.0f} turns/s, p50 {m['p50_ms']:.1f} ms, "
          f"p99 {m['p99_ms']:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
