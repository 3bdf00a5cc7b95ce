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


SPAWNING = """
import subprocess
import sys


def test_spawns_one_python_and_one_other_process() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    subprocess.run(["true"], check=True)
"""

COMPUTING = """
def test_computes_without_a_process() -> None:
    assert sum(i * i for i in range(2_000_000)) > 0
"""


def test_the_profile_charges_cpu_and_processes_to_each_test_file(tmp_path: Path) -> None:
    # two files of known cost outside the tree (the tree's conftest orders only its own)
    (tmp_path / "test_spawning.py").write_text(SPAWNING)
    (tmp_path / "test_computing.py").write_text(COMPUTING)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite.py"), "--workers", "0", "--profile", "5",
         "--json", str(tmp_path / "test_spawning.py"), str(tmp_path / "test_computing.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["run"]["cpu"] > 0 and "2 passed" in doc["run"]["summary"], doc["run"]
    files = {row["file"].rsplit("/", 1)[-1]: row for row in doc["files"]}
    assert set(files) == {"test_spawning.py", "test_computing.py"}, doc["files"]
    assert (files["test_spawning.py"]["spawns"], files["test_spawning.py"]["pythons"]) == (2, 1)
    computing = files["test_computing.py"]
    # ~0.1 s of CPU on a quiet machine, once 0.05 under load; a file charged nothing is 0.0
    assert computing["spawns"] == 0 and computing["cpu"] >= 0.02, computing
    assert doc["pythons"] == 1
