"""Working-state benchmark: what a state costs a commit, and a writer's open as history grows.

    python bench/state.py            # journals of 200, 2,000 and 8,000 commits
    python bench/state.py --quick    # 100 and 400 commits, for a smoke check

A real FileStore with real syncs (64 KiB segments, so a long journal has many sealed,
compressed segments). Printed: synced commits per second of one event, of one event with a
1 KiB state, and of a 1 KiB state alone (ratios to the first); then, for each journal
length, the time (best of a few) and the bytes read to open a writer whose latest state
was committed first of all (it lies in the oldest segment), against the same journal
without state. The open's cost should not grow with the journal. No number here is
asserted by a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.journal.stores.store import SessionMeta, StateUpdate, new_uid
from agentsessions.v1 import construct

REPEATS = 5
OPTIONS = StoreOptions(segment_max_bytes=64 << 10)


class CountingFS(FileSystem):
    """Counts the bytes read through the store's reads."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def read_at(self, fd: int, n: int, offset: int) -> bytes:
        out = super().read_at(fd, n, offset)
        self.read += len(out)
        return out


def _event(i: int) -> dict[str, Any]:
    message = construct.text_message("user", f"message {i} " + "x" * 200)
    return construct.input_event(message, execution_id="e1")


def commit_rates(home: Path, count: int) -> dict[str, float]:
    """Synced commits per second: an event; an event with a state; a state alone."""
    store = FileStore(home, options=OPTIONS)
    uid = store.create(SessionMeta(uid=new_uid())).uid
    state = StateUpdate(b"s" * 1024)
    kinds = {
        "event": lambda w, i: w.append([_event(i)]),
        "event+state": lambda w, i: w.append([_event(i)], state=state),
        "state only": lambda w, i: w.append((), state=state),
    }
    rates = {}
    with store.writer(uid) as w:
        for i in range(count // 2):  # warm up: first syncs of a new file cost more
            w.append([_event(i)])
        for name, commit in kinds.items():
            start = time.perf_counter()
            for i in range(count):
                commit(w, i)
            rates[name] = count / (time.perf_counter() - start)
    return rates


def open_cost(home: Path, commits: int, with_state: bool) -> tuple[float, int]:
    """(best seconds, bytes read) of opening a writer on a journal of ``commits`` commits."""
    store = FileStore(home, options=OPTIONS)
    uid = store.create(SessionMeta(uid=new_uid())).uid
    with store.writer(uid) as w:
        w.append([_event(0)], state=StateUpdate(b"m" * 1024) if with_state else None)
        for i in range(1, commits):
            w.append([_event(i)], sync=False)
    store.writer(uid).close()  # the open after a long write checks the new segments once
    best, read = float("inf"), 0
    for _ in range(REPEATS):
        fs = CountingFS()
        counted = FileStore(home, options=OPTIONS, fs=fs)
        start = time.perf_counter()
        counted.writer(uid).close()
        best, read = min(best, time.perf_counter() - start), fs.read
    return best, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short journals (a smoke check)")
    args = parser.parse_args()
    lengths = (100, 400) if args.quick else (200, 2000, 8000)
    with tempfile.TemporaryDirectory() as tmp:
        rates = commit_rates(Path(tmp) / "rates", 50 if args.quick else 300)
        base = rates["event"]
        for name, rate in rates.items():
            print(f"commit {name:<12} {rate:9.0f}/s  ratio {rate / base:4.2f}")
        for n in lengths:
            plain, plain_read = open_cost(Path(tmp) / f"plain{n}", n, False)
            timed, read = open_cost(Path(tmp) / f"state{n}", n, True)
            print(
                f"open, {n:>5} commits: {timed * 1e3:6.2f} ms, {read:>6} B read with state; "
                f"{plain * 1e3:6.2f} ms, {plain_read:>6} B without (ratio {timed / plain:4.2f})"
            )


if __name__ == "__main__":
    main()
