"""bench/suite.py measures a slice of the suite in each configuration it is given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_bench_times_each_configuration() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite.py"), "--workers", "0,2", "--json",
         "tests/test_layout.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(proc.stdout)
    assert [row["workers"] for row in rows] == ["0", "2"]
    assert all(row["exit"] == 0 and "2 passed" in row["summary"] for row in rows), rows
    assert rows[0]["ratio"] == 1.0 and rows[1]["ratio"] > 0
