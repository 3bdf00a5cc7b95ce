"""SIGKILL of real writer processes at random points of random turns, then resume.

Each round starts a writer (``agent_proc``) on the sessions so far, waits until it
announces a turn of a randomly chosen kind (model call, tool call, approval, state commit,
fork, compaction), lets it run a random few milliseconds into it and kills its process
group. A fresh engine then resumes every session and the ledger's invariants are checked
(``rounds.settle``): every acknowledged record there once at its seq, no seq reused, the
chain verified, every effect at most once, every turn replayed identically with 0 model
calls. On the file store and on JetStream (one durable nats-server).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentsessions.journal.stores.store import new_uid
from tests.torture import tally
from tests.torture.agent import OPS
from tests.torture.ledger import Ledger
from tests.torture.procs import start_writer
from tests.torture.rounds import count_acked, settle
from tests.torture.tally import TALLY

KILLS = tally.count(ci=4, per_n=6)
MAX_DELAY = 0.06  # seconds into the announced turn: a turn takes ~10-60 ms here


def _rounds(tmp_path: Path, name: str, store: str, kills: int) -> None:
    rng = tally.rng(name)
    home, effects, ledger = tmp_path / "home", tmp_path / "effects.txt", Ledger()
    store_args = [f"--store={store}"] if store else []
    for _ in range(kills):
        target, nth = rng.choice(OPS), rng.randint(1, 3)
        writer = start_writer(home, effects, rng.randrange(1 << 30), "--model-delay=0.01",
                              *store_args, *ledger.adopt_args())  # fmt: skip
        _wait_turn(writer, target, nth)
        time.sleep(rng.uniform(0, MAX_DELAY))
        writer.kill()
        # a writer that ended by itself failed: its stderr says why
        assert writer.proc.returncode == -9, f"the writer ended by itself: {writer.stderr()}"
        phase = ledger.take(writer.lines)
        TALLY.fault(f"kill:{phase or 'start'}")
        settle(home, effects, ledger, store)
    count_acked(ledger)
    assert ledger.acked, "no writer acknowledged anything"


def _wait_turn(writer: Any, op: str, nth: int) -> bool:
    """Until the writer announced its ``nth`` turn of kind ``op``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and writer.proc.poll() is None:
        turns = [line for line in list(writer.lines) if line.startswith("PHASE ")]
        if sum(1 for line in turns if line.endswith(f" {op}")) >= nth:
            return True
        time.sleep(0.002)
    return False


@pytest.mark.torture
@pytest.mark.timeout(240 + 60 * KILLS)
def test_sigkill_at_random_points_of_random_turns_on_the_file_store(tmp_path: Path) -> None:
    _rounds(tmp_path, "kill-file", "", KILLS)


@pytest.mark.torture
@pytest.mark.timeout(240 + 60 * KILLS)
def test_sigkill_at_random_points_of_random_turns_on_jetstream(
    tmp_path: Path, nats_server: Any
) -> None:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"TK{token}", prefix=f"tk{token}")
    _rounds(tmp_path, "kill-jetstream", url, max(2, KILLS // 2))
