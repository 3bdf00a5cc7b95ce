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
