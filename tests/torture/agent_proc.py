"""A writer process running the torture workload until it is killed (or runs ``--turns``).

Usage: python -m tests.torture.agent_proc HOME EFFECTS SEED [--store URL] [--turns N]
[--adopt UID:KIND ...] [--ops KIND,...] [--wait S] [--power] [--crash-at K]
[--cut-seed S] [--model-delay S]

It prints, flushed at once, ``SESSION uid kind`` for each session it works on, ``PHASE uid
op`` before each turn, ``ACK uid seq hash`` for each record once it is durable, ``BUSY`` for
a turn refused because another writer held its session, ``DONE`` at the end. ``--power``
runs on the crash file system and lists its syncs at the end (``SYNC k name file``);
``--crash-at K`` also cuts the power before its Kth mutating operation: every byte written
since the last sync is lost (the file system's own :meth:`crash`), then the process ends at
once, as a machine without power does.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path
from typing import Any

from agentsessions.journal.format.durable import CrashFileSystem
from agentsessions.journal.stores.file.store import FileStore
from agentsessions.sessions.local import open_local
from tests.torture.agent import OPS, Emit, TortureModel, Workload, register

POWER_CUT = 75
"""The exit code of a process whose power was cut (``--crash-at``)."""


class PowerCut(CrashFileSystem):
    """The crash file system that, at its Kth mutating operation, loses every unsynced byte
    and ends the process there (no cleanup runs, in any thread). With ``rng`` a random
    subset of the unsynced sectors survives, as a disk persists pages in any order."""

    rng: random.Random | None = None

    def _op(self, name: str, path: str | os.PathLike[str]) -> None:
        if self.crash_at_op is not None and len(self.ops) + 1 >= self.crash_at_op:
            print(f"CUT {name} {os.path.basename(path)}", flush=True)
            self.crash(self.rng)
            os._exit(POWER_CUT)
        self.ops.append((name, os.fspath(path)))


def _say(*words: Any) -> None:
    print(*words, flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("home")
    parser.add_argument("effects")
    parser.add_argument("seed", type=int)
    parser.add_argument("--store", default="")
    parser.add_argument("--turns", type=int, default=1 << 30)
    parser.add_argument("--adopt", action="append", default=[])
    parser.add_argument("--crash-at", type=int, default=0)
    parser.add_argument("--power", action="store_true", help="on the crash file system")
    parser.add_argument("--cut-seed", type=int, default=-1, help="keep random sectors")
    parser.add_argument("--model-delay", type=float, default=0.0)
    parser.add_argument("--ops", default=",".join(OPS), help="the kinds of turn to run")
    parser.add_argument("--wait", type=float, default=0.0, help="for a session held elsewhere")
    args = parser.parse_args(argv)
    register()
    TortureModel.delay = args.model_delay
    power = args.power or args.crash_at > 0
    fs = PowerCut(crash_at_op=args.crash_at or None) if power else None
    if fs is not None and args.cut_seed >= 0:
        fs.rng = random.Random(args.cut_seed)
    store = FileStore(args.home, fs=fs) if fs is not None else None
    engine = open_local(args.home, store=store, store_url=args.store or None)
    emit = Emit(
        ack=lambda uid, seq, digest: _say("ACK", uid, seq, digest),
        session=lambda uid, kind: _say("SESSION", uid, kind),
        phase=lambda uid, op: _say("PHASE", uid, op),
    )
    work = Workload(engine, Path(args.effects), random.Random(args.seed), emit,
                    ops=tuple(args.ops.split(",")), wait=args.wait)  # fmt: skip
    for item in args.adopt:
        uid, kind = item.split(":")
        work.adopt(uid, kind)
    work.start()
    for _ in range(args.turns):
        if work.step() == "busy":
            _say("BUSY")
    engine.close()
    if fs is not None:  # where the syncs were: the sites a later run cuts the power at
        for index, (name, path) in enumerate(fs.ops, 1):
            if name.startswith("sync"):
                _say("SYNC", index, name, os.path.basename(path) or path)
    _say("DONE")


if __name__ == "__main__":
    main(sys.argv[1:])
