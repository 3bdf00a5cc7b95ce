"""Many sessions on one daemon (issue 21): its memory, and whether a turn slows down as the
number of sessions it holds grows.

    python bench/grpc_sessions.py                    # 10,000 sessions
    python bench/grpc_sessions.py --sessions 1000    # smaller, for a smoke check
    python bench/grpc_sessions.py --json             # the figures as one JSON object

Against a real ``agentsessions serve`` process (file store, its own temporary home):
``--clients`` clients, each on its own channel and thread, run the first turn of new
sessions (an ``exec`` that creates its session) until ``--sessions`` sessions have each run
one, then a second turn on each, in the same order, as fast as they can (so every session
ran a turn within that pass, whose duration is printed). Then, with nothing else running:

- the daemon's resident memory (VmRSS, and its peak VmHWM) and open descriptors;
- the latency of the turn on session N against the one on session 1, in both passes: the
  median of the first ``--window`` turns against the last ``--window`` ones (target:
  within 1.2x);
- a turn on the last ``--window`` sessions (their writers still held) against one on the
  first (closed for the daemon's bound on held writers, ``HeldLimit``: opened again),
  one at a time;
- the same comparison with the machine's drift taken out (the row to quote): one client
  alternates a turn on session ``i`` and on session ``N - window + i``, after a pass over
  the sessions between them has closed both windows' writers (both open theirs again), then
  once more (both held); and a new session's first turn on this daemon alternated with one
  on a second, empty daemon started beside it. A pass of 8 clients lasts minutes on a shared
  machine whose load changes meanwhile, so its first and last windows also compare two
  moments; the alternated rows compare the sessions alone.

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
from agentsessions.controller.heldlimit import default_cap  # noqa: E402


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


def turns(
    address: str, targets: list[str | None], clients: int, text: str
) -> tuple[list[str], list[float], float]:
    """One turn on each of ``targets`` (None: a new session) over ``clients`` clients, in
    order; the sessions' uids and the turns' latencies in that order, and the seconds it all
    took."""
    uids: list[str] = [""] * len(targets)
    latency: list[float] = [0.0] * len(targets)
    numbers = itertools.count()
    take = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        with dial(address) as client:
            try:
                while True:
                    with take:
                        n = next(numbers)
                    if n >= len(targets):
                        return
                    uids[n], latency[n] = _timed(client, targets[n], f"{text} {n}")
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


def _ratio(latency: list[float], window: int) -> dict[str, float]:
    """Medians of the first and last ``window`` latencies (ms), and last / first."""
    first, last = statistics.median(latency[:window]), statistics.median(latency[-window:])
    return {"first_ms": first * 1e3, "last_ms": last * 1e3, "ratio": last / first}


def run(sessions: int, clients: int, window: int) -> dict[str, Any]:
    """Every figure of one run."""
    with daemon() as (address, pid):
        idle = status_kib(pid, "VmRSS")
        uids, created, filled = turns(address, [None] * sessions, clients, "session")
        # a second turn on each, in the same order: every session ran one within this pass
        _, touched, took = turns(address, list(uids), clients, "again")
        rss, peak = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with dial(address) as client:  # one at a time: the first closed, the last held
            reopened = [_timed(client, u, "third")[1] for u in uids[:window]]
            held = [_timed(client, u, "third")[1] for u in uids[-window:]]
        alternated = alternate(address, uids, clients, window)
        with daemon() as (empty, _pid):
            alternated["creating"] = _pair(address, empty, window)
    return {
        "sessions": sessions,
        "clients": clients,
        "window": window,
        "seconds": {"creating": filled, "second_turns": took},
        "rss_mib": {"idle": idle / 1024, "after": rss / 1024, "peak": peak / 1024},
        "descriptors": fds,
        "creating_turn": _ratio(created, window),
        "second_turn": _ratio(touched, window),
        "held_vs_reopened_ms": {
            "held": statistics.median(held) * 1e3,
            "reopened": statistics.median(reopened) * 1e3,
        },
        "alternated": alternated,
    }


def alternate(address: str, uids: list[str], clients: int, window: int) -> dict[str, Any]:
    """Turns on session ``i`` and ``N - window + i`` alternated by one client: both writers
    closed for the bound first (a pass over the sessions between them, when there are
    enough), then both held. Medians (ms) and last / first."""
    cap = default_cap()
    between = uids[window : len(uids) - window]
    closed = len(between) >= cap + 2 * window  # enough turns between to close both windows
    if closed:
        turns(address, list(between[: cap + 2 * window]), clients, "between")
    out: dict[str, Any] = {"writers_closed_first": closed}
    for name in ("reopened", "held"):
        first, last = [], []
        with dial(address) as client:
            for a, b in zip(uids[:window], uids[-window:], strict=True):
                first.append(_timed(client, a, name)[1])
                last.append(_timed(client, b, name)[1])
        out[name] = _medians(first, last)
    return out


def _pair(full: str, empty: str, window: int) -> dict[str, float]:
    """A new session's first turn on the daemon at ``full`` alternated with one on the
    daemon at ``empty``: medians (ms), and full / empty as ``ratio``."""
    on_full, on_empty = [], []
    with dial(full) as big, dial(empty) as small:
        for n in range(window):
            on_full.append(_timed(big, None, f"new {n}")[1])
            on_empty.append(_timed(small, None, f"new {n}")[1])
    return _medians(on_empty, on_full)


def _medians(first: list[float], last: list[float]) -> dict[str, float]:
    a, b = statistics.median(first), statistics.median(last)
    return {"first_ms": a * 1e3, "last_ms": b * 1e3, "ratio": b / a}


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
    r, sec = out["rss_mib"], out["seconds"]
    c, t, h = out["creating_turn"], out["second_turn"], out["held_vs_reopened_ms"]
    print(f"{out['sessions']} sessions over {out['clients']} clients: created with a turn "
          f"each in {sec['creating']:.0f} s, then a second turn each in "
          f"{sec['second_turns']:.0f} s")  # fmt: skip
    print(f"daemon RSS {r['after']:.0f} MiB (idle {r['idle']:.0f}, peak {r['peak']:.0f}), "
          f"{out['descriptors']} descriptors open")  # fmt: skip
    w = out["window"]
    for name, m in (("creating turn", c), ("second turn", t)):
        print(f"{name}, session {out['sessions']} vs session 1 (medians of {w}): "
              f"{m['last_ms']:.2f} ms vs {m['first_ms']:.2f} ms ({m['ratio']:.2f}x)")  # fmt: skip
    print(f"a turn on a held writer vs one whose writer was closed for the bound: "
          f"{h['held']:.2f} ms vs {h['reopened']:.2f} ms")  # fmt: skip
    alt = out["alternated"]
    n = out["sessions"]
    note = "" if alt["writers_closed_first"] else " (too few sessions to close their writers)"
    print(f"alternated, one client, session {n - w + 1}.. vs 1.. (target <= 1.2x):")
    for name, label in (("reopened", f"writer opened again{note}"), ("held", "writer held")):
        m = alt[name]
        print(f"  {label}: {m['last_ms']:.2f} ms vs {m['first_ms']:.2f} ms "
              f"({m['ratio']:.2f}x)")  # fmt: skip
    m = alt["creating"]
    print(f"  a new session's first turn, on this daemon vs an empty one: "
          f"{m['last_ms']:.2f} ms vs {m['first_ms']:.2f} ms ({m['ratio']:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
