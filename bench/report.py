"""The benchmark report: agentsessions against the stores people use, in one run, with charts.

    python3 bench/report.py            # 2,000 turns, 3 rounds (the slow peers 1): ~30 min
    python3 bench/report.py --quick    # 200 turns, 1 round: a smoke run of every stage

The peers (the OpenAI Agents SDK, LangGraph's SqliteSaver, Google ADK, the eventsourcing
library) and matplotlib come from the ``bench`` extra, installed into a virtual environment
of the report's own (``--venv``, default ``.bench-venv`` in the checkout, made on first use),
never into the package's; the report re-runs itself there. It writes

- ``bench/results.json``: every figure, with the command that measured it, the machine's
  facts and the date;
- ``docs/benchmarks/README.md``: the tables, and PNG charts beside it.

Every ratio is against a baseline measured in the same run, rounds interleaved so the
machine's noise is shared fairly; the spread over rounds is kept and shown. Nothing is
asserted: a shared machine is noisy, and the report says so.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"
OUT = ROOT / "docs" / "benchmarks"
_IN_VENV = "AGENTSESSIONS_REPORT_VENV"


def ensure_venv(venv: Path, argv: list[str]) -> None:
    """Re-run this script inside ``venv`` (made, with the ``bench`` extra, if missing)."""
    if os.environ.get(_IN_VENV) == str(venv):
        return
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making {venv} with the bench extra (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-e", f"{ROOT}[bench]"], check=True
        )
    env = {**os.environ, _IN_VENV: str(venv)}
    os.execve(str(python), [str(python), str(Path(__file__).resolve()), *argv], env)


def recorded_options(argv: list[str]) -> list[str]:
    """The options the report records as its command, without ``--venv``'s local path.

    The venv holds the packages, not the measurement: a report re-run with another venv
    measures the same thing, and the path would name a folder on the measuring machine.
    """
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--venv":
            skip = True
        elif not arg.startswith("--venv="):
            kept.append(arg)
    return kept


def machine() -> dict[str, Any]:
    """What the figures were measured on (the report prints it beside every table)."""
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "shared": True,  # these machines run other work; ratios, not absolute figures
    }
    with open("/proc/cpuinfo") if Path("/proc/cpuinfo").exists() else open(os.devnull) as f:
        model = next((line.split(":", 1)[1].strip() for line in f if "model name" in line), "")
    facts["cpu_model"] = model
    if Path("/proc/meminfo").exists():
        facts["memory_kib"] = int(Path("/proc/meminfo").read_text().split()[1])
    fs = subprocess.run(["df", "-T", tempfile.gettempdir()], capture_output=True, text=True)
    facts["tmp_filesystem"] = fs.stdout.splitlines()[-1].split()[1] if fs.returncode == 0 else ""
    return facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 turns, 1 round (smoke run)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 3; quick 1)")
    parser.add_argument("--venv", type=Path, default=ROOT / ".bench-venv")
    parser.add_argument("--only", default="", help="stages, comma-separated (default: all)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--out", type=Path, default=OUT, help="where README.md and charts go")
    args = parser.parse_args()
    ensure_venv(args.venv.resolve(), sys.argv[1:])
    # bench/grpc.py shadows the grpc package while bench/ is on the path (a script's own
    # folder is, and the bench modules put it first): the real one is imported before
    bench = str(ROOT / "bench")
    sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != bench]
    import grpc  # noqa: F401

    sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]
    import reportdoc
    import reportstages

    rounds = args.rounds or (1 if args.quick else 3)
    turns = 200 if args.quick else 2000
    stages = [s for s in args.only.split(",") if s] or list(reportstages.STAGES)
    unknown = set(stages) - set(reportstages.STAGES)
    if unknown:
        parser.error(f"unknown stage(s) {sorted(unknown)}; known: {list(reportstages.STAGES)}")
    results: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python3", "bench/report.py", *recorded_options(sys.argv[1:])]),
        "machine": machine(),
        "turns": turns,
        "rounds": rounds,
        "stages": {},
    }
    scratch = Path(tempfile.mkdtemp(prefix="agentsessions-report-"))
    try:
        for name in stages:
            print(f"== {name}", file=sys.stderr)
            stage = reportstages.STAGES[name]
            figures = stage(scratch / name, turns=turns, rounds=rounds, quick=args.quick)
            results["stages"][name] = figures
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    reportdoc.write(results, args.out)
    print(f"wrote {args.results} and {args.out / 'README.md'}")


if __name__ == "__main__":
    main()
