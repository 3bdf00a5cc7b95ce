"""Concurrent writers from several processes on one home, one of them killed mid-run.

Each round: ``SHARED`` writer processes take turns on the same two sessions (a chat and a
memory session: model calls, tool calls and state commits, each turn waiting for the
session's lock while another process holds it), while ``OWN`` more run every kind of turn on
sessions of their own in the same home (one catalog, one runtime directory). Part way
through, one writer, chosen at random, is SIGKILLed. Then every session is resumed and the
ledger's invariants are checked over everything every writer acknowledged: two processes
never got the same seq acknowledged with different records, nothing acknowledged is
missing, every effect ran at most once.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.torture import tally
from tests.torture.ledger import Ledger
from tests.torture.procs import start_writer
from tests.torture.rounds import count_acked, settle
from tests.torture.tally import TALLY

SHARED, OWN, TURNS = 3, 2, 12
ROUNDS = tally.count(ci=1, per_n=2)


def _round(tmp_path: Path, ledger: Ledger, rng: random.Random) -> None:
    home, effects = tmp_path / "home", tmp_path / "effects.txt"
    first = start_writer(home, effects, rng.randrange(1 << 30), "--turns=1")
    assert first.finish() == 0, first.stderr()
    first.kill()
    ledger.take(first.lines)
    shared = [line.split()[1] + ":" + line.split()[2] for line in first.lines
              if line.startswith("SESSION ")]  # fmt: skip
    writers = [
        start_writer(home, effects, rng.randrange(1 << 30), f"--turns={TURNS}", "--wait=1",
                     "--ops=model,tool,state", *(f"--adopt={s}" for s in shared))
        for _ in range(SHARED)
    ] + [start_writer(home, effects, rng.randrange(1 << 30), f"--turns={TURNS}")
         for _ in range(OWN)]  # fmt: skip
    victim = rng.choice(writers)
    victim.wait_for("PHASE", nth=rng.randint(1, TURNS // 2))
    time.sleep(rng.uniform(0, 0.05))
    victim.kill()
    TALLY.fault("kill:concurrent")
    for writer in writers:
        if writer is not victim:
            assert writer.finish() == 0, writer.stderr()
            writer.kill()  # its warm hosts
        ledger.take(writer.lines)
    TALLY.fault("concurrent-writers", len(writers))
    settle(home, effects, ledger)


@pytest.mark.torture
@pytest.mark.timeout(300 + 300 * ROUNDS)
def test_concurrent_writer_processes_one_killed(tmp_path: Path) -> None:
    rng = tally.rng("concurrent")
    for index in range(ROUNDS):  # each round its own home or stream, so its own ledger
        ledger = Ledger()
        _round(tmp_path / f"r{index}", ledger, rng)
        count_acked(ledger)
