"""bench/streamed.py measures what issue 21's streamed target names: the same turns of one
conversation run, streamed and handed over, rows interleaved; figures are not asserted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_streamed", ROOT / "bench" / "streamed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_round_runs_every_row_over_the_whole_conversation(tmp_path: Path) -> None:
    bench = _bench()
    got = bench.one_round(tmp_path, bench.BLOCK + 5, "t")  # a partial last block too
    assert set(got) == set(bench.ROWS)
    assert all(rate > 0 and cpu > 0 for rate, cpu in got.values())
    # each row's engine ran every turn into one session of its own
    for row in bench.ROWS:
        sessions = list((tmp_path / f"{row}-t").rglob("*.seg"))
        assert sessions, f"{row} wrote no journal"


def test_the_ratios_are_to_run_in_turns_per_second_and_cpu() -> None:
    bench = _bench()
    one = {"agentsessions": (1000.0, 300.0), "as-streamed": (800.0, 390.0),
           "as-handed": (950.0, 310.0), "as-tokens": (900.0, 330.0)}  # fmt: skip
    lines = bench.report([one, one, one], 2000)
    assert "as-streamed / agentsessions: 0.800x turns/s" in lines[5]
    assert "CPU 1.300x, +90 us a turn" in lines[5]
    assert "as-handed / agentsessions: 0.950x turns/s" in lines[6]
    assert "as-tokens / agentsessions: 0.900x turns/s" in lines[7]
    assert "CPU 1.100x, +30 us a turn" in lines[7]
