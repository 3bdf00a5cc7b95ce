"""Many sessions on one daemon (issue 21): its memory, and whether a turn slows down as the
number of sessions it holds grows.

    python bench/grpc_sessions.py                    # 10,000 sessions
    python bench/grpc_sessions.py --sessions 1000    # smaller, for a smoke check
    python bench/grpc_sessions.py --json             # the figures as one JSON object

Against a real ``agentsessions serve`` process (file store, its own temporary home):
``--clients`` clients, each on its own channel and thread, run the first turn of new
sessions (an ``exec`` that creates its session) until ``--sessions`` sessions have each run
one, as fast as they can (so each ran its turn within the run's duration, printed). Then,
with nothing else running:

- the daemon's resident memory (VmRSS, and its peak VmHWM) and open descriptors;
- the latency of a turn that creates session N against one that created session 1: the
  median of the first ``--window`` creating turns against the last ``--window`` ones
  (target: within 1.2x);
- a second turn on the first and on the last ``--window`` sessions, one at a time: the
  last are still held by the daemon, the first were closed for its bound on held writers
  (``HeldLimit``) and open theirs again.

Nothing is asserted: the machine is shared and noisy; the ratios, within one run, are the
point.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# bench/grpc.py is beside this file: its directory must not shadow the grpc package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

from agentsessions.client import dial  # noqa: E402
from agentsessions.client.remote import RemoteSessions  # noqa: E402


@contextmanager
def daemon(*flags: str, home: Path | None = None) -> Iterator[tuple[str, int]]:
    """(its address, its pid) while it runs; SIGTERM (a graceful stop) afterwards.
    ``flags``: more ``serve`` options; ``home``: where it keeps its sessions (else a
    temporary directory, removed after)."""
    with tempfile.TemporaryDirectory(prefix="bench-grpc-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "agentsessions", "--home", str(home or Path(tmp) / "served"),
                "serve", "--listen", "127.0.0.1:0", "--no-auth", *flags]  # fmt: skip
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("listening on "):
                raise SystemExit(f"bench: agentsessions serve did not start: {line!r}")
            yield line.split()[-1], proc.pid
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=300)


def status_kib(pid: int, field: str) -> int:
    """A field of /proc/PID/status in KiB (VmRSS: now; VmHWM: the peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _timed(client: RemoteSessions, uid: str | None, text: str) -> tuple[str, float]:
    began = time.perf_counter()
    last = None
    for frame in client.exec(uid, [text]):
        last = frame
    assert last is not None
    return last.uid, time.perf_counter() - began


def fill(address: str, sessions: int, clients: int) -> tuple[list[str], list[float], float]:
    """Run the first turn of ``sessions`` new sessions over ``clients`` clients; the uids
    and turn latencies in session order, and the seconds it all took."""
    uids: list[str] = [""] * sessions
    latency: list[float] = [0.0] * sessions
    numbers = itertools.count()
    take = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        with dial(address) as client:
            try:
                while True:
                    with take:
                        n = next(numbers)
                    if n >= sessions:
                        return
                    uids[n], latency[n] = _timed(client, None, f"session {n}")
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(clients)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return uids, latency, time.perf_counter() - began


def run(sessions: int, clients: int, window: int) -> dict[str, Any]:
    """Every figure of one run."""
    with daemon() as (address, pid):
        idle = status_kib(pid, "VmRSS")
        uids, latency, took = fill(address, sessions, clients)
        rss, peak = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with dial(address) as client:
            again_first = [_timed(client, u, "again")[1] for u in uids[:window]]
            again_last = [_timed(client, u, "again")[1] for u in uids[-window:]]
    first, last = statistics.median(latency[:window]), statistics.median(latency[-window:])
    a_first, a_last = statistics.median(again_first), statistics.median(again_last)
    return {
        "sessions": sessions,
        "clients": clients,
        "window": window,
        "seconds": took,
        "rss_mib": {"idle": idle / 1024, "after": rss / 1024, "peak": peak / 1024},
        "descriptors": fds,
        "first_turn_ms": {"first": first * 1e3, "last": last * 1e3},
        "first_turn_ratio": last / first,
        "second_turn_ms": {"first": a_first * 1e3, "last": a_last * 1e3},
        "second_turn_ratio": a_first / a_last,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions to fill")
    parser.add_argument("--clients", type=int, default=8, help="clients filling at once")
    parser.add_argument("--window", type=int, default=100, help="turns in each median")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    out = run(args.sessions, args.clients, min(args.window, args.sessions // 2))
    if args.json:
        print(json.dumps(out))
        return
    r, f, s = out["rss_mib"], out["first_turn_ms"], out["second_turn_ms"]
    print(f"{out['sessions']} sessions, each one turn, in {out['seconds']:.0f} s over "
          f"{out['clients']} clients: daemon RSS {r['after']:.0f} MiB (idle {r['idle']:.0f}, "
          f"peak {r['peak']:.0f}), {out['descriptors']} descriptors open")  # fmt: skip
    print(f"turn creating session {out['sessions']} vs session 1 (medians of "
          f"{out['window']}): {f['last']:.2f} ms vs {f['first']:.2f} ms "
          f"({out['first_turn_ratio']:.2f}x)")  # fmt: skip
    print(f"a second turn on the first sessions (writers closed) vs the last (held): "
          f"{s['first']:.2f} ms vs {s['last']:.2f} ms "
          f"({out['second_turn_ratio']:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
