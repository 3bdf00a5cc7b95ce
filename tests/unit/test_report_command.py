"""The report records the command that measured it, without the venv's local path
(bench/report.py): the path names a folder on the measuring machine, not a measurement."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_venv_option_and_its_path_are_left_out() -> None:
    recorded = _report().recorded_options
    assert recorded(["--venv", "/home/me/v", "--only", "journal"]) == ["--only", "journal"]
    assert recorded(["--quick", "--venv=/home/me/v"]) == ["--quick"]


def test_every_other_option_is_kept_in_order() -> None:
    argv = ["--rounds", "5", "--only", "startup,journal", "--out", "docs/benchmarks"]
    assert _report().recorded_options(argv) == argv
