"""The report's stages: each measures one comparison and returns plain JSON-able figures.

A stage is ``stage(where, *, turns, rounds, quick) -> dict``; ``where`` is a scratch
directory of its own. Rounds are interleaved (each round runs every side once, in a rotated
order), so a noisy moment of the shared machine falls on all sides alike; every round's
figure is kept (the spread), and the report shows medians.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import integrations
import peers
from integrations import Driver, Run, installed

CURVE_WINDOW = 100  # turns per point of the growth curve: turns/s over a sliding window
CLI_TURNS = 100  # a process a turn: enough for a rate, not a growth curve
SLOW = {"LangGraph SqliteSaver", "SqliteSaver", "DatabaseSessionService"}  # slow peers: 1 round


def _curve(times: list[float]) -> list[tuple[int, float]]:
    """Turns/s over windows of :data:`CURVE_WINDOW` turns, by the window's last turn index."""
    step = max(1, min(CURVE_WINDOW, len(times) // 10))
    return [(end, step / sum(times[end - step : end])) for end in range(step, len(times) + 1, step)]


def _summary(runs: list[Run]) -> dict[str, Any]:
    rates = [len(r.times) / sum(r.times) for r in runs]
    k = [min(100, len(r.times) // 2) for r in runs]
    flat = [sum(r.times[:n]) / sum(r.times[-n:]) for r, n in zip(runs, k, strict=True)]
    sizes = [r.bytes for r in runs if r.bytes is not None]
    loads = [r.load_s * 1e3 for r in runs if r.load_s is not None]
    return {
        "turns": len(runs[0].times),
        "turns_per_s": statistics.median(rates),
        "turns_per_s_rounds": rates,
        "flat": statistics.median(flat),
        "bytes": int(statistics.median(sizes)) if sizes else None,
        "load_ms": statistics.median(loads) if loads else None,
        "load_ms_rounds": loads,
        "curve": _curve(runs[len(runs) // 2].times),
    }


def _measure(
    where: Path, drivers: dict[str, tuple[Driver, int]], rounds: int
) -> dict[str, dict[str, Any]]:
    """Every driver ``rounds`` times (:data:`SLOW` ones once), interleaved; summaries."""
    runs: dict[str, list[Run]] = {name: [] for name in drivers}
    names = list(drivers)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if name in SLOW and runs[name]:
                continue
            driver, turns = drivers[name]
            scratch = Path(tempfile.mkdtemp(dir=where))
            runs[name].append(driver(scratch, turns))
            print(f"  {name}: round {r + 1}", flush=True)
    return {name: _summary(rs) for name, rs in runs.items()}


def conversation(where: Path, *, turns: int, rounds: int, quick: bool) -> dict[str, Any]:
    """The 2,000-turn chat on every store: ours through each front end, and the peers."""
    where.mkdir(parents=True)
    drivers: dict[str, tuple[Driver, int]] = {
        "SQLite WAL FULL": (peers.drive_sqlite, turns),
        "write + fdatasync": (peers.drive_fdatasync, turns),
        "agentsessions.open()": (peers.drive_ours, turns),
        "agentsessions.open(), streamed": (peers.drive_ours_streamed, turns),
        "agentsessions over gRPC": (peers.drive_ours_grpc, turns),
        "agentsessions CLI": (peers.drive_ours_cli, min(turns, CLI_TURNS)),
    }
    if installed("agents"):
        drivers["Agents SDK SQLiteSession"] = (integrations.drive_sdk_sqlite, turns)
    if installed("langgraph.checkpoint.sqlite"):
        drivers["LangGraph SqliteSaver"] = (integrations.drive_sqlitesaver, turns)
    if installed("eventsourcing"):
        drivers["eventsourcing (SQLite)"] = (peers.drive_eventsourcing, turns)
    return {"baseline": "SQLite WAL FULL", "sides": _measure(where, drivers, rounds)}


def adapters(where: Path, *, turns: int, rounds: int, quick: bool) -> dict[str, Any]:
    """Each framework's own SQL store beside our adapter of it, same conversation."""
    where.mkdir(parents=True)
    out: dict[str, Any] = {}
    for pair in integrations.PAIRS.values():
        if not (installed(pair.framework) and installed(pair.adapter)):
            continue
        theirs = {n: (d, turns) for n, d in pair.theirs().items() if "Memory" not in n}
        ours = {n: (d, turns) for n, d in pair.ours().items() if "jetstream" not in n}
        sides = _measure(where, {**theirs, **ours}, rounds)
        out[pair.name] = {"baseline": next(iter(theirs)), "sides": sides,
                          "versions": integrations._versions(pair.distributions)}  # fmt: skip
    return out


def startup(where: Path, *, turns: int, rounds: int, quick: bool) -> dict[str, Any]:
    """CPU seconds of whole CLI processes against ``python3 -c pass``, bytecode cached."""
    import os
    import sys

    import startup as bench_startup

    where.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    env["PYTHONPATH"] = str(peers.ROOT)
    env["PYTHONPYCACHEPREFIX"] = str(where / "pyc")
    home, uid = bench_startup.make_home(env, 20)
    cli = [sys.executable, "-m", "agentsessions", "--home", str(home)]
    commands = {
        "python3 -c pass": [sys.executable, "-c", "pass"],
        "agentsessions --help": [*cli, "--help"],
        "agentsessions list": [*cli, "list"],
        "agentsessions get": [*cli, "get", uid],
        "agentsessions exec (echo)": [*cli, "exec", uid, "--input", "x"],
    }
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        bench_startup.cpu_seconds(argv, env)  # warm the page cache and the bytecode
    for _ in range(max(3, rounds * 2)):
        for name, argv in commands.items():
            cpu[name].append(bench_startup.cpu_seconds(argv, env))
    base = statistics.median(cpu["python3 -c pass"])
    return {
        name: {"cpu_s": statistics.median(v), "rounds": v, "x_python": statistics.median(v) / base}
        for name, v in cpu.items()
    }


def journal(where: Path, *, turns: int, rounds: int, quick: bool) -> dict[str, Any]:
    """Commit rate against raw fdatasync and SQLite; verify throughput against raw sha256."""
    import journal as bench_journal

    where.mkdir(parents=True)
    rows: list[dict[str, Any]] = []

    def report(name: str, ours: float, base_name: str, base: float, target: float | None) -> None:
        rows.append({"figure": name, "ours": ours, "baseline": base_name, "base": base,
                     "ratio": ours / base, "target": target})  # fmt: skip

    bench_journal.bench_commits(where, 300 if quick else 2_000, report)
    bench_journal.bench_verify(where, 20_000 if quick else 200_000, report)
    rows.append(_fdatasync_floor(where, 300 if quick else 2_000))
    return {"rows": rows}


def _fdatasync_floor(where: Path, commits: int) -> dict[str, Any]:
    """Our 1-event commit rate against a raw append + fdatasync loop of the same bytes."""
    import os
    import time

    import journal as bench_journal

    from agentsessions.journal.stores.file.store import FileStore

    payload = bench_journal._payload_sample()
    fd = os.open(where / "floor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    t0 = time.perf_counter()
    for _ in range(commits):
        os.write(fd, payload)
        os.fdatasync(fd)
    raw = commits / (time.perf_counter() - t0)
    os.close(fd)
    store = FileStore(where / "floor")
    ours = bench_journal.ours_rate(store, commits, 1)
    store.close()
    return {"figure": "1-event commits/s", "ours": ours, "baseline": "write + fdatasync",
            "base": raw, "ratio": ours / raw, "target": None}  # fmt: skip


def jetstream(where: Path, *, turns: int, rounds: int, quick: bool) -> dict[str, Any]:
    """JetStream R1 and R3 commit rates against the file store (bench/jetstream_rates.py)."""
    import jetstream_rates
    from natsserver import NatsCluster, NatsServer, wheel_binary

    binary = wheel_binary()
    if binary is None or not installed("nats"):
        return {"skipped": "the nats extra is not installed"}
    where.mkdir(parents=True)
    with ExitStack() as stack:
        r1 = NatsServer(binary, where / "r1").start()
        stack.callback(r1.cleanup)
        r3 = NatsCluster(binary, where / "r3").start()
        stack.callback(r3.cleanup)
        return {"rates": jetstream_rates.rates(where, r1, r3, quick)}


STAGES: dict[str, Callable[..., dict[str, Any]]] = {
    "conversation": conversation,
    "adapters": adapters,
    "startup": startup,
    "journal": journal,
    "jetstream": jetstream,
}
