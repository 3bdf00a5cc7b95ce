"""``log`` of a long session: the human table against ``log --json``, and the first line.

    python bench/log.py               # a 3,001-turn chat session: 15,005 records
    python bench/log.py --turns 200   # a smoke check
    python bench/log.py --home DIR    # keep (or reuse) the built session in DIR

The session is built with the library (``engine.run``, the offline echo model: five records
a turn). Each round runs ``agentsessions log UID`` and ``agentsessions log UID --json`` as
fresh processes with stdout on a pipe, read as it comes: the wall time to the first line and
to the end. Printed: the medians of each and the ratio human/json (target, issue 17: at most
2x), with the human's time to its first line against its whole run (rows stream as they are
read: the first line comes long before the end). No number here is asserted by a test.

Measured (issue 17; 15,005 records, a shared and busy 2-core machine; medians):

                                  human first line   human end   json end   human/json
    before: one rich Table            43.6 s           43.9 s      2.6 s      16.7x  (1 round)
    after: rows stream as read         1.5 s            4.7 s      3.9 s       1.2x  (3 rounds)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentsessions.sessions.local import open_local  # noqa: E402  (after the path)

RECORDS_PER_TURN = 5  # EXECUTION_START, INPUT, MODEL_CALL, OUTPUT, END


def build(home: Path, turns: int) -> str:
    """A chat session of ``turns`` turns on the echo model under ``home``; its uid."""
    marker = home / "bench-log-uid"
    if marker.exists():
        return marker.read_text().strip()
    with open_local(home) as engine:
        uid = engine.run(None, ["turn 0: hello"], harness="chat", model="echo").uid
        for i in range(1, turns):
            engine.run(uid, [f"turn {i}: tell me a little more about item {i}"])
            if i % 500 == 0:
                print(f"  built {i} turns", file=sys.stderr)
    marker.write_text(uid)
    return uid


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(seconds to the first line, seconds to the end, lines) of one run read from a pipe."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    first_at = time.perf_counter() - start
    lines = 1 if first else 0
    for _ in proc.stdout:
        lines += 1
    err = proc.stderr.read() if proc.stderr else b""
    if proc.wait() != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}: {err.decode(errors='replace')}")
    return first_at, time.perf_counter() - start, lines


def main() -> None:
    """Build the session, run both commands interleaved, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3001)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home or Path(tmp) / "home"
        home.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        uid = build(home, args.turns)
        print(f"session {uid}: built in {time.perf_counter() - started:.1f} s")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
        env["PYTHONPATH"] = str(ROOT)
        base = [sys.executable, "-m", "agentsessions", "--home", str(home), "log", uid]
        runs: dict[str, list[tuple[float, float, int]]] = {"human": [], "json": []}
        for _ in range(args.rounds):
            runs["human"].append(run_once(base, env))
            runs["json"].append(run_once([*base, "--json"], env))
        med = {
            name: (
                statistics.median(r[0] for r in rs),
                statistics.median(r[1] for r in rs),
                rs[0][2],
            )
            for name, rs in runs.items()
        }
        for name, (first, total, lines) in med.items():
            print(
                f"log {name:<5}  {lines:>6} lines  first line {first:6.3f} s  total {total:6.3f} s"
            )
        ratio = med["human"][1] / med["json"][1]
        print(f"human/json total: {ratio:.2f}x (target <= 2x)")
        print(f"human first line / human total: {med['human'][0] / med['human'][1]:.2f}")


if __name__ == "__main__":
    main()
