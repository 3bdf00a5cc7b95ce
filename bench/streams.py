"""Stream exhaustion (issue 18): one token floods a real daemon with streams while another
token's unary calls must stay fast.

    python bench/streams.py              # 10,000 Follow streams over 8 connections
    python bench/streams.py --quick      # 1,000 streams, for a smoke check
    python bench/streams.py --json       # the figures as one JSON object

Against a real ``agentsessions serve`` process on a loopback port, with bearer tokens for
two projects (bounded, loopback only, its own temporary home):

1. idle: the daemon's RSS after a warm-up; then token B's unary calls (ListSessions and
   GetSession, alternately, paced at ``--rate`` a second: under B's own rate bound) alone,
   for the baseline latency;
2. flood (``--rounds`` times): token A opens ``--streams`` Follow streams (never
   idle-timed-out) over ``--connections`` channels while B's calls go on (B's figures are
   the calls that began between the flood's first stream and its cancel); a stream stays
   open (accepted, up to ``--max-streams-per-token``), ends RESOURCE_EXHAUSTED (refused),
   or is shed by grpc's core before the server took it (CANCELLED: its queue of calls not
   yet taken is bounded); A holds what stayed open a second, then cancels it all; the
   daemon's RSS once it has been quiet for a while;
3. after: the daemon's peak RSS (its VmHWM), and whether A can open a stream again (its
   slots came back).

Printed: B's p50/p99/max during the flood against its baseline (target p99 < 100 ms), the
streams accepted/refused, the RSS idle/peak/after (target: after within 10% of idle), and
where the daemon's memory is at each point (:func:`heap_shape`: threads, glibc's
per-thread heaps, its main heap, all anonymous memory), to tell a leak from an allocator
that keeps what a flood freed.
Nothing is asserted: the machine is shared and noisy; the figures are the point.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# bench/grpc.py is beside this file: its directory must not shadow the grpc package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from agentsessions.sessions.tokens import TokenStore  # noqa: E402
from agentsessions.wire.gen import session_pb2, session_pb2_grpc  # noqa: E402


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A field of /proc/PID/status in KiB (VmRSS: now; VmHWM: the peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"bench: no {field} for pid {pid}")


def heap_shape(pid: int) -> dict[str, float]:
    """Where the daemon's memory is: its threads, glibc's per-thread heaps (64 MiB-aligned
    anonymous mappings: how many, their RSS), the main heap's RSS (brk), all anonymous RSS."""
    regions: list[dict[str, Any]] = []
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            name = head[5] if len(head) > 5 else ""
            regions.append({"lo": lo, "hi": hi, "perm": head[1], "anon": head[4] == "0"
                            and not name, "name": name, "rss": 0})  # fmt: skip
        elif head[0] == "Rss:" and regions:
            regions[-1]["rss"] = int(head[1])
    heap = 64 << 20
    arenas = [r for i, r in enumerate(regions) if r["anon"] and r["lo"] % heap == 0
              and r["perm"].startswith("rw") and i + 1 < len(regions)
              and regions[i + 1]["lo"] == r["hi"] and regions[i + 1]["perm"].startswith("---")
              and regions[i + 1]["hi"] - r["lo"] == heap]  # fmt: skip
    return {
        "threads": rss_kib(pid, "Threads"),  # a count, not KiB: the same parser
        "arenas": len(arenas),
        "arena_mib": sum(r["rss"] for r in arenas) / 1024,
        "brk_mib": sum(r["rss"] for r in regions if r["name"] == "[heap]") / 1024,
        "anon_mib": sum(r["rss"] for r in regions if r["anon"]) / 1024,
    }


@contextmanager
def daemon(home: Path) -> Iterator[tuple[int, str]]:
    """(pid, address) of a real ``agentsessions serve`` with tokens, on a loopback port
    (``BENCH_DAEMON_ENV``: ``K=V,...`` more variables for it: ``MALLOC_ARENA_MAX=2``, or
    ``PYTHONPATH=...`` to measure another checkout's daemon; ``BENCH_SERVE_ARGS``: more
    ``serve`` arguments, ``--log-format json``; ``BENCH_SERVE_LOG``: a file for its stderr)."""
    pairs = os.environ.get("BENCH_DAEMON_ENV", "").split(",")
    extra = dict(kv.split("=", 1) for kv in pairs if kv)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    argv = [sys.executable, "-m", "agentsessions", "--home", str(home), "serve",
            "--listen", "127.0.0.1:0", *os.environ.get("BENCH_SERVE_ARGS", "").split()]  # fmt: skip
    where = os.environ.get("BENCH_SERVE_LOG")  # its stderr (else nowhere)
    log = open(where, "w") if where else subprocess.DEVNULL  # noqa: SIM115 - the daemon's
    # cwd: not this checkout (python -m puts the cwd first on sys.path)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=home.parent
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"bench: agentsessions serve did not start: {line!r}")
        yield proc.pid, line.split()[-1]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


def meta(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


class Unary(threading.Thread):
    """Token B's calls, paced at ``rate`` a second: each one's latency, each error's code."""

    def __init__(self, stub: Any, token: str, uid: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.stub, self.meta, self.uid, self.rate = stub, meta(token), uid, rate
        self.latencies: list[tuple[float, float]] = []  # (when it began, how long)
        self.errors: Counter[str] = Counter()
        self.stop = threading.Event()

    def run(self) -> None:
        n, start = 0, time.perf_counter()
        while not self.stop.is_set():
            began = time.perf_counter()
            try:
                if n % 2:
                    self.stub.GetSession(
                        session_pb2.GetSessionRequest(uid=self.uid), metadata=self.meta, timeout=30
                    )
                else:
                    self.stub.ListSessions(
                        session_pb2.ListSessionsRequest(), metadata=self.meta, timeout=30
                    )
                self.latencies.append((began, time.perf_counter() - began))
            except grpc.RpcError as exc:
                self.errors[f"{exc.code().name}: {exc.details()}"[:120]] += 1  # type: ignore[attr-defined]
            n += 1
            wait = start + n / self.rate - time.perf_counter()
            if wait > 0:
                self.stop.wait(wait)

    def figures(self, windows: list[tuple[float, float]] | None = None) -> dict[str, float]:
        """p50/p99/max of the calls that began inside ``windows`` (all of them: None)."""
        picked = sorted(
            d for t, d in self.latencies if windows is None or any(a <= t < b for a, b in windows)
        )
        lat = picked or [0.0]
        return {
            "calls": len(picked),
            "p50_ms": statistics.median(lat) * 1e3,
            "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3,
            "max_ms": lat[-1] * 1e3,
        }


class Flood:
    """Token A's ``streams`` Follow streams over its channels: how each ended, which stay."""

    def __init__(self, stubs: list[Any], token: str, uid: str, streams: int) -> None:
        self.codes: Counter[str] = Counter()
        self.details: Counter[str] = Counter()
        self._ended = threading.Semaphore(0)
        request = session_pb2.FollowRequest(session=uid)  # idle_timeout 0: never ends
        began = time.perf_counter()
        self.calls = []
        for i in range(streams):
            call = stubs[i % len(stubs)].Follow(request, metadata=meta(token))
            call.add_done_callback(self._done)
            self.calls.append(call)
        self.began = began
        self.issue_s = time.perf_counter() - began
        settled, deadline = 0, time.monotonic() + 120  # bounded
        while time.monotonic() < deadline and settled < streams:
            if not self._ended.acquire(timeout=2.0):
                break  # two quiet seconds: what is still open was accepted
            settled += 1
        self.settle_s = time.perf_counter() - began
        self.accepted = sum(1 for c in self.calls if c.is_active())

    def _done(self, call: Any) -> None:
        self.codes[call.code().name] += 1
        self.details[f"{call.code().name}: {call.details()}"[:72]] += 1
        self._ended.release()

    def cancel(self) -> None:
        self.ended = time.perf_counter()
        for call in self.calls:
            call.cancel()
        self.calls.clear()


def admitted(stub: Any, token: str, uid: str) -> bool:
    """Whether a Follow of ``token`` is admitted now (the session has no records: an
    admitted stream waits until its deadline; a refused one ends RESOURCE_EXHAUSTED)."""
    call = stub.Follow(session_pb2.FollowRequest(session=uid), metadata=meta(token), timeout=1.0)
    try:
        next(call)
    except grpc.RpcError as exc:
        return bool(exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED)  # type: ignore[attr-defined]
    return True


def run(
    streams: int, connections: int, rate: float, baseline_s: float, rounds: int, shared: bool
) -> dict[str, Any]:
    """Every figure (see the module)."""
    with tempfile.TemporaryDirectory(prefix="bench-streams-") as tmp:
        home = Path(tmp) / "home"
        tokens = TokenStore(home)
        token_a, _ = tokens.create(projects=["a"], name="flooder")
        token_b, _ = tokens.create(projects=["b"], name="bystander")
        with daemon(home) as (pid, address):
            # each channel its own connection (grpc shares one between like channels else)
            local = [] if shared else [("grpc.use_local_subchannel_pool", 1)]
            channels = [grpc.insecure_channel(address, local) for _ in range(connections + 1)]
            stubs = [session_pb2_grpc.SessionsStub(c) for c in channels]  # type: ignore[no-untyped-call]
            b_stub, a_stubs = stubs[0], stubs[1:]
            new = session_pb2.CreateSessionRequest(session=session_pb2.Session(harness="echo"))
            uid_a = b_stub.CreateSession(new, metadata=meta(token_a)).metadata.uid
            uid_b = b_stub.CreateSession(new, metadata=meta(token_b)).metadata.uid
            for _ in range(3):  # warm up every code path a flood takes: idle is warm
                warm = Flood(a_stubs, token_a, uid_a, 40)
                for _ in range(50):
                    b_stub.ListSessions(session_pb2.ListSessionsRequest(), metadata=meta(token_b))
                warm.cancel()
            cold = rss_kib(pid)
            shapes = {"cold": heap_shape(pid)}
            alone = Unary(b_stub, token_b, uid_b, rate)
            alone.start()
            time.sleep(baseline_s)
            alone.stop.set()
            alone.join()
            time.sleep(6.0)  # quiet: the daemon has trimmed its heap (memory.QUIET, SETTLE)
            idle = rss_kib(pid)  # warm: after B's calls alone, as a daemon at work
            shapes["idle"] = heap_shape(pid)
            floods, during, after = [], Unary(b_stub, token_b, uid_b, rate), []
            during.start()
            for _ in range(rounds):
                floods.append(Flood(a_stubs, token_a, uid_a, streams))
                time.sleep(1.0)  # B's calls go on beside the open streams
                floods[-1].cancel()
                time.sleep(6.0)  # the cancels seen, then quiet: memory.QUIET + memory.SETTLE
                after.append(rss_kib(pid))
                shapes[f"after{len(after)}"] = heap_shape(pid)
            during.stop.set()
            during.join()
            peak = rss_kib(pid, "VmHWM")
            reopened = admitted(b_stub, token_a, uid_a)
            for c in channels:
                c.close()
    first = floods[0]
    return {
        "streams": streams,
        "connections": connections,
        "rounds": rounds,
        "accepted": [f.accepted for f in floods],
        "refused": [f.codes.get("RESOURCE_EXHAUSTED", 0) for f in floods],
        "shed_by_grpc_core": [f.codes.get("CANCELLED", 0) - f.accepted for f in floods],
        "endings": dict(first.details),
        "issue_s": first.issue_s,
        "settle_s": first.settle_s,
        "unary_alone": alone.figures(),
        "unary_during": during.figures([(f.began, f.ended) for f in floods]),
        "unary_errors": dict(alone.errors + during.errors),
        "rss_mib": {
            "cold": cold / 1024,
            "idle": idle / 1024,
            "peak": peak / 1024,
            "after": [a / 1024 for a in after],
        },
        "rss_after_ratio": after[-1] / idle,
        "heap_shape": shapes,
        "stream_reopened": reopened,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 streams (a smoke check)")
    parser.add_argument("--streams", type=int, default=10_000, help="streams token A opens")
    parser.add_argument("--connections", type=int, default=8, help="A's channels")
    parser.add_argument("--rate", type=float, default=100.0, help="B's calls a second")
    parser.add_argument("--rounds", type=int, default=2, help="floods, one after another")
    parser.add_argument(
        "--shared", action="store_true", help="one connection for A and B (grpc's default)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    streams = 1_000 if args.quick else args.streams
    out = run(
        streams, args.connections, args.rate, 2.0 if args.quick else 5.0, args.rounds, args.shared
    )
    if args.json:
        print(json.dumps(out))
        return
    alone, during, rss = out["unary_alone"], out["unary_during"], out["rss_mib"]
    print(f"token A: {out['rounds']} x {out['streams']} Follow streams over "
          f"{out['connections']} connections: accepted {out['accepted']}, refused "
          f"RESOURCE_EXHAUSTED {out['refused']}, shed by grpc's core (CANCELLED before the "
          f"server took them) {out['shed_by_grpc_core']}; issued in {out['issue_s']:.1f} s, "
          f"settled in {out['settle_s']:.1f} s")  # fmt: skip
    print(f"token B unary alone:  {alone['calls']} calls, p50 {alone['p50_ms']:.1f} ms, "
          f"p99 {alone['p99_ms']:.1f} ms, max {alone['max_ms']:.1f} ms")  # fmt: skip
    print(f"token B unary during: {during['calls']} calls, p50 {during['p50_ms']:.1f} ms, "
          f"p99 {during['p99_ms']:.1f} ms, max {during['max_ms']:.1f} ms "
          f"(p99 {during['p99_ms'] / max(alone['p99_ms'], 1e-9):.1f}x alone; target < 100 ms); "
          f"errors {out['unary_errors'] or 'none'}")  # fmt: skip
    after = ", ".join(f"{a:.0f}" for a in rss["after"])
    print(f"server RSS: cold {rss['cold']:.0f} MiB, idle {rss['idle']:.0f} MiB, peak "
          f"{rss['peak']:.0f} MiB, after each "
          f"flood {after} MiB ({out['rss_after_ratio']:.2f}x idle; target <= 1.10x); "
          f"a stream admitted again after: {out['stream_reopened']}")  # fmt: skip
    for when, shape in out["heap_shape"].items():
        print(f"  {when:>7}: {shape['threads']} threads, {shape['arenas']} glibc thread heaps "
              f"{shape['arena_mib']:.1f} MiB, main heap {shape['brk_mib']:.1f} MiB, anonymous "
              f"{shape['anon_mib']:.1f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
