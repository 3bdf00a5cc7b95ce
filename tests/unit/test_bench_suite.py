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


def test_the_profile_charges_cpu_and_processes_to_each_test_file() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite.py"), "--workers", "0", "--profile", "5",
         "--json", "tests/test_layout.py", "tests/e2e/test_cli_groups.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["run"]["cpu"] > 0 and "passed" in doc["run"]["summary"]
    files = {row["file"]: row for row in doc["files"]}
    assert set(files) == {"tests/test_layout.py", "tests/e2e/test_cli_groups.py"}
    assert files["tests/test_layout.py"]["spawns"] >= 1  # git ls-files, not a Python
    assert files["tests/test_layout.py"]["pythons"] == 0
    groups = files["tests/e2e/test_cli_groups.py"]
    assert groups["spawns"] == 0 and groups["cpu"] > 0  # in-process CLI: no interpreter
    assert doc["pythons"] == 0
