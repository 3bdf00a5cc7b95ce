"""Controller benchmarks: ratios against baselines measured in the same run.

    python bench/controller.py            # 1,000 turns, a 1,000,000-event fork parent
    python bench/controller.py --quick    # small sizes, for a smoke check

- replay of a 1,000-turn echo session vs reading its records (the floor any replay pays);
- fork of a 1,000,000-event parent vs a 10-event parent (target within 1.5x: the child
  refers to the parent's prefix instead of copying it);
- the per-turn cost of exec with the echo harness vs the same journal appends alone
  (what the controller adds on top of durable storage).
No number here is asserted by a test.
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

from agentsessions.controller.lifecycle import ForkRequest, fork
from agentsessions.controller.replay import replay
from agentsessions.journal.format.durable import FileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.sessions.wiring import HARNESSES, build_controller
from agentsessions.v1 import construct


class NoSyncFileSystem(FileSystem):
    """Builds big fixtures quickly; never used where durability is being timed."""

    def sync(self, fd: int, *, full: bool = False) -> None:
        pass

    def sync_dir(self, path: Any) -> None:
        pass


def _say(text: str) -> list[dict[str, Any]]:
    return [dict(construct.text_message("user", text))]


def bench_replay(tmp: Path, turns: int) -> None:
    store = FileStore(tmp / "replay", fs=NoSyncFileSystem())
    ctl = build_controller(store, store.home)
    uid = ctl.exec(None, _say("turn 0"), harness="echo").uid
    for i in range(1, turns):
        ctl.exec(uid, _say(f"turn {i}"))
    t0 = time.perf_counter()
    records = list(store.read(uid))
    events = [r.event for r in records]
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = replay(store, uid, HARNESSES, model_calls=lambda: ctl.models.calls)
    replay_s = time.perf_counter() - t0
    assert result.identical and result.model_calls == 0 and len(events) == turns * 5
    print(
        f"replay {turns} turns ({len(records)} records): {replay_s * 1e3:.0f} ms vs reading "
        f"and decoding them {read_s * 1e3:.0f} ms -> {replay_s / read_s:.1f}x, model calls 0"
    )


def bench_fork(tmp: Path, big: int) -> None:
    store = FileStore(tmp / "fork", fs=NoSyncFileSystem())
    ctl = build_controller(store, store.home)
    parents = {}
    for name, n in (("small", 10), ("big", big)):
        uid = store.create(SessionMeta(uid=new_uid(), harness="echo")).uid
        with store.writer(uid) as writer:
            for start in range(0, n, 4096):
                batch = [
                    construct.lifecycle_event("LIFECYCLE_BASELINE", detail=f"{i}")
                    for i in range(start, min(n, start + 4096))
                ]
                writer.append(batch)
        parents[name] = uid
    durable = build_controller(FileStore(tmp / "fork"), tmp / "fork")

    def time_fork(uid: str) -> float:
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            fork(durable, uid, ForkRequest(count=1))
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    small, large = time_fork(parents["small"]), time_fork(parents["big"])
    del ctl
    print(
        f"fork: 10-event parent {small * 1e3:.2f} ms, {big:,}-event parent {large * 1e3:.2f} ms "
        f"-> {large / small:.2f}x   (target <= 1.5x)"
    )


def bench_turn_overhead(tmp: Path, turns: int) -> None:
    store = FileStore(tmp / "turns")
    ctl = build_controller(store, store.home)
    uid = ctl.exec(None, _say("warm up"), harness="echo").uid
    recorded = [r.event for r in store.read(uid)]
    t0 = time.perf_counter()
    for i in range(turns):
        ctl.exec(uid, _say(f"turn {i}"))
    exec_s = time.perf_counter() - t0
    raw = store.create(SessionMeta(uid=new_uid())).uid
    t0 = time.perf_counter()
    with store.writer(raw) as writer:  # the same commits: START+INPUT, MODEL_CALL, OUTPUT, END
        for _ in range(turns):
            writer.append(recorded[0:2])
            writer.append(recorded[2:3])
            writer.append(recorded[3:4])
            writer.append(recorded[4:5])
    append_s = time.perf_counter() - t0
    per_turn = (exec_s - append_s) / turns
    print(
        f"exec turn: {exec_s / turns * 1e3:.2f} ms vs its 4 durable commits alone "
        f"{append_s / turns * 1e3:.2f} ms -> {exec_s / append_s:.2f}x "
        f"(controller overhead {per_turn * 1e3:.2f} ms/turn)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = parser.parse_args()
    turns, big, exec_turns = (200, 50_000, 50) if args.quick else (1_000, 1_000_000, 300)
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        bench_replay(tmp, turns)
        bench_fork(tmp, big)
        bench_turn_overhead(tmp, exec_turns)


if __name__ == "__main__":
    main()
