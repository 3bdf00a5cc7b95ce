"""A JetStream stream's leader SIGKILLed while a writer process commits turns (R3 cluster).

Three durable clustered nats-servers (``natsserver.NatsCluster``, every node fsyncing
before it acknowledges). Each round a writer process runs the workload (every kind of turn)
on an R3 stream; after a random number of turns the stream's leader is killed. The writer
rides out the election (its client retries each publish with the same Msg-Id and CAS) and
finishes its turns; the killed node is restarted and caught up, and the ledger's invariants
are checked through a fresh engine: nothing acknowledged lost or stored twice, the chain
verified, every effect at most once, every turn replayed with 0 model calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsessions.journal.stores.store import new_uid
from tests.torture import tally
from tests.torture.ledger import Ledger
from tests.torture.procs import start_writer
from tests.torture.rounds import count_acked, settle
from tests.torture.tally import TALLY

ROUNDS = tally.count(ci=1, per_n=1)
TURNS = 16


def _round(tmp_path: Path, cluster: Any, ledger: Ledger, rng: Any) -> None:
    token = new_uid()[5:17]
    stream = f"TL{token}"
    # timeout=3: a read in flight to the killed leader is asked again after 3 s, not 10
    url = cluster.store_url(stream=stream, prefix=f"tl{token}", timeout="3")
    home, effects = tmp_path / "home", tmp_path / "effects.txt"
    writer = start_writer(home, effects, rng.randrange(1 << 30), f"--store={url}",
                          f"--turns={TURNS}")  # fmt: skip
    reached = writer.wait_for("PHASE", nth=rng.randint(2, TURNS // 2))
    leader = cluster.leader_of(stream)
    assert reached and leader, f"no turn or no leader to kill: {writer.stderr()}"
    cluster.kill(leader)
    TALLY.fault("leader-kill")
    code = writer.finish(timeout=600)
    writer.kill()  # its warm hosts
    ledger.take(writer.lines)
    assert code == 0, f"the writer did not ride out the election: {writer.stderr()}"
    cluster.restart(leader)
    assert cluster.wait_current(stream), "the restarted node never caught up"
    settle(home, effects, ledger, url)


@pytest.mark.torture
@pytest.mark.timeout(300 + 300 * ROUNDS)
def test_leader_killed_during_commits_of_turns(tmp_path: Path, nats_cluster: Any) -> None:
    rng = tally.rng("leader-kill")
    for index in range(ROUNDS):  # each round its own home or stream, so its own ledger
        ledger = Ledger()
        _round(tmp_path / f"r{index}", nats_cluster, ledger, rng)
        count_acked(ledger)
