"""The cost of encryption at rest per commit: the file store encrypted vs plaintext.

    python bench/crypto.py            # 1 and 16 events per commit, durable and without fsync
    python bench/crypto.py --quick    # fewer commits, for a smoke check

For each shape (events per commit, with or without fsync) the same events are committed to
a plaintext session and to an encrypted one (``FileStore(master=...)``: each event sealed
with AES-256-GCM), alternating rounds so that the machine's noise hits both alike; it prints
commits/s of each and the ratio encrypted / plaintext (1.0 = free). Without fsync the ratio
shows the CPU cost of sealing; with fsync, what a user of durable commits pays. A working
state of 4 KiB rides each commit in the ``+state`` rows (it is sealed too).
No number here is asserted by a test: machines are shared and noisy; ratios are the point.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentsessions.journal.crypto.keys import MasterKey
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, StateUpdate, new_uid
from agentsessions.v1 import construct


class NoSyncFileSystem(FileSystem):
    """Everything but the fsyncs: isolates the CPU cost of sealing."""

    def sync(self, fd: int, *, full: bool = False) -> None:
        pass

    def sync_dir(self, path: Any) -> None:
        pass


def _event(i: int, size: int = 400) -> dict[str, Any]:
    text = f"message {i} " + "lorem ipsum dolor sit amet " * (size // 27)
    return construct.output_event(
        construct.text_message("assistant", text), execution_id=f"{i:016x}"
    )


def _round(store: FileStore, commits: int, per_commit: int, state: bool) -> float:
    """Commits/s of ``commits`` commits of ``per_commit`` events into a fresh session."""
    uid = new_uid()
    store.create(SessionMeta(uid=uid))
    events = [_event(i) for i in range(per_commit)]
    blob = bytes(range(256)) * 16
    with store.writer(uid) as w:
        start = time.perf_counter()
        for _ in range(commits):
            w.append(events, state=StateUpdate(blob) if state else None)
        took = time.perf_counter() - start
    return commits / took


def bench(tmp: Path, commits: int, rounds: int) -> None:
    master = MasterKey.generate()
    print(f"{'shape':<28} {'plaintext/s':>12} {'encrypted/s':>12} {'ratio':>7}")
    for durable in (True, False):
        fs = DEFAULT_FS if durable else NoSyncFileSystem()
        n = commits if durable else commits * 10
        for per_commit, state in ((1, False), (16, False), (1, True)):
            label = f"{per_commit} event{'s' if per_commit > 1 else ''}/commit" + (
                " +state" if state else ""
            ) + (", fsync" if durable else ", no fsync")  # fmt: skip
            home = tmp / f"{durable}-{per_commit}-{state}"
            with (
                FileStore(home / "p", fs=fs) as plain,
                FileStore(home / "e", fs=fs, master=master) as enc,
            ):
                _round(plain, max(n // 10, 1), per_commit, state)  # warm both up
                _round(enc, max(n // 10, 1), per_commit, state)
                p_rates, e_rates = [], []
                for _ in range(rounds):  # alternate: noise lands on both
                    p_rates.append(_round(plain, n, per_commit, state))
                    e_rates.append(_round(enc, n, per_commit, state))
            p, e = statistics.median(p_rates), statistics.median(e_rates)
            print(f"{label:<28} {p:>12,.0f} {e:>12,.0f} {e / p:>6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer commits (smoke run)")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory (default: tmp)")
    args = parser.parse_args()
    commits, rounds = (100, 3) if args.quick else (400, 5)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        bench(Path(tmp), commits, rounds)


if __name__ == "__main__":
    main()
