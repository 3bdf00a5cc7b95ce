"""The benchmark report's page is drawn from a results file alone: every section, every
chart it names exists, and the figures it prints are the file's (bench/reportdoc.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from needs import peer

ROOT = Path(__file__).resolve().parents[2]


def _side(rate: float, size: int | None, load: float | None) -> dict[str, object]:
    curve = [(i * 10, rate * (1 + i / 100)) for i in range(1, 11)]
    return {
        "turns": 100,
        "turns_per_s": rate,
        "turns_per_s_rounds": [rate, rate * 1.1],
        "flat": 0.95,
        "bytes": size,
        "load_ms": load,
        "load_ms_rounds": [load or 0.0],
        "curve": curve,
    }


RESULTS = {
    "date": "2026-12-07T00:00:00+00:00",
    "command": "python3 bench/report.py --quick",
    "machine": {
        "python": "3.11",
        "platform": "Linux",
        "cpus": 2,
        "cpu_model": "test",
        "load_average_at_start": [1.0, 1.0, 1.0],
        "shared": True,
        "tmp_filesystem": "ext4",
    },
    "turns": 100,
    "rounds": 2,
    "stages": {
        "conversation": {
            "baseline": "SQLite WAL FULL",
            "sides": {
                "SQLite WAL FULL": _side(300.0, 1000, 1.0),
                "agentsessions.open()": _side(150.0, 2000, 3.0),
                "agentsessions CLI": _side(2.0, 2000, None),
            },
        },
        "adapters": {
            "langgraph": {
                "baseline": "SqliteSaver",
                "versions": {"langgraph": "1"},
                "sides": {
                    "SqliteSaver": _side(30.0, 10**8, 5.0),
                    "ours (file)": _side(200.0, 10**6, 50.0),
                },
            }
        },
        "startup": {
            "python3 -c pass": {"cpu_s": 0.02, "rounds": [0.02], "x_python": 1.0},
            "agentsessions --help": {"cpu_s": 0.1, "rounds": [0.1], "x_python": 5.0},
        },
        "journal": {
            "rows": [
                {
                    "figure": "1-event commits/s",
                    "ours": 500.0,
                    "baseline": "write + fdatasync",
                    "base": 1000.0,
                    "ratio": 0.5,
                    "target": None,
                }
            ]
        },
        "jetstream": {"skipped": "the nats extra is not installed"},
    },
}


def test_the_page_is_drawn_from_the_results_alone(tmp_path: Path) -> None:
    peer("matplotlib")
    sys.path.insert(0, str(ROOT / "bench"))
    import reportdoc

    reportdoc.write(RESULTS, tmp_path)
    page = (tmp_path / "README.md").read_text()
    for section in ("The conversation", "The framework adapters", "Cold start", "JetStream"):
        assert f"## {section}" in page
    charts = re.findall(r"!\[[^]]*\]\(([^)]+)\)", page)
    assert charts and all((tmp_path / c).stat().st_size > 1000 for c in charts)
    assert "| agentsessions.open() | 100 | 150 (150, 165) | 0.500x |" in page
    assert "| ours (file) | 200 | 6.67x |" in page
    assert "**The machine is shared**" in page and "Skipped: the nats extra" in page
