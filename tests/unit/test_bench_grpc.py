"""bench/grpc.py measures what issue 10 names: the exec round trip over gRPC against the same
turn in process, and turns/s of many clients against the in-process engine. The figures
are not asserted (shared, noisy machines); that both sides really ran is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from needs import need

ROOT = Path(__file__).resolve().parents[2]

need("grpc", "grpc")


def test_the_quick_bench_runs_both_sides_of_both_measurements() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "grpc.py"), "--quick", "--json"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for side in ("in_process", "grpc"):
        assert out["round_trip_ms"][side] > 0 and out["load_turns_per_s"][side] > 0
    assert out["round_trip_ratio"] > 0 and out["load_ratio"] > 0
    assert out["clients"] > 1
    crowd = out["many"]  # every turn of the clients at once completed, nothing lost
    assert crowd["turns"] == crowd["expected_turns"] > 0
    assert crowd["records_lost_or_doubled"] == 0 and crowd["p99_ms"] > 0
    floor = out["floor"]  # the bare gRPC echo ran too: the ratios no daemon could beat
    assert floor["echo_ms"] > 0 and floor["echo_calls_per_s"] > 0
    assert floor["round_trip_ratio"] > 1 and 0 < floor["load_ratio"] < 1
    turns = out["floor_turns"]  # the bare turn server over this engine ran its turns too
    assert turns["round_trip_ms"] > 0 and turns["turns_per_s"] > 0
    assert turns["round_trip_ratio"] > 0 and turns["load_ratio"] > 0
    cpu = out["server_cpu_ms"]  # read from /proc: whole clock ticks, so possibly 0 in a quick run
    assert cpu["daemon"] >= 0 and cpu["bare_turn_server"] >= 0
    assert out["client_cpu_ms"]["client"] > 0 and out["client_cpu_ms"]["bare_turn_client"] > 0
    for server in ("daemon", "bare_turn_server"):  # each server's threads switched under load
        assert out["load_per_turn"][server]["cpu_ms"] >= 0
        assert out["load_per_turn"][server]["context_switches"] > 0


def test_the_many_sessions_bench_fills_a_daemon_and_reads_its_memory() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "grpc_sessions.py"), "--sessions", "12",
         "--window", "3", "--clients", "2", "--json"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sessions"] == 12 and out["rss_mib"]["after"] > 0 and out["descriptors"] > 0
    assert out["creating_turn"]["ratio"] > 0 and out["second_turn"]["ratio"] > 0
    assert out["held_vs_reopened_ms"]["held"] > 0
    alternated = out["alternated"]  # 12 sessions: too few to close a writer between them
    assert alternated["writers_closed_first"] is False
    for name in ("reopened", "held", "creating"):
        assert alternated[name]["first_ms"] > 0 and alternated[name]["ratio"] > 0


def test_the_client_bench_times_each_kind_of_turn() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "grpc_client.py"), "--turns", "20"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith("client thread CPU per echo turn (medians of 20): whole turn ")
    assert "x a bare call), bare call " in line and "converting a reply " in line
